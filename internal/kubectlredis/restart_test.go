package kubectlredis

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

var restartClock = time.Date(2026, 12, 6, 9, 0, 0, 123, time.UTC)

// clockConnector is fakeConnector with a fixed clock.
func clockConnector(c client.Client, kube *kubefake.Clientset, now time.Time) Connector {
	return func(_ invocation, out io.Writer) (Plugin, error) {
		return Plugin{Client: c, Kube: kube, Namespace: "shop", Out: out, Now: func() time.Time { return now }}, nil
	}
}

// TestRestartAnnotatesOnly: restart NAME sends one merge patch that sets the restarted-at
// annotation to the time, in RFC 3339, and nothing else of the resource (its spec is never
// written); a second request within the same second still changes the value, so that it rolls
// the pods again.
func TestRestartAnnotatesOnly(t *testing.T) {
	cluster := &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", map[string]string{"team": "payments"})}
	cluster.Spec.Size = ptr(int32(3))
	var patches []string
	base := fakeClient(t, cluster)
	c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			patches = append(patches, string(patch.Type())+" "+string(data))
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			t.Error("restart updated the whole object")
			return nil
		},
	})
	var out strings.Builder
	if err := RunWith(t.Context(), []string{"restart", "cart"}, &out, clockConnector(c, nil, restartClock)); err != nil {
		t.Fatal(err)
	}
	if want := "RedisCluster cart: rolling restart requested (restarted-at 2026-12-06T09:00:00Z)\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("output %q, want it to start with %q", out.String(), want)
	}
	if !strings.Contains(out.String(), "then each master once a replica in sync has taken its shard over") {
		t.Errorf("output does not say how the operator restarts a cluster: %q", out.String())
	}
	want := `application/merge-patch+json {"metadata":{"annotations":{"redis.opstreelabs.in/restarted-at":"2026-12-06T09:00:00Z"}}}`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q, want [%q]", patches, want)
	}
	got := &v1beta2.RedisCluster{}
	if err := base.Get(t.Context(), client.ObjectKeyFromObject(cluster), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Annotations; len(a) != 2 || a["team"] != "payments" || a[RestartAnnotation] != "2026-12-06T09:00:00Z" || *got.Spec.Size != 3 {
		t.Errorf("annotations %v, size %d", a, *got.Spec.Size)
	}

	out.Reset()
	if err := RunWith(t.Context(), []string{"restart", "cart"}, &out, clockConnector(c, nil, restartClock.Add(300*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "restarted-at 2026-12-06T09:00:01Z") {
		t.Errorf("a second request within the second: %q", out.String())
	}
}

// TestRestartWarnsWhenPaused: a paused resource is annotated, and the output says nothing
// restarts until it is resumed.
func TestRestartWarnsWhenPaused(t *testing.T) {
	repl := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions",
		map[string]string{builder.AnnotationSkipReconcileReplication: "true"})}
	var out strings.Builder
	if err := RunWith(t.Context(), []string{"restart", "sessions"}, &out, clockConnector(fakeClient(t, repl), nil, restartClock)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "WARNING: sessions is paused") || !strings.Contains(out.String(), "kubectl redis resume sessions") {
		t.Errorf("output %q", out.String())
	}
}

func restartPod(name, instance, setup, role string) *corev1.Pod {
	labels := map[string]string{builder.LabelInstance: instance, builder.LabelSetupType: setup}
	if role != "" {
		labels[builder.LabelRedisRole] = role
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: k8stypes.UID("uid-" + name), Labels: labels}}
}

