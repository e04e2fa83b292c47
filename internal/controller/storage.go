package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/status"
)

// Storage growth: a larger request in a claim template grows the existing PVCs in place, then
// the StatefulSet is recreated (its claim templates are immutable; its pods are orphaned and
// adopted again) so that new pods get the new size. A smaller request is ignored.

// Condition reasons and the condition type of storage growth (status.ReasonStorageNotExpandable
// is with the reasons that make the compatible state Failed).
const (
	ReasonStorageResizing      = "StorageResizing"
	ReasonStorageShrinkIgnored = "StorageShrinkIgnored"
	// ConditionStorageShrinkIgnored is True while the spec asks for less storage than the
	// volumes have: it does not stop the resource from being Ready.
	ConditionStorageShrinkIgnored = "StorageShrinkIgnored"
)

// whileResizing is how often a resource whose volumes are growing looks at their capacity.
const whileResizing = 2 * time.Second

// ClientOptions are the options of the operator's client: StorageClasses are read directly,
// once per resize, so that the operator needs only get on them, not a cluster-wide watch.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&storagev1.StorageClass{}}}}
}

// storageGrowth acts on the storage plans of a resource's StatefulSets.
type storageGrowth struct {
	c   client.Client
	rec recorder.EventRecorder
	// warned keeps a storage trouble to one Warning event.
	warned *events.Warned
}

// storageOutcome is what the storage phase leaves for the storage-wait phase: claims still
// resizing, and resizes Kubernetes will not do.
type storageOutcome struct {
	resizing []string
	refused  []string
}

// grow runs before the objects are applied: it resizes the claims that are smaller than their
// template, writes the kept sizes and the storageCapacity annotation into the desired
// StatefulSets, and recreates a StatefulSet whose claims all have grown.
func (g storageGrowth) grow(ctx context.Context, owner client.Object, objects *builder.Objects, conditions status.Conditions) (storageOutcome, error) {
	var out storageOutcome
	if objects == nil {
		return out, nil
	}
	var claims corev1.PersistentVolumeClaimList
	if err := g.c.List(ctx, &claims, client.InNamespace(owner.GetNamespace())); err != nil {
		return out, fmt.Errorf("list PVCs: %w", err)
	}
	// The cache lists in no set order: sorted, the messages (and the event kept to one) are stable.
	slices.SortFunc(claims.Items, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	var shrinks []string
	for _, desired := range objects.StatefulSets {
		if len(desired.Spec.VolumeClaimTemplates) == 0 {
			continue
		}
		var live *appsv1.StatefulSet
		var got appsv1.StatefulSet
		err := g.c.Get(ctx, client.ObjectKeyFromObject(desired), &got)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return out, fmt.Errorf("get StatefulSet %s: %w", desired.Name, err)
		case !metav1.IsControlledBy(&got, owner) || got.DeletionTimestamp != nil:
			continue // not ours (applying refuses it), or being recreated
		default:
			live = &got
		}
		plan := builder.PlanStorage(desired, live, claims.Items)
		for _, s := range plan.Shrinks {
			shrinks = append(shrinks, fmt.Sprintf("%s of %s: %s asked, %s kept", s.Template, desired.Name, s.Requested.String(), s.Kept.String()))
		}
		refused, err := g.resize(ctx, owner, claims.Items, plan.Resize)
		if err != nil {
			return out, err
		}
		out.refused = append(out.refused, refused...)
		out.resizing = append(out.resizing, plan.Pending...)
		waiting := len(plan.Pending) > 0 || len(refused) > 0
		plan.Apply(desired, live, waiting)
		if plan.Grown && !waiting {
			g.rec.Eventf(owner, nil, corev1.EventTypeNormal, "RecreateStatefulSet", "Recreate",
				"recreating StatefulSet %s with its grown volume claim templates, keeping its pods and volumes", desired.Name)
			if err := recreateStatefulSet(ctx, g.c, owner.GetNamespace(), desired.Name); err != nil {
				return out, err
			}
		}
	}
	g.reportShrinks(owner, shrinks, conditions)
	return out, nil
}

