package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
)

// The phases every kind shares: finalizer, deletion, owned objects, status.

// finalize deletes the PVCs of the resource's StatefulSets unless asked to keep them, then
// lets the resource go by removing the finalizer.
func finalize(ctx context.Context, c client.Client, rec recorder.EventRecorder, obj client.Object, keepClaims bool, statefulSets []*appsv1.StatefulSet) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if !keepClaims {
		deleted, err := deleteClaims(ctx, c, obj.GetNamespace(), statefulSets)
		if err != nil {
			return err
		}
		if len(deleted) > 0 {
			rec.Eventf(obj, nil, corev1.EventTypeNormal, "DeletedPVCs", "Delete", "deleted PVCs %v", deleted)
		}
	}
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := c.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// addFinalizer makes sure deletion waits for finalize. It runs before a reconcile changes the
// status, so the stored status that the update returns is the one read at the start.
func addFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	controllerutil.AddFinalizer(obj, Finalizer)
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// applyAll writes the desired objects and deletes owned ones the spec no longer wants. A name
// taken by an object we do not own is returned as *NotOwnedError, with nothing else written after it.
func applyAll(ctx context.Context, c client.Client, rec recorder.EventRecorder, owner client.Object, objects *builder.Objects) error {
	for _, obj := range objects.All() {
		written, err := applyOwned(ctx, c, owner, obj)
		if err != nil {
			var notOwned *NotOwnedError
			if errors.As(err, &notOwned) {
				rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonNotOwned, "Adopt", "refusing to take over: %s", notOwned.Error())
			}
			return err
		}
		if written {
			log.FromContext(ctx).Info("wrote object", "kind", kindOf(obj), "name", obj.GetName())
		}
	}
	deleted, err := pruneOwned(ctx, c, owner, objects.All())
	if err != nil {
		return err
	}
	if len(deleted) > 0 {
		rec.Eventf(owner, nil, corev1.EventTypeNormal, "Pruned", "Delete", "deleted objects the spec no longer asks for: %v", deleted)
	}
	return nil
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
