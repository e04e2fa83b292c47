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
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/rediskube/redis-operator/internal/status"
)

// The phases every kind shares: finalizer, deletion, owned objects, status.

// phase is one named step of a reconcile; stop ends the reconcile early, with a reason the
// phase has written into the status.
type phase[S any] struct {
	name string
	run  func(context.Context, S) (stop bool, err error)
}

// runPhases runs the phases in order until one stops or fails.
func runPhases[S any](ctx context.Context, kind string, phases []phase[S], s S) error {
	for _, p := range phases {
		// Made before it is needed, so that the series exists at 0 and rate() sees the first error.
		phaseErrors := reconcileErrors.WithLabelValues(kind, p.name)
		stop, err := p.run(ctx, s)
		if err != nil {
			phaseErrors.Inc()
			log.FromContext(ctx).Error(err, "reconcile phase failed", "phase", p.name)
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if stop {
			return nil
		}
	}
	return nil
}

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

// patchStatus writes obj's status when it differs from base's, as a merge patch of the status
// alone, so that it never conflicts with writers of the spec or metadata.
func patchStatus(ctx context.Context, c client.Client, obj, base client.Object, changed bool) error {
	if !changed || (obj.GetDeletionTimestamp() != nil && !controllerutil.ContainsFinalizer(obj, Finalizer)) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
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

// scopeBase is what every kind's scope carries: the conditions being written and the result
// the reconcile returns once a phase stops it.
type scopeBase struct {
	conditions status.Conditions
	// memory is the reconciler's Memory.
	memory *Memory
	result ctrl.Result
	// clusterStage is which pods a RedisCluster on its way waits for (see status.StateFacts).
	clusterStage string
	// acl is what the acl phase found in spec.acl.secret.
	acl aclState
	// showStatus writes the status as it stands, before a phase that may take long (a slice
	// of slot moves), so that users see what is under way while it runs.
	showStatus func(context.Context) error
}

func (b *scopeBase) base() *scopeBase { return b }

// requeue asks to come back after d for a reason that raises no Kubernetes event (Redis
// gossip, a replica's sync), keeping the earliest of the requeues asked for.
func (b *scopeBase) requeue(ctx context.Context, d time.Duration, reason string) {
	log.FromContext(ctx).V(1).Info("requeue", "after", d, "reason", reason)
	if b.result.RequeueAfter == 0 || d < b.result.RequeueAfter {
		b.result.RequeueAfter = d
	}
}

// requeuer is requeue for helpers that know nothing of the scope.
func (b *scopeBase) requeuer(ctx context.Context) func(time.Duration, string) {
	return func(d time.Duration, reason string) { b.requeue(ctx, d, reason) }
}

// statusHolder is what the shell reads and writes of every kind's status, through accessors
// of the API types (see v1beta2.CommonStatus) rather than by reflection.
type statusHolder interface {
	client.Object
	GetCommonStatus() *v1beta2.CommonStatus
	CompatibleState() (state, reason *string)
}

// kindObject is a kind's resource type T, which also takes the whole status of another T:
// the status patch is computed from the status last written under everything else as it is.
type kindObject[T any] interface {
	statusHolder
	SetStatusFrom(T)
}

// The four kinds give the shell what it writes; a kind without it does not compile.
var (
	_ kindObject[*v1beta2.Redis]            = (*v1beta2.Redis)(nil)
	_ kindObject[*v1beta2.RedisCluster]     = (*v1beta2.RedisCluster)(nil)
	_ kindObject[*v1beta2.RedisReplication] = (*v1beta2.RedisReplication)(nil)
	_ kindObject[*v1beta2.RedisSentinel]    = (*v1beta2.RedisSentinel)(nil)
)

// kindShell is the Reconcile of every kind: load the resource, run its phases over a scope,
// write the status once at the end, only when it changed, as a patch of the status alone.
type kindShell[T kindObject[T], S interface{ base() *scopeBase }] struct {
	// newObject returns an empty resource of the kind, for the one read into it.
	newObject func() T
	newScope  func(T, scopeBase) S
	phases    []phase[S]
	// liveness stops PINGing the pods of a resource that is deleted or gone.
	liveness *liveness.Watcher
	// finish, when set, runs after the phases, whichever stopped them, before the status is
	// written: what must hold of every reconcile's status.
	finish func(context.Context, S)
	// memory is the reconciler's Memory, which the phases reach through scopeBase.
	memory *Memory
}

func (k kindShell[T, S]) reconcile(ctx context.Context, c client.Client, req ctrl.Request) (result ctrl.Result, err error) {
	obj := k.newObject()
	if err := requireMemory(k.memory, kindName(obj)+" reconciler"); err != nil {
		return ctrl.Result{}, err // SetupWithManager refuses it: only a hand-made reconciler gets here
	}
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			forgetResource(k.memory.counted, kindName(obj), req.Namespace, req.Name)
			k.liveness.Forget(liveness.Owner{Kind: kindName(obj), NamespacedName: req.NamespacedName})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		k.liveness.Forget(livenessOwner(obj))
	}
	before := obj.DeepCopyObject().(T)
	common := obj.GetCommonStatus()
	s := k.newScope(obj, scopeBase{memory: k.memory, conditions: status.NewConditions(&common.Conditions, obj.GetGeneration()).
		RememberingReady(obj.GetUID(), readyMemory{k.memory.warned})})
	// writeStatus settles the derived fields of target's status and patches them, when they
	// changed, from what the API server was last given (before), which it then becomes.
	writeStatus := func(ctx context.Context, target T, succeeded bool) error {
		status.SettleObservedGeneration(target.GetCommonStatus(), target.GetGeneration(), succeeded)
		settleCompatibleState(target, s.base().clusterStage)
		// base is target with the status last written: the two differ in the status alone.
		base := target.DeepCopyObject().(T)
		base.SetStatusFrom(before)
		changed := !equality.Semantic.DeepEqual(base, target)
		if err := patchStatus(ctx, c, target, base, changed); err != nil {
			return err
		}
		before.SetStatusFrom(target)
		return nil
	}
	s.base().showStatus = func(ctx context.Context) error {
		// A copy: not every phase has run, so the generation is not claimed as acted on yet.
		return writeStatus(ctx, obj.DeepCopyObject().(T), false)
	}
	defer func() {
		if k.finish != nil {
			k.finish(ctx, s)
		}
		s.base().acl.report(s.base().conditions)
		err = errors.Join(err, writeStatus(ctx, obj, err == nil))
		observeReady(obj)
	}()
	if err := runPhases(ctx, kindName(obj), k.phases, s); err != nil {
		return ctrl.Result{}, err
	}
	return s.base().result, nil
}

// settleCompatibleState derives the compatible status.state and status.reason from the
// conditions the reconcile wrote (status.CompatibleState), so that they always agree.
func settleCompatibleState(obj statusHolder, clusterStage string) {
	state, reason := obj.CompatibleState()
	*state, *reason = status.CompatibleState(status.StateFacts{Kind: kindName(obj), Conditions: obj.GetCommonStatus().Conditions,
		ClusterStage: clusterStage, State: *state, Reason: *reason})
}
