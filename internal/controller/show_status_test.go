package controller

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/status"
)

type showStatusScope struct{ workloadScope }

// A phase that shows the status before a long step: users see the step while it runs, and the
// reconcile's final write starts from what was shown (no second write when nothing changed).
func TestShowStatusWritesTheStatusBeforeTheReconcileEnds(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cr := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", Generation: 2}}
	cr.Status.State, cr.Status.Reason = "Ready", status.ClusterReasonReady
	cr.Status.ObservedGeneration = 1
	cr.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionReady, Status: metav1.ConditionTrue, Reason: status.ReasonReady, ObservedGeneration: 1}}
	counting := &statusPatchCounter{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1beta2.RedisCluster{}).WithObjects(cr).
		WithInterceptorFuncs(counting.funcs()).Build()

	var seenDuringThePhase v1beta2.RedisCluster
	shell := kindShell[*v1beta2.RedisCluster, *showStatusScope]{
		newObject: func() *v1beta2.RedisCluster { return &v1beta2.RedisCluster{} },
		newScope:  func(_ *v1beta2.RedisCluster, b workloadScope) *showStatusScope { return &showStatusScope{b} },
		phases: []reconcile.Phase[*showStatusScope]{{Name: "long", Run: func(ctx context.Context, s *showStatusScope) (bool, error) {
			s.Conditions.Progressing(status.ReasonResharding, "moving 5461 slots")
			if err := s.ShowStatus(ctx); err != nil {
				return false, err
			}
			if err := c.Get(ctx, ctrl.ObjectKeyFromObject(cr), &seenDuringThePhase); err != nil {
				return false, err
			}
			return true, nil
		}}},
		memory: NewMemory(),
	}
	if _, err := shell.reconcile(ctx, c, ctrlruntime.Request{NamespacedName: ctrl.ObjectKeyFromObject(cr)}); err != nil {
		t.Fatal(err)
	}
	if got := seenDuringThePhase.Status; got.State != status.ClusterStateBootstrap || got.ObservedGeneration != 1 {
		t.Fatalf("during the phase the status said state %q observedGeneration %d, want %q and 1 (not every phase ran yet)",
			got.State, got.ObservedGeneration, status.ClusterStateBootstrap)
	}
	progressing := meta.FindStatusCondition(seenDuringThePhase.Status.Conditions, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Reason != status.ReasonResharding || progressing.ObservedGeneration != 1 {
		t.Fatalf("during the phase Progressing was %+v, want reason %s at generation 1", progressing, status.ReasonResharding)
	}
	var after v1beta2.RedisCluster
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(cr), &after); err != nil {
		t.Fatal(err)
	}
	if after.Status.ObservedGeneration != 2 {
		t.Fatalf("after the reconcile observedGeneration is %d, want 2", after.Status.ObservedGeneration)
	}
	if counting.patches != 2 {
		t.Fatalf("%d status patches, want 2 (shown, then the generation settled)", counting.patches)
	}
}

// statusPatchCounter counts the status patches sent through a fake client.
type statusPatchCounter struct{ patches int }

func (p *statusPatchCounter) funcs() interceptor.Funcs {
	return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c ctrl.Client, subResource string, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
		p.patches++
		return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
	}}
}
