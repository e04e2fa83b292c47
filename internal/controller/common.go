package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/status"
)

// The phases every kind shares: finalizer, deletion, owned objects, status.

// finalize deletes the PVCs of the resource's StatefulSets unless asked to keep them, then
// lets the resource go by removing the finalizer. It needs only the resource's kind and name,
// so that a resource with any spec the API server admitted can be deleted.
func finalize(ctx context.Context, c client.Client, rec recorder.EventRecorder, mem *Memory, obj client.Object, kind string, keepClaims bool,
	requeue func(time.Duration, string)) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if !keepClaims {
		remaining, err := releaseWorkloads(ctx, c, obj, kind)
		if err != nil {
			return err
		}
		if len(remaining) > 0 {
			// The StatefulSet and pod watches bring the resource back as they go.
			requeue(whileDeleting, "waiting for "+strings.Join(remaining, ", ")+" to go before deleting the PVCs")
			return nil
		}
		deleted, err := deleteClaims(ctx, c, obj, kind)
		if err != nil {
			return err
		}
		if len(deleted) > 0 {
			rec.Eventf(obj, nil, corev1.EventTypeNormal, "DeletedPVCs", "Delete", "deleted PVCs %v", deleted)
		}
	}
	if err := patchFinalizers(ctx, c, obj, func() { controllerutil.RemoveFinalizer(obj, Finalizer) }); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	mem.forget(obj.GetUID())
	return nil
}

// addFinalizer makes sure deletion waits for finalize. It runs before a reconcile changes the
// status, so the stored status that the update returns is the one read at the start.
func addFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if err := patchFinalizers(ctx, c, obj, func() { controllerutil.AddFinalizer(obj, Finalizer) }); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// patchFinalizers writes the change edit makes to obj's finalizers as a patch of
// metadata.finalizers alone, guarded by the resourceVersion read (a list in a merge patch is
// replaced whole, so a finalizer another controller added meanwhile must not be lost). An
// Update would send the whole object: the spec as decoded, with every empty struct the Go
// types serialize, which the API server stores as the operator's spec fields and counts as
// a new generation.
func patchFinalizers(ctx context.Context, c client.Client, obj client.Object, edit func()) error {
	before := slices.Clone(obj.GetFinalizers())
	edit()
	finalizers := obj.GetFinalizers()
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion(),
	}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		obj.SetFinalizers(before)
		return err
	}
	return nil
}

// applyAll writes the desired objects and deletes owned ones the spec no longer wants. A name
// taken by an object we do not own is returned as *apply.NotOwnedError, with nothing else written after it.
// A change an object cannot take in place, without the recreate annotation, leaves that object
// as it runs and the others are written: it is returned in pending, for the user to decide.
func applyAll(ctx context.Context, c client.Client, applier *apply.Applier, rec recorder.EventRecorder, owner client.Object,
	objects *builder.Objects) (pending []*apply.ImmutableError, err error) {
	recreate := owner.GetAnnotations()[apply.RecreateStatefulSetAnnotation] == "true"
	for _, obj := range objects.All() {
		if sts, ok := obj.(*appsv1.StatefulSet); ok {
			if err := recreateIfClaimsChanged(ctx, c, rec, owner, sts, recreate); err != nil {
				return pending, err
			}
		}
		written, err := applier.Owned(ctx, c, owner, obj)
		var immutable *apply.ImmutableError
		if errors.As(err, &immutable) && recreate {
			rec.Eventf(owner, nil, corev1.EventTypeNormal, "RecreateStatefulSet", "Recreate", "recreating StatefulSet %s, keeping its pods and volumes: %v", obj.GetName(), immutable.Err)
			if err := recreateStatefulSet(ctx, c, owner.GetNamespace(), obj.GetName()); err != nil {
				return pending, err
			}
			written, err = applier.Owned(ctx, c, owner, obj)
		}
		if errors.As(err, &immutable) {
			pending = append(pending, immutable)
			continue
		}
		if err != nil {
			var notOwned *apply.NotOwnedError
			if errors.As(err, &notOwned) {
				rec.Eventf(owner, nil, corev1.EventTypeWarning, status.ReasonNotOwned, "Adopt", "refusing to take over: %s", notOwned.Error())
			}
			return pending, err
		}
		if written {
			log.FromContext(ctx).Info("wrote object", "kind", kindOf(c.Scheme(), obj), "name", obj.GetName())
		}
	}
	deleted, err := apply.Prune(ctx, c, owner, objects)
	if err != nil {
		return pending, err
	}
	if len(deleted) > 0 {
		rec.Eventf(owner, nil, corev1.EventTypeNormal, "Pruned", "Delete", "deleted objects the spec no longer asks for: %v", deleted)
	}
	return pending, nil
}

// recreateIfClaimsChanged recreates a StatefulSet whose claim templates the spec changed, when
// the resource allows it; otherwise it reports that the change waits for that permission.
func recreateIfClaimsChanged(ctx context.Context, c client.Client, rec recorder.EventRecorder, owner client.Object, desired *appsv1.StatefulSet, allowed bool) error {
	var live appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), &live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(&live, owner) || live.DeletionTimestamp != nil || !statefulSetNeedsRecreate(desired, &live) {
		return nil
	}
	if !allowed {
		return &apply.ImmutableError{Kind: "StatefulSet", Name: desired.Name, Err: errors.New("its volume claim templates changed")}
	}
	rec.Eventf(owner, nil, corev1.EventTypeNormal, "RecreateStatefulSet", "Recreate", "recreating StatefulSet %s for new volume claim templates, keeping its pods and volumes", desired.Name)
	return recreateStatefulSet(ctx, c, owner.GetNamespace(), desired.Name)
}

// workloadScope is what every kind's scope carries in the controllers: reconcile.Scope and
// what the features the kinds share keep there.
type workloadScope struct {
	reconcile.Scope
	// memory is the reconciler's Memory.
	memory *Memory
	// acl is what the acl phase found in spec.acl.secret.
	acl aclState
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
			forgetResource(k.memory.counted, kind, key.Namespace, key.Name)
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
