//go:build integration

package controller

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

func TestStandaloneRedisServesWithItsPasswordAndDynamicConfig(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	op := startOperator(t, ns)
	ctx := context.Background()
	c := newClient(t)
	const password = "s3cret-standalone"
	kubelet := newFakeKubelet(t, c, builder.DefaultRedisPort)
	kubelet.standalone, kubelet.password = true, password

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-secret", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	secretName, secretKey := "redis-secret", "password"
	cr := &v1beta2.Redis{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns},
		Spec: v1beta2.RedisSpec{
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
				ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}},
			RedisConfig: &v1beta2.RedisConfig{DynamicConfig: []string{"maxmemory-policy allkeys-lru", "hz 20"}},
		},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	kubelet.runStatefulSet(ctx, ns, "cache")
	waitStandaloneReady(t, c, cr)
	wantSpecUnwritten(t, c, cr)

	for _, svc := range []string{"cache", "cache-headless", "cache-additional"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", svc, err)
		}
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("cache-0").addr(builder.DefaultRedisPort), Password: password})
	defer func() { _ = rdb.Close() }()
	got, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil || got["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("maxmemory-policy = %v (%v), want allkeys-lru set by CONFIG SET", got, err)
	}
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// A changed dynamic config is applied without restarting the pod.
	pid := kubelet.pod("cache-0").cmd.Process.Pid
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	cr.Spec.RedisConfig.DynamicConfig = []string{"maxmemory-policy volatile-lru", "hz 20"}
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "new maxmemory-policy", func() error {
		got, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil || got["maxmemory-policy"] != "volatile-lru" {
			return fmt.Errorf("maxmemory-policy = %v (%w)", got, err)
		}
		return nil
	})
	if kubelet.pod("cache-0").cmd.Process.Pid != pid {
		t.Error("the pod was restarted for a dynamic config change")
	}

	// The pod comes back with a new IP and its volume: the data is there.
	dir := kubelet.deletePod(ctx, ns, "cache-0", syscall.SIGTERM).dataDir
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &sts); err != nil {
		t.Fatal(err)
	}
	kubelet.startPod(ctx, &sts, 0, dir)
	waitStandaloneReady(t, c, cr)
	rdb2 := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("cache-0").addr(builder.DefaultRedisPort), Password: password})
	defer func() { _ = rdb2.Close() }()
	if v, err := rdb2.Get(ctx, "greeting").Result(); err != nil || v != "hello" {
		t.Errorf("GET greeting = %q, %v after the pod moved", v, err)
	}
	if op.redisWrites.Load() == 0 {
		t.Error("the operator sent no CONFIG SET")
	}
}

// runReadyStandalone creates a plain Redis 7.0 of that name, runs its pod on a fake kubelet,
// and returns once it is Ready.
func runReadyStandalone(ctx context.Context, t *testing.T, c client.Client, ns, name string) (*v1beta2.Redis, *fakeKubelet) {
	t.Helper()
	kubelet := newFakeKubelet(t, c, builder.DefaultRedisPort)
	kubelet.standalone = true
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	kubelet.runStatefulSet(ctx, ns, name)
	waitStandaloneReady(t, c, cr)
	return cr, kubelet
}

func waitStandaloneReady(t *testing.T, c client.Client, cr *v1beta2.Redis) {
	t.Helper()
	waitUntil(t, 30*time.Second, "Redis Ready", func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		if cr.Status.State == StandaloneStateReady && ready != nil && ready.Status == metav1.ConditionTrue &&
			ready.ObservedGeneration == cr.Generation && cr.Status.ReadyReplicas == 1 {
			return nil
		}
		return fmt.Errorf("state %q, conditions %s", cr.Status.State, describeConditions(cr.Status.Conditions))
	})
}

func TestStandaloneSkipReconcileCreatesNothing(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	cr := &v1beta2.Redis{
		ObjectMeta: metav1.ObjectMeta{Name: "hands-off", Namespace: ns, Annotations: map[string]string{SkipReconcileAnnotation: "true"}},
		Spec:       v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "skip condition", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		p := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionProgressing)
		if p != nil && p.Reason == status.ReasonSkipReconcile && p.Status == metav1.ConditionFalse {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})
	time.Sleep(time.Second)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hands-off"}, &appsv1.StatefulSet{}); err == nil {
		t.Fatal("a StatefulSet was created although reconciling is skipped")
	}
}
