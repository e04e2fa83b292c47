//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// extras are the optional parts of a spec that a user adds and later removes.
type extras struct {
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
	env          []corev1.EnvVar
	limits       corev1.ResourceList
	sidecars     []v1beta2.Sidecar
	annotations  map[string]string
	pdb          bool
}

func fullExtras() extras {
	return extras{
		nodeSelector: map[string]string{"disk": "ssd", "zone": "a"},
		tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "redis", Effect: corev1.TaintEffectNoSchedule}},
		env:          []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
		limits:       corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		sidecars:     []v1beta2.Sidecar{{Name: "helper", Image: "busybox:1"}},
		annotations:  map[string]string{"example.com/lb": "internal"},
		pdb:          true,
	}
}

// reducedExtras is what is left after the user removed all but one nodeSelector key.
func reducedExtras() extras {
	return extras{nodeSelector: map[string]string{"disk": "ssd"}}
}

// applyCase is one kind: how to build it with extras, and which objects carry them.
type applyCase struct {
	kind        string
	build       func(ns string, e extras) client.Object
	statefulSet string
	service     string
	pdb         string // "" when the kind has no budget
	// setup makes what the kind needs before it applies its objects.
	setup func(t *testing.T, ctx context.Context, c client.Client, ns string)
}

func kubernetesConfig(e extras) v1beta2.KubernetesConfig {
	kc := v1beta2.KubernetesConfig{Image: "redis:7.0.15"}
	if e.limits != nil {
		kc.Resources = &corev1.ResourceRequirements{Limits: e.limits}
	}
	if e.annotations != nil {
		kc.Service = &v1beta2.ServiceConfig{ServiceAnnotations: e.annotations}
	}
	return kc
}

func optional[T any](list []T) *[]T {
	if list == nil {
		return nil
	}
	return &list
}

func budget(e extras) *v1beta2.RedisPodDisruptionBudget {
	if !e.pdb {
		return nil
	}
	one := int32(1)
	return &v1beta2.RedisPodDisruptionBudget{Enabled: true, MinAvailable: &one}
}

func applyCases() []applyCase {
	size := int32(3)
	return []applyCase{
		{kind: "Redis", statefulSet: "sa", service: "sa",
			build: func(ns string, e extras) client.Object {
				return &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: ns}, Spec: v1beta2.RedisSpec{
					KubernetesConfig: kubernetesConfig(e), NodeSelector: e.nodeSelector, Tolerations: optional(e.tolerations),
					EnvVars: optional(e.env), Sidecars: optional(e.sidecars)}}
			}},
		{kind: "RedisCluster", statefulSet: "rc-leader", service: "rc-leader", pdb: "rc-leader",
			build: func(ns string, e extras) client.Object {
				role := v1beta2.RedisClusterRole{NodeSelector: e.nodeSelector, Tolerations: optional(e.tolerations), PodDisruptionBudget: budget(e)}
				return &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: ns}, Spec: v1beta2.RedisClusterSpec{
					Size: &size, KubernetesConfig: kubernetesConfig(e), EnvVars: optional(e.env), Sidecars: optional(e.sidecars),
					RedisLeader: v1beta2.RedisLeader{RedisClusterRole: role}, RedisFollower: v1beta2.RedisFollower{RedisClusterRole: role}}}
			}},
		{kind: "RedisReplication", statefulSet: "rr", service: "rr", pdb: "rr",
			build: func(ns string, e extras) client.Object {
				return &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: ns}, Spec: v1beta2.RedisReplicationSpec{
					Size: &size, KubernetesConfig: kubernetesConfig(e), NodeSelector: e.nodeSelector, Tolerations: optional(e.tolerations),
					EnvVars: optional(e.env), Sidecars: optional(e.sidecars), PodDisruptionBudget: budget(e)}}
			}},
		{kind: "RedisSentinel", statefulSet: "sn-sentinel", service: "sn-sentinel", pdb: "sn-sentinel",
			build: func(ns string, e extras) client.Object {
				return &v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Name: "sn", Namespace: ns}, Spec: v1beta2.RedisSentinelSpec{
					Size: &size, KubernetesConfig: kubernetesConfig(e), NodeSelector: e.nodeSelector, Tolerations: optional(e.tolerations),
					EnvVars: optional(e.env), Sidecars: optional(e.sidecars), PodDisruptionBudget: budget(e),
					RedisSentinelConfig: &v1beta2.RedisSentinelConfig{RedisReplicationName: "monitored"}}}
			},
			setup: monitoredReplication},
	}
}

