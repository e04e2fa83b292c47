package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// The phases the kinds share read the resource only through the workloadSpec its kind gave:
// the same phase resolves each kind's password Secret, stops on a missing one with the
// condition that says so, and honours each kind's skip annotation.
func TestSharedPhasesReadWhatEachKindGives(t *testing.T) {
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "ns"}, Data: map[string][]byte{"pw": []byte("s3cret")}}
	ref := &v1beta2.ExistingPasswordSecret{Name: ptr.To("auth"), Key: ptr.To("pw")}
	missing := &v1beta2.ExistingPasswordSecret{Name: ptr.To("gone"), Key: ptr.To("pw")}
	objectMeta := metav1.ObjectMeta{Name: "r", Namespace: "ns"}
	kinds := []struct {
		owner      statusHolder
		annotation string
	}{
		{&v1beta2.Redis{ObjectMeta: objectMeta}, SkipReconcileAnnotation},
		{&v1beta2.RedisCluster{ObjectMeta: objectMeta}, SkipReconcileClusterAnnotation},
		{&v1beta2.RedisReplication{ObjectMeta: objectMeta}, SkipReconcileReplicationAnnotation},
		{&v1beta2.RedisSentinel{ObjectMeta: objectMeta}, SkipReconcileSentinelAnnotation},
	}
	for _, k := range kinds {
		t.Run(kindName(k.owner), func(t *testing.T) {
			d := &Dependencies{Client: fake.NewClientBuilder().WithObjects(secret.DeepCopy()).Build(), Recorder: events.NewFakeRecorder(10)}
			scope := func(owner statusHolder, passwordSecret *v1beta2.ExistingPasswordSecret) *workloadScope {
				w := &workloadScope{memory: NewMemory(), spec: workloadSpec{owner: owner, kind: kindName(owner), skipAnnotation: k.annotation,
					skipWhat: kindName(owner), passwordSecret: passwordSecret, port: 6379}}
				w.Conditions = status.NewConditions(&owner.GetCommonStatus().Conditions, 1)
				return w
			}

			w := scope(k.owner.DeepCopyObject().(statusHolder), ref)
			if stop, err := d.resolvePassword(ctx, w); stop || err != nil {
				t.Fatalf("password phase stopped (%v) or failed: %v", stop, err)
			}
			if w.password != "s3cret" {
				t.Errorf("password %q, want the Secret's key pw", w.password)
			}
			if got := w.endpointOf("10.0.0.1"); got.Host != "10.0.0.1" || got.Port != 6379 || got.Auth != (redis.Auth{Password: "s3cret"}) {
				t.Errorf("endpoint %+v: want the pod's host, the kind's port and the password resolved", got)
			}

			owner := k.owner.DeepCopyObject().(statusHolder)
			w = scope(owner, missing)
			if stop, err := d.resolvePassword(ctx, w); !stop || err != nil {
				t.Fatalf("a missing password Secret must stop the reconcile without an error, got stop=%v err=%v", stop, err)
			}
			if c := meta.FindStatusCondition(owner.GetCommonStatus().Conditions, v1beta2.ConditionDegraded); c == nil || c.Reason != status.ReasonSecretMissing {
				t.Errorf("Degraded condition %+v, want reason %s", c, status.ReasonSecretMissing)
			}

			owner = k.owner.DeepCopyObject().(statusHolder)
			owner.SetAnnotations(map[string]string{k.annotation: "true"})
			if stop, _ := d.skipIfAnnotated(ctx, scope(owner, ref)); !stop {
				t.Errorf("annotation %s=true must stop the later phases", k.annotation)
			}
			owner.SetAnnotations(map[string]string{SkipReconcileAnnotation + "-other": "true"})
			if stop, _ := d.skipIfAnnotated(ctx, scope(owner, ref)); stop {
				t.Errorf("an unrelated annotation stopped the phases")
			}
		})
	}
}