// resize patches each claim's storage request, unless its StorageClass does not allow
// expansion; it returns why the refused ones were not resized.
func (g storageGrowth) resize(ctx context.Context, owner client.Object, claims []corev1.PersistentVolumeClaim, resizes []builder.ClaimResize) ([]string, error) {
	var refused []string
	for _, r := range resizes {
		i := findClaim(claims, r.Name)
		if i < 0 {
			continue
		}
		claim := &claims[i]
		why, err := g.notExpandable(ctx, claim)
		if err != nil {
			return refused, err
		}
		if why != "" {
			refused = append(refused, why)
			continue
		}
		base := claim.DeepCopy()
		if claim.Spec.Resources.Requests == nil {
			claim.Spec.Resources.Requests = corev1.ResourceList{}
		}
		claim.Spec.Resources.Requests[corev1.ResourceStorage] = r.Size
		err = g.c.Patch(ctx, claim, client.MergeFrom(base))
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			refused = append(refused, fmt.Sprintf("PVC %s cannot grow to %s: %v", claim.Name, r.Size.String(), err))
			continue
		}
		if err != nil {
			return refused, fmt.Errorf("resize PVC %s: %w", claim.Name, err)
		}
		log.FromContext(ctx).Info("resized PVC", "name", claim.Name, "size", r.Size.String())
		g.rec.Eventf(owner, nil, corev1.EventTypeNormal, "ResizePVC", "Resize", "PVC %s grows to %s", claim.Name, r.Size.String())
	}
	return refused, nil
}

// notExpandable says why the claim's StorageClass does not let it grow, "" when it does or
// when the claim names no class (the API server then decides).
func (g storageGrowth) notExpandable(ctx context.Context, claim *corev1.PersistentVolumeClaim) (string, error) {
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
		return "", nil
	}
	name := *claim.Spec.StorageClassName
	var class storagev1.StorageClass
	err := g.c.Get(ctx, client.ObjectKey{Name: name}, &class)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("PVC %s cannot grow: its StorageClass %s does not exist", claim.Name, name), nil
	}
	if err != nil {
		return "", fmt.Errorf("get StorageClass %s: %w", name, err)
	}
	if class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion {
		return fmt.Sprintf("PVC %s cannot grow: StorageClass %s does not set allowVolumeExpansion", claim.Name, name), nil
	}
	return "", nil
}

// reportShrinks keeps the StorageShrinkIgnored condition, with a Warning event when a shrink
// is first seen or changes.
func (g storageGrowth) reportShrinks(owner client.Object, shrinks []string, conditions status.Conditions) {
	if len(shrinks) == 0 {
		conditions.Remove(ConditionStorageShrinkIgnored)
		g.warned.Cleared(owner.GetUID(), "storage-shrink")
		return
	}
	message := "volumes never shrink; the smaller storage request is ignored: " + strings.Join(shrinks, "; ")
	previous := meta.FindStatusCondition(conditions.List(), ConditionStorageShrinkIgnored)
	if g.warned.FirstWarning(owner.GetUID(), "storage-shrink", message) && (previous == nil || previous.Message != message) {
		g.rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonStorageShrinkIgnored, "Resize", "%s", message)
	}
	conditions.Set(ConditionStorageShrinkIgnored, metav1.ConditionTrue, ReasonStorageShrinkIgnored, message)
}

// wait runs after the objects are applied: while claims resize it stops with Progressing, and a
// resize Kubernetes refuses stops with Degraded (and a Warning event, when it is new).
func (g storageGrowth) wait(owner client.Object, out storageOutcome, conditions status.Conditions, requeue func(time.Duration, string)) (stop bool) {
	if len(out.refused) > 0 {
		message := "storage cannot grow in place: " + strings.Join(out.refused, "; ")
		previous := meta.FindStatusCondition(conditions.List(), v1beta2.ConditionDegraded)
		alreadyReported := previous != nil && previous.Status == metav1.ConditionTrue && previous.Reason == status.ReasonStorageNotExpandable && previous.Message == message
		if g.warned.FirstWarning(owner.GetUID(), "storage", message) && !alreadyReported {
			g.rec.Eventf(owner, nil, corev1.EventTypeWarning, status.ReasonStorageNotExpandable, "Resize", "%s", message)
		}
		conditions.Degraded(status.ReasonStorageNotExpandable, message)
		requeue(whileBroken, "a StorageClass may come to allow expansion") // StorageClasses are not watched
		return true
	}
	g.warned.Cleared(owner.GetUID(), "storage")
	if len(out.resizing) > 0 {
		conditions.Progressing(ReasonStorageResizing, "waiting for PVCs to report their new capacity: "+strings.Join(out.resizing, ", "))
		requeue(whileResizing, "PVCs are resizing") // PVCs are not watched
		return true
	}
	return false
}

func findClaim(claims []corev1.PersistentVolumeClaim, name string) int {
	for i := range claims {
		if claims[i].Name == name {
			return i
		}
	}
	return -1
}
