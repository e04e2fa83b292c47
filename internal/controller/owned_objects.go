package controller

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

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
