package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// Object is a kind's resource type T: what the Shell reads and writes of its status, through
// accessors of the API types (see v1beta2.CommonStatus) rather than by reflection. It also
// takes the whole status of another T: the status patch is computed from the status last
// written under everything else as it is.
type Object[T any] interface {
	client.Object
	GetCommonStatus() *v1beta2.CommonStatus
	SetStatusFrom(T)
}

// Shell is the Reconcile of a kind: load the resource, run its phases over a scope, write the
// status once at the end, only when it changed, as a patch of the status alone. The hooks left
// nil do nothing.
type Shell[T Object[T], S Scoped] struct {
	Client client.Client
	// Kind names the kind where the phases' failures are counted.
	Kind string
	// Finalizer is the kind's: once it is off a resource being deleted, the resource may go at
	// any moment and its status is no longer written.
	Finalizer string
	// NewObject returns an empty resource of the kind, for the one read into it.
	NewObject func() T
	// NewScope makes the kind's scope for the resource read, around base, whose conditions
	// write into the resource's status.
	NewScope func(obj T, base Scope) S
	Phases   []Phase[S]
	// Failures, when set, counts the phases that fail (Run).
	Failures Failures
	// OnGone runs when the resource is not found: it was deleted, and what is remembered of
	// it can go.
	OnGone func(ctx context.Context, key types.NamespacedName)
	// OnDeleting runs, before the phases, when the resource is being deleted.
	OnDeleting func(ctx context.Context, obj T)
	// Finish runs after the phases, whichever stopped them, before the status is written: what
	// must hold of every reconcile's status.
	Finish func(ctx context.Context, s S)
	// SettleStatus derives, from the status the phases wrote, the fields that must agree with
	// it, before each write (the compatible state of the API types).
	SettleStatus func(obj T, s S)
	// AfterWrite runs after the final status write, whether it succeeded or not.
	AfterWrite func(obj T)
}

// Reconcile reconciles the resource req names: see the package's doc.
func (sh Shell[T, S]) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	obj := sh.NewObject()
	if err := sh.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) && sh.OnGone != nil {
			sh.OnGone(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil && sh.OnDeleting != nil {
		sh.OnDeleting(ctx, obj)
	}
	w := statusWriter[T, S]{shell: sh, before: obj.DeepCopyObject().(T)}
	common := obj.GetCommonStatus()
	s := sh.NewScope(obj, Scope{Conditions: status.NewConditions(&common.Conditions, obj.GetGeneration())})
	w.scope = s
	s.Base().ShowStatus = func(ctx context.Context) error {
		// A copy: not every phase has run, so the generation is not claimed as acted on yet.
		return w.write(ctx, obj.DeepCopyObject().(T), false)
	}
	defer func() {
		if sh.Finish != nil {
			sh.Finish(ctx, s)
		}
		err = errors.Join(err, w.write(ctx, obj, err == nil))
		if sh.AfterWrite != nil {
			sh.AfterWrite(obj)
		}
	}()
	if err := Run(ctx, sh.Kind, sh.Phases, s, sh.Failures); err != nil {
		return ctrl.Result{}, err
	}
	return s.Base().Result, nil
}

// statusWriter writes the status of one reconcile's resource.
type statusWriter[T Object[T], S Scoped] struct {
	shell Shell[T, S]
	scope S
	// before is the resource with the status the API server was last given.
	before T
}

// write settles the derived fields of target's status and patches them, when they changed,
// from what the API server was last given (before), which it then becomes.
func (w statusWriter[T, S]) write(ctx context.Context, target T, succeeded bool) error {
	status.SettleObservedGeneration(target.GetCommonStatus(), target.GetGeneration(), succeeded)
	if w.shell.SettleStatus != nil {
		w.shell.SettleStatus(target, w.scope)
	}
	// base is target with the status last written: the two differ in the status alone.
	base := target.DeepCopyObject().(T)
	base.SetStatusFrom(w.before)
	changed := !equality.Semantic.DeepEqual(base, target)
	if err := w.patch(ctx, target, base, changed); err != nil {
		return err
	}
	w.before.SetStatusFrom(target)
	return nil
}

// patch writes obj's status when it differs from base's, as a merge patch of the status
// alone, so that it never conflicts with writers of the spec or metadata.
func (w statusWriter[T, S]) patch(ctx context.Context, obj, base client.Object, changed bool) error {
	if !changed || (obj.GetDeletionTimestamp() != nil && !controllerutil.ContainsFinalizer(obj, w.shell.Finalizer)) {
		return nil
	}
	if err := w.shell.Client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
