package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/status"
)

// workloadScope is what every kind's scope carries in the controllers: reconcile.Scope and
// what the features the kinds share keep there.
type workloadScope struct {
	reconcile.Scope
	// memory is the reconciler's Memory.
	memory *Memory
	// spec is what the shared phases read of the resource (workload_phases.go), resolved
	// what they found.
	spec workloadSpec
	resolved
}

func (w *workloadScope) workload() *workloadScope { return w }

// workloadScoped is a kind's scope, which embeds a workloadScope.
type workloadScoped interface {
	reconcile.Scoped
	workload() *workloadScope
}

// statusHolder is what the controllers read and write of every kind's status, through
// accessors of the API types (see v1beta2.CommonStatus) rather than by reflection.
type statusHolder interface {
	client.Object
	GetCommonStatus() *v1beta2.CommonStatus
	CompatibleState() (state, reason *string)
}

// kindObject is a kind's resource type T, as the reconcile.Shell takes it, with the
// compatible state the controllers derive.
type kindObject[T any] interface {
	reconcile.Object[T]
	CompatibleState() (state, reason *string)
}

// The four kinds give the shell what it writes; a kind without it does not compile.
var (
	_ kindObject[*v1beta2.Redis]            = (*v1beta2.Redis)(nil)
	_ kindObject[*v1beta2.RedisCluster]     = (*v1beta2.RedisCluster)(nil)
	_ kindObject[*v1beta2.RedisReplication] = (*v1beta2.RedisReplication)(nil)
	_ kindObject[*v1beta2.RedisSentinel]    = (*v1beta2.RedisSentinel)(nil)
)

// kindShell is the Reconcile of every kind: a reconcile.Shell with the hooks the kinds share
// (the Memory, liveness, metrics, the ACL report and the compatible state) around what each
// kind gives here.
type kindShell[T kindObject[T], S workloadScoped] struct {
	// newObject returns an empty resource of the kind, for the one read into it.
	newObject func() T
	newScope  func(T, workloadScope) S
	phases    []reconcile.Phase[S]
	// liveness stops PINGing the pods of a resource that is deleted or gone.
	liveness *liveness.Watcher
	// finish, when set, runs after the phases, whichever stopped them, before the status is
	// written: what must hold of every reconcile's status.
	finish func(context.Context, S)
	// stage, when set, is which pods a RedisCluster on its way waits for (see status.StateFacts).
	stage func(S) string
	// memory is the reconciler's Memory, which the phases reach through workloadScope.
	memory *Memory
}

func (k kindShell[T, S]) reconcile(ctx context.Context, c client.Client, req ctrl.Request) (ctrl.Result, error) {
	kind := kindName(k.newObject())
	if err := requireMemory(k.memory, kind+" reconciler"); err != nil {
		return ctrl.Result{}, err // SetupWithManager refuses it: only a hand-made reconciler gets here
	}
	return reconcile.Shell[T, S]{
		Client:    c,
		Kind:      kind,
		Finalizer: Finalizer,
		NewObject: k.newObject,
		NewScope: func(obj T, base reconcile.Scope) S {
			base.Conditions = base.Conditions.RememberingReady(obj.GetUID(), readyMemory{k.memory.warned})
			return k.newScope(obj, workloadScope{Scope: base, memory: k.memory})
		},
		Phases:   k.phases,
		Failures: reconcileErrors,
		OnGone: func(_ context.Context, key types.NamespacedName) {
			forgetResource(k.memory, kind, key.Namespace, key.Name)
			k.liveness.Forget(liveness.Owner{Kind: kind, NamespacedName: key})
		},
		OnDeleting: func(_ context.Context, obj T) { k.liveness.Forget(livenessOwner(obj)) },
		Finish: func(ctx context.Context, s S) {
			if k.finish != nil {
				k.finish(ctx, s)
			}
			s.workload().acl.report(s.Base().Conditions)
		},
		SettleStatus: func(obj T, s S) {
			stage := ""
			if k.stage != nil {
				stage = k.stage(s)
			}
			settleCompatibleState(obj, stage)
		},
		AfterWrite: func(obj T) { observeReady(obj) },
	}.Reconcile(ctx, req)
}

// settleCompatibleState derives the compatible status.state and status.reason from the
// conditions the reconcile wrote (status.CompatibleState), so that they always agree.
func settleCompatibleState(obj statusHolder, clusterStage string) {
	state, reason := obj.CompatibleState()
	*state, *reason = status.CompatibleState(status.StateFacts{Kind: kindName(obj), Conditions: obj.GetCommonStatus().Conditions,
		ClusterStage: clusterStage, State: *state, Reason: *reason})
}