// TestRestartPod: restart NAME POD deletes the pod and says which role it had and what the
// operator does about it; a pod of another resource, or of another kind of the same name, is
// refused and left alone.
func TestRestartPod(t *testing.T) {
	cluster := &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)}
	repl := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)}
	watched := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "watched", nil)}
	watched.Spec.Sentinel = &v1beta2.Sentinel{Size: 3}
	standalone := &v1beta2.Redis{ObjectMeta: objectMeta("shop", "cache", nil)}
	for _, tc := range []struct {
		args      []string
		pod       *corev1.Pod
		want      string // in the output, or in the error when refused
		refused   bool
		unchanged bool
	}{
		{[]string{"cart", "cart-leader-0"}, restartPod("cart-leader-0", "cart", builder.SetupCluster, "master"),
			"RedisCluster cart: pod cart-leader-0 (master) deleted; it was a master: the operator hands its shard over to a replica in sync (CLUSTER FAILOVER) before it stops", false, false},
		{[]string{"cart", "cart-follower-1"}, restartPod("cart-follower-1", "cart", builder.SetupCluster, "slave"),
			"pod cart-follower-1 (slave) deleted; the StatefulSet recreates it and it resyncs from its master", false, false},
		{[]string{"sessions", "sessions-0"}, restartPod("sessions-0", "sessions", builder.SetupReplication, "master"),
			"RedisReplication sessions: pod sessions-0 (master) deleted; it was the master: the operator hands its role over to a replica in sync (FAILOVER TO)", false, false},
		{[]string{"watched", "watched-0"}, restartPod("watched-0", "watched", builder.SetupReplication, "master"),
			"it was the master: the sentinels fail it over", false, false},
		{[]string{"watched", "watched-s-0"}, restartPod("watched-s-0", "watched", builder.SetupSentinel, ""),
			"pod watched-s-0 (sentinel) deleted; the StatefulSet recreates it; the other sentinels keep watching", false, false},
		{[]string{"cache", "cache-0"}, restartPod("cache-0", "cache", builder.SetupStandalone, ""),
			"Redis cache: pod cache-0 (-) deleted; the StatefulSet recreates it; Redis is unavailable until it is back", false, false},
		{[]string{"cart", "cart-0", "--kind", "rediscluster"}, restartPod("cart-0", "cart", builder.SetupStandalone, ""),
			`pod cart-0 is not a pod of RedisCluster cart: it belongs to "cart" (redis_setup_type=standalone)`, true, true},
		{[]string{"cart", "sessions-1"}, restartPod("sessions-1", "sessions", builder.SetupReplication, "slave"),
			`pod sessions-1 is not a pod of RedisCluster cart: it belongs to "sessions" (redis_setup_type=replication)`, true, true},
		{[]string{"cart", "web-0"}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", Labels: map[string]string{"app": "web"}}},
			"pod web-0 is not a pod of RedisCluster cart: it belongs to no Redis resource", true, true},
		{[]string{"cart", "missing-0"}, nil, `no pod "missing-0" in namespace "shop"`, true, false},
	} {
		t.Run(strings.Join(tc.args, "/"), func(t *testing.T) {
			var objs []runtime.Object
			if tc.pod != nil {
				objs = append(objs, tc.pod)
			}
			kube := kubefake.NewClientset(objs...)
			c := fakeClient(t, cluster.DeepCopy(), repl.DeepCopy(), watched.DeepCopy(), standalone.DeepCopy())
			args := append([]string{"restart"}, tc.args...)
			var out strings.Builder
			err := RunWith(t.Context(), args, &out, clockConnector(c, kube, restartClock))
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
			} else if err != nil || !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q, error %v; want %q", out.String(), err, tc.want)
			}
			if tc.pod == nil {
				return
			}
			_, err = kube.CoreV1().Pods("shop").Get(t.Context(), tc.pod.Name, metav1.GetOptions{})
			if tc.unchanged && err != nil {
				t.Errorf("a refused pod was deleted: %v", err)
			}
			if !tc.unchanged && !apierrors.IsNotFound(err) {
				t.Errorf("pod not deleted: %v", err)
			}
		})
	}
}

// TestRestartPatchIsTheAnnotationAlone: the patch's only key path is the annotation.
func TestRestartPatchIsTheAnnotationAlone(t *testing.T) {
	data, err := restartPatch("2026-12-06T09:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]map[string]string
	if err := json.Unmarshal(data, &m); err != nil || len(m) != 1 || len(m["metadata"]) != 1 || len(m["metadata"]["annotations"]) != 1 {
		t.Errorf("patch %s: %v", data, err)
	}
}

func ptr[T any](v T) *T { return &v }
