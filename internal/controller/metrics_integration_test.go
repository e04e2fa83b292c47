//go:build integration

package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// compatSample is the value the operator's /metrics registry holds for one of the replaced
// operator's metrics of the resource (labels namespace and instance), false when it has no
// such series.
func compatSample(t *testing.T, name string, obj client.Object) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 || labels["namespace"] != obj.GetNamespace() || labels["instance"] != obj.GetName() {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// registrySample is the value the operator's /metrics registry holds for the series of the
// metric with exactly these labels, false when it has none.
func registrySample(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if !maps.Equal(labels, got) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// waitSamples waits for each series (metric name and labels) to hold its value; a value of
// nil wants no such series.
func waitSamples(t *testing.T, what string, want []wantSample) {
	t.Helper()
	waitUntil(t, 30*time.Second, what, func() error {
		for _, w := range want {
			got, ok := registrySample(t, w.name, w.labels)
			switch {
			case w.value == nil && ok:
				return fmt.Errorf("%s%v = %v, want no series", w.name, w.labels, got)
			case w.value != nil && !ok:
				return fmt.Errorf("no series %s%v", w.name, w.labels)
			case w.value != nil && got != *w.value:
				return fmt.Errorf("%s%v = %v, want %v", w.name, w.labels, got, *w.value)
			}
		}
		return nil
	})
}

type wantSample struct {
	name   string
	labels map[string]string
	value  *float64 // nil: no series
}

func sampleOf(name string, labels map[string]string, value float64) wantSample {
	return wantSample{name: name, labels: labels, value: &value}
}

func noSample(name string, labels map[string]string) wantSample {
	return wantSample{name: name, labels: labels}
}

// waitCompat waits for each of the replaced operator's metrics of the resource to hold its
// value (the operator records them right after it writes the status the test may have seen).
func waitCompat(t *testing.T, obj client.Object, want map[string]float64) {
	t.Helper()
	// The gauges are what the last reconcile saw: a replica link that came up after it is
	// counted by the next one, at the latest the periodic re-read of a Ready resource (30 s).
	waitUntil(t, 45*time.Second, fmt.Sprintf("metrics %v of %s/%s", want, obj.GetNamespace(), obj.GetName()), func() error {
		for name, value := range want {
			got, ok := compatSample(t, name, obj)
			if !ok {
				return fmt.Errorf("no series %s", name)
			}
			if got != value {
				return fmt.Errorf("%s = %v, want %v", name, got, value)
			}
		}
		return nil
	})
}

// The replaced operator's metrics of resources left alone (skip-reconcile) say so, with the
// pods their specs ask for, and every series goes with its resource.
func TestCompatibleMetricsOfSkippedResourcesGoWithThem(t *testing.T) {
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	size, leaders, followers := int32(3), int32(3), int32(3)
	replication := &v1beta2.RedisReplication{
		ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: ns, Annotations: map[string]string{SkipReconcileReplicationAnnotation: "true"}},
		Spec:       v1beta2.RedisReplicationSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}},
	}
	cluster := &v1beta2.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: ns, Annotations: map[string]string{SkipReconcileClusterAnnotation: "true"}},
		Spec:       v1beta2.RedisClusterSpec{Size: &leaders, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}},
	}
	cluster.Spec.RedisFollower.Replicas = &followers
	for _, obj := range []client.Object{replication, cluster} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitCompat(t, replication, map[string]float64{
		"redisreplication_skipreconcile":             1,
		"redisreplication_replicas_size_desired":     3,
		"redisreplication_replicas_size_mismatch":    0,
		"redisreplication_master_role_changes_total": 0,
	})
	waitCompat(t, cluster, map[string]float64{
		"rediscluster_skipreconcile":           1,
		"rediscluster_healthy":                 0,
		"rediscluster_replicas_size_desired":   6,
		"rediscluster_rebalance_total":         0,
		"rediscluster_reshard_total":           0,
		"rediscluster_remove_follower_attempt": 0,
		"rediscluster_adding_node_attempt":     0,
	})
	for _, obj := range []client.Object{replication, cluster} {
		if err := c.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, obj := range []client.Object{replication, cluster} {
		waitUntil(t, 10*time.Second, "the series of the deleted resources gone", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %w", err)
			}
			for _, name := range []string{"redisreplication_skipreconcile", "redisreplication_replicas_size_desired",
				"redisreplication_replicas_size_mismatch", "rediscluster_skipreconcile", "rediscluster_healthy",
				"rediscluster_replicas_size_desired", "rediscluster_rebalance_total"} {
				if _, ok := compatSample(t, name, obj); ok {
					return fmt.Errorf("%s is left", name)
				}
			}
			return nil
		})
	}
}
