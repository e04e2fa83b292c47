package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/status"
)

// The bodies of phases that every kind runs the same way, so that the rules live in one place.
// They write conditions only: the compatible state follows from them (status.CompatibleState).

// finalizeDeleted runs when the resource is being deleted: it removes the PVCs of its
// StatefulSets unless storage.keepAfterDelete, and lets the resource go. It reads nothing of
// the spec but that flag.
func (d *Dependencies) finalizeDeleted(ctx context.Context, obj client.Object, kind string, storage *v1beta2.Storage, requeue func(time.Duration, string)) (bool, error) {
	if obj.GetDeletionTimestamp() == nil {
		return false, nil
	}
	keep := storage != nil && storage.KeepAfterDelete
	return true, d.finalize(ctx, obj, kind, keep, requeue)
}

// skipWhileAnnotated stops every later phase while the kind's skip annotation is "true".
func skipWhileAnnotated(obj client.Object, annotation, what string, conditions status.Conditions) bool {
	if obj.GetAnnotations()[annotation] != "true" {
		return false
	}
	conditions.Skipped(fmt.Sprintf("annotation %s is \"true\": the operator does not act on this %s", annotation, what))
	return true
}

// resolvePasswordOf reads the password Secret; a missing Secret or key is the user's to fix and
// stops the reconcile with a condition and an event (the Secret watch brings it back).
func resolvePasswordOf(ctx context.Context, c client.Client, rec recorder.EventRecorder, obj client.Object,
	ref *v1beta2.ExistingPasswordSecret, conditions status.Conditions) (password string, stop bool, err error) {
	password, err = readPassword(ctx, c, obj.GetNamespace(), ref)
	var missing *SecretKeyError
	if errors.As(err, &missing) {
		conditions.Degraded(status.ReasonSecretMissing, missing.Error())
		rec.Eventf(obj, nil, corev1.EventTypeWarning, status.ReasonSecretMissing, "ReadPassword", "%s", missing.Error())
		return "", true, nil
	}
	return password, false, err
}

// applyBuilt writes the built objects. A spec the builders refuse or a name held by an object
// we do not own stops the reconcile with a condition (and an event): each waits for the user.
// A change a StatefulSet cannot take in place, without the recreate annotation, does not stop
// it: the resource goes on as it runs, Ready if it is, and the UpdatePending condition (with
// one Warning event) says what waits and how to apply it.
func (d *Dependencies) applyBuilt(ctx context.Context, owner client.Object, objects *builder.Objects, buildErr error, conditions status.Conditions) (bool, error) {
	rec := d.Recorder
	if buildErr != nil {
		conditions.Degraded(status.ReasonInvalidSpec, buildErr.Error())
		rec.Eventf(owner, nil, corev1.EventTypeWarning, status.ReasonInvalidSpec, "Build", "%s", buildErr.Error())
		return true, nil
	}
	pending, err := applyAll(ctx, d.Client, d.Applier, rec, owner, objects)
	reportPendingUpdates(rec, d.Memory.warned, owner, pending, conditions)
	var notOwned *apply.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		conditions.Degraded(status.ReasonNotOwned, notOwned.Error())
		return true, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is going, and the resource with it: nothing is to be made there.
		log.FromContext(ctx).V(1).Info("namespace is terminating; creating nothing in it", "error", err.Error())
		return true, nil
	case err != nil:
		// The API server refused a write (a quota, a webhook, a name it will not take): say so
		// on the resource; the error brings the reconcile back with backoff.
		conditions.Degraded(status.ReasonApplyFailed, err.Error())
		rec.Eventf(owner, nil, corev1.EventTypeWarning, status.ReasonApplyFailed, "Apply", "%s", err.Error())
	}
	return false, err
}

// ConditionUpdatePending is True while the spec asks for a change an object cannot take in
// place (a StatefulSet's pod management policy, service name, selector) and the resource does
// not carry the recreate annotation: the running objects stay as they are.
const ConditionUpdatePending = "UpdatePending"

// reportPendingUpdates keeps the UpdatePending condition, with a Warning event when what waits
// is first seen or changes.
func reportPendingUpdates(rec recorder.EventRecorder, warned *events.Warned, owner client.Object, pending []*apply.ImmutableError, conditions status.Conditions) {
	if len(pending) == 0 {
		conditions.Remove(ConditionUpdatePending)
		warned.Cleared(owner.GetUID(), "update-pending")
		return
	}
	var parts []string
	for _, p := range pending {
		parts = append(parts, p.Error())
	}
	message := strings.Join(parts, "; ")
	previous := meta.FindStatusCondition(conditions.List(), ConditionUpdatePending)
	if warned.FirstWarning(owner.GetUID(), "update-pending", message) && (previous == nil || previous.Message != message) {
		rec.Eventf(owner, nil, corev1.EventTypeWarning, status.ReasonImmutable, "Update", "%s", message)
	}
	conditions.Set(ConditionUpdatePending, metav1.ConditionTrue, status.ReasonImmutable, message)
}