// monitoredReplication makes a RedisReplication the operator leaves alone, with a master pod
// that has an address, for sentinels to monitor.
func monitoredReplication(t *testing.T, ctx context.Context, c client.Client, ns string) {
	t.Helper()
	size := int32(1)
	rr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "monitored", Namespace: ns,
		Annotations: map[string]string{SkipReconcileReplicationAnnotation: "true"}},
		Spec: v1beta2.RedisReplicationSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}}}
	if err := c.Create(ctx, rr); err != nil {
		t.Fatal(err)
	}
	rr.Status.MasterNode = "monitored-0"
	if err := c.Status().Update(ctx, rr); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "monitored-0", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis:7.0.15"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = "127.0.0.1"
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// TestRemovedFieldsLeaveTheObjects adds, then removes, a nodeSelector key, a toleration, an
// env var, a resource limit, a sidecar, a Service annotation and the PDB of each kind: each
// removal reaches the objects (server-side apply), an annotation another manager put on the
// Service stays, and a reconcile after that writes nothing.
func TestRemovedFieldsLeaveTheObjects(t *testing.T) {
	t.Parallel()
	for _, tc := range applyCases() {
		t.Run(tc.kind, func(t *testing.T) {
			ns, op, c := operatorInNamespace(t)
			ctx := context.Background()
			if tc.setup != nil {
				tc.setup(t, ctx, c, ns)
			}
			cr := tc.build(ns, fullExtras())
			if err := c.Create(ctx, cr); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 20*time.Second, "objects with every extra", func() error {
				return checkExtras(ctx, c, tc, ns, fullExtras())
			})

			// Someone else annotates the Service: server-side apply keeps what it does not own.
			foreign := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"other.example.com/owner":"team-a"}}}`))
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: tc.service, Namespace: ns}}
			if err := c.Patch(ctx, svc, foreign, client.FieldOwner("someone-else")); err != nil {
				t.Fatal(err)
			}

			// The user removes every extra but one nodeSelector key: the spec replaced without them.
			patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec", "value": specOf(t, tc.build(ns, reducedExtras()))}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Patch(ctx, cr, client.RawPatch(types.JSONPatchType, patch)); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 20*time.Second, "objects without the extras", func() error {
				return checkExtras(ctx, c, tc, ns, reducedExtras())
			})
			if err := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
				t.Fatal(err)
			}
			if svc.Annotations["other.example.com/owner"] != "team-a" {
				t.Errorf("the annotation someone else set on Service %s is gone: %v", svc.Name, svc.Annotations)
			}

			// Once settled, a reconcile (brought by a change to the resource's metadata) writes nothing.
			time.Sleep(2 * time.Second)
			settled := op.apiWrites.Load()
			touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/touch":"1"}}}`))
			if err := c.Patch(ctx, cr, touch); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			if writes := op.writesSince(settled); len(writes) > 0 {
				t.Errorf("a reconcile with nothing to change wrote: %v", writes)
			}
		})
	}
}

// specOf is the JSON spec of a resource.
func specOf(t *testing.T, obj client.Object) any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m["spec"]
}

// checkExtras compares the owned objects with what e asks for: present when set, absent when not.
func checkExtras(ctx context.Context, c client.Client, tc applyCase, ns string, e extras) error {
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.statefulSet}, &sts); err != nil {
		return err
	}
	pod := sts.Spec.Template.Spec
	if len(e.nodeSelector) != len(pod.NodeSelector) {
		return fmt.Errorf("nodeSelector %v, want %v", pod.NodeSelector, e.nodeSelector)
	}
	for k, v := range e.nodeSelector {
		if pod.NodeSelector[k] != v {
			return fmt.Errorf("nodeSelector %v, want %v", pod.NodeSelector, e.nodeSelector)
		}
	}
	if len(pod.Tolerations) != len(e.tolerations) {
		return fmt.Errorf("tolerations %v, want %v", pod.Tolerations, e.tolerations)
	}
	main := pod.Containers[0]
	hasEnv := slices.ContainsFunc(main.Env, func(v corev1.EnvVar) bool { return v.Name == "EXTRA" })
	if hasEnv != (e.env != nil) {
		return fmt.Errorf("container %s env %v, want EXTRA: %v", main.Name, main.Env, e.env != nil)
	}
	if _, has := main.Resources.Limits[corev1.ResourceMemory]; has != (e.limits != nil) {
		return fmt.Errorf("container %s limits %v, want memory limit: %v", main.Name, main.Resources.Limits, e.limits != nil)
	}
	hasSidecar := slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "helper" })
	if hasSidecar != (e.sidecars != nil) {
		return fmt.Errorf("containers %v, want sidecar: %v", containerNames(pod.Containers), e.sidecars != nil)
	}
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.service}, &svc); err != nil {
		return err
	}
	if _, has := svc.Annotations["example.com/lb"]; has != (e.annotations != nil) {
		return fmt.Errorf("Service %s annotations %v, want example.com/lb: %v", svc.Name, svc.Annotations, e.annotations != nil)
	}
	if tc.pdb != "" {
		var pdb policyv1.PodDisruptionBudget
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.pdb}, &pdb)
		switch {
		case err == nil && pdb.DeletionTimestamp == nil && !e.pdb:
			return fmt.Errorf("PodDisruptionBudget %s still there", tc.pdb)
		case apierrors.IsNotFound(err) && e.pdb:
			return fmt.Errorf("no PodDisruptionBudget %s", tc.pdb)
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
	}
	return nil
}

func containerNames(containers []corev1.Container) string {
	names := make([]string, len(containers))
	for i, c := range containers {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}
