package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

const decoratedRedis = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: decorated
spec:
  kubernetesConfig:
    image: redis:7.0.15
    service:
      annotations:
        example.com/load-balancer: internal
  nodeSelector:
    kubernetes.io/os: linux
  tolerations:
    - key: dedicated
      operator: Equal
      value: redis
      effect: NoSchedule
  env:
    - name: DECORATION
      value: "on"
`

// A user removes a nodeSelector, a toleration, an env var and a Service annotation from a
// running Redis with a JSON patch: the StatefulSet and the Service lose them, an annotation
// someone else put on the Service stays, and the Redis is Ready again.
func TestRemovedSpecFieldsLeaveTheObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "apply")
	sb.Apply(t, ns, decoratedRedis)
	waitStandaloneReady(t, ns, "decorated", 1)

	sts := &appsv1.StatefulSet{}
	svc := &corev1.Service{}
	get := func(ctx context.Context) error {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "decorated"}, sts); err != nil {
			return err
		}
		return sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "decorated"}, svc)
	}
	if err := get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := decorations(sts, svc, true); err != nil {
		t.Fatalf("before the patch: %v", err)
	}
	foreign := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"team.example.com/owner":"payments"}}}`))
	if err := sb.Client.Patch(ctx, svc, foreign, client.FieldOwner("kubectl-annotate")); err != nil {
		t.Fatal(err)
	}

	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "decorated"}}
	remove := client.RawPatch(types.JSONPatchType, []byte(`[
		{"op": "remove", "path": "/spec/nodeSelector"},
		{"op": "remove", "path": "/spec/tolerations"},
		{"op": "remove", "path": "/spec/env"},
		{"op": "remove", "path": "/spec/kubernetesConfig/service/annotations"}
	]`))
	if err := sb.Client.Patch(ctx, cr, remove); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the removed fields gone from the StatefulSet and the Service", time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := get(ctx); err != nil {
			return false, "", err
		}
		if err := decorations(sts, svc, false); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	if svc.Annotations["team.example.com/owner"] != "payments" {
		t.Errorf("the annotation someone else set on the Service is gone: %v", svc.Annotations)
	}
	waitStandaloneReady(t, ns, "decorated", 2)
}

// decorations checks that the StatefulSet and Service carry every decoration (or none).
func decorations(sts *appsv1.StatefulSet, svc *corev1.Service, want bool) error {
	pod := sts.Spec.Template.Spec
	if _, has := pod.NodeSelector["kubernetes.io/os"]; has != want {
		return fmt.Errorf("StatefulSet nodeSelector %v", pod.NodeSelector)
	}
	if has := slices.ContainsFunc(pod.Tolerations, func(t corev1.Toleration) bool { return t.Key == "dedicated" }); has != want {
		return fmt.Errorf("StatefulSet tolerations %v", pod.Tolerations)
	}
	for _, c := range pod.Containers {
		if has := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "DECORATION" }); has != want && c.Name != "redis-exporter" {
			return fmt.Errorf("container %s env %v", c.Name, c.Env)
		}
	}
	if _, has := svc.Annotations["example.com/load-balancer"]; has != want {
		return fmt.Errorf("Service annotations %v", svc.Annotations)
	}
	return nil
}

// waitStandaloneReady waits for a Redis to be Ready for its generation (at least minGeneration).
func waitStandaloneReady(t *testing.T, ns, name string, minGeneration int64) {
	t.Helper()
	sb.WaitFor(t, ns, "Redis "+name+" Ready", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.Redis{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		seen := fmt.Sprintf("generation %d observed %d state %s ready %+v", cr.Generation, cr.Status.ObservedGeneration, cr.Status.State, ready)
		return cr.Generation >= minGeneration && cr.Status.ObservedGeneration == cr.Generation && cr.Status.State == "Ready" &&
			ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cr.Generation, seen, nil
	})
}

// sentinelWatched is a RedisReplication of three pods and the sentinels that watch it, as a
// test waits for them to be Ready.
type sentinelWatched struct {
	ns, name string
	// sentinel is the RedisSentinel that watches the replication, to be Ready too; "" for the
	// replication's own sentinels (spec.sentinel).
	sentinel string
	// cr is where the replication is read into: it holds the status of the last look.
	cr      *v1beta2.RedisReplication
	timeout time.Duration
	// sinceOnSentinel makes waitReady's since apply to the RedisSentinel's Ready rather than to
	// the replication's: a change to the sentinels alone need not turn the replication's over.
	sinceOnSentinel bool
}

// waitReady waits until the replication is Ready with its three pods ready and the
// RedisSentinel, if any, Ready too. A Ready that last turned true before since (to the second)
// does not count; the zero time counts any.
func (w sentinelWatched) waitReady(t *testing.T, why string, since time.Time) {
	t.Helper()
	turned := func(c *metav1.Condition) bool { return !c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) }
	sb.WaitFor(t, w.ns, "replication and sentinels Ready "+why, w.timeout, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, w.cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(w.cr.Status.Conditions, v1beta2.ConditionReady)
		ok := ready != nil && ready.Status == metav1.ConditionTrue && (w.sinceOnSentinel || turned(ready)) && w.cr.Status.ReadyReplicas == 3
		message := fmt.Sprintf("replication %v", ready)
		if w.sentinel != "" {
			sn := &v1beta2.RedisSentinel{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.sentinel}, sn); err != nil {
				return false, "", err
			}
			snReady := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
			ok = ok && snReady != nil && snReady.Status == metav1.ConditionTrue && (!w.sinceOnSentinel || turned(snReady))
			message += fmt.Sprintf("; sentinels %v", snReady)
		}
		return ok, message, nil
	})
}

// A Redis whose image is empty is admitted by the schema but cannot be built: it is deleted
// as soon as it is asked to be, like any other.
func TestUnbuildableRedisIsDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "unbuildable")
	sb.Apply(t, ns, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: no-image
spec:
  kubernetesConfig:
    image: ""
`)
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-image"}}
	sb.WaitFor(t, ns, "the refusal on the Redis", time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return false, "", err
		}
		degraded := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		return len(cr.Finalizers) > 0 && degraded != nil && degraded.Status == metav1.ConditionTrue, fmt.Sprintf("finalizers %v degraded %+v", cr.Finalizers, degraded), nil
	})
	if err := sb.Client.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the Redis gone", time.Minute, func(ctx context.Context) (bool, string, error) {
		err := sb.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("finalizers %v", cr.Finalizers), err
	})
}
