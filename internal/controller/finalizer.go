package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
)

// Finalizer keeps a custom resource until the operator has removed the PVCs of its pods
// (owner references cannot do it: the StatefulSet controller creates PVCs without one).
const Finalizer = "redis.opstreelabs.in/finalizer"

// whileDeleting is how often a deleted resource looks again at the StatefulSets and pods it
// waits for, should a watch event be missed.
const whileDeleting = 5 * time.Second

// releaseWorkloads deletes the owner's StatefulSets and then their pods, and names what is
// still there: the claims may only be deleted once nothing is left that could make the
// StatefulSet controller create one again (it does for a Pending pod whose claim is gone, a
// second after the delete). The StatefulSets go first so no pod comes back; their pods go
// before the claims so the StatefulSet controller, even one acting on a late view, has
// nothing to make a claim for.
func releaseWorkloads(ctx context.Context, c client.Client, owner client.Object, kind string) ([]string, error) {
	namespace := owner.GetNamespace()
	var remaining []string
	var goneSets []string
	for _, stsName := range builder.StatefulSetNamesOf(kind, owner.GetName()) {
		var sts appsv1.StatefulSet
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: stsName}, &sts)
		switch {
		case apierrors.IsNotFound(err):
			goneSets = append(goneSets, stsName)
			continue
		case err != nil:
			return nil, fmt.Errorf("get StatefulSet %s: %w", stsName, err)
		case !metav1.IsControlledBy(&sts, owner):
			continue // not ours: deleteClaims leaves its claims alone too
		}
		remaining = append(remaining, "StatefulSet "+stsName)
		if sts.DeletionTimestamp != nil {
			continue
		}
		uid := sts.UID
		err = c.Delete(ctx, &sts, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("delete StatefulSet %s before its PVCs: %w", stsName, err)
		}
		log.FromContext(ctx).Info("deleting StatefulSet before its PVCs", "name", stsName)
	}
	if len(goneSets) == 0 {
		return remaining, nil
	}
	// The garbage collector deletes the pods of a deleted StatefulSet, but not those it left
	// orphaned (a recreate cut short): the operator deletes both, whichever comes first.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !isPodOfGoneStatefulSet(pod, goneSets) {
			continue
		}
		remaining = append(remaining, "pod "+pod.Name)
		if pod.DeletionTimestamp != nil {
			continue
		}
		if err := c.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete pod %s before its PVCs: %w", pod.Name, err)
		}
	}
	return remaining, nil
}

// isPodOfGoneStatefulSet reports whether pod is <sts>-<ordinal> of one of the gone StatefulSets and
// has no controller (or still names that StatefulSet as one).
func isPodOfGoneStatefulSet(pod *corev1.Pod, goneSets []string) bool {
	for _, stsName := range goneSets {
		ordinal, found := strings.CutPrefix(pod.Name, stsName+"-")
		if !found || !isOrdinal(ordinal) {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		return ref == nil || (ref.Kind == "StatefulSet" && ref.Name == stsName)
	}
	return false
}

// deleteClaims deletes the PVCs of the owner's StatefulSets, named from the owner's kind and
// name alone: <template>-<statefulset>-<ordinal>, where the template is one the builders name
// or the claim carries the StatefulSet's app label. The claims of a StatefulSet of that name
// that someone else controls are left alone.
func deleteClaims(ctx context.Context, c client.Client, owner client.Object, kind string) ([]string, error) {
	namespace := owner.GetNamespace()
	var claims corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claims, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list PVCs: %w", err)
	}
	var deleted []string
	for _, stsName := range builder.StatefulSetNamesOf(kind, owner.GetName()) {
		owned, err := statefulSetNotForeign(ctx, c, owner, stsName)
		if err != nil {
			return deleted, err
		}
		if !owned {
			continue
		}
		for i := range claims.Items {
			claim := &claims.Items[i]
			if claim.DeletionTimestamp != nil || !isClaimOf(claim, stsName) {
				continue
			}
			if err := c.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("delete PVC %s: %w", claim.Name, err)
			}
			deleted = append(deleted, claim.Name)
		}
	}
	return deleted, nil
}

// statefulSetNotForeign is true unless a StatefulSet of that name exists and is controlled by
// something other than owner (a gone StatefulSet may have been ours: foreground deletion
// removes it before the owner).
func statefulSetNotForeign(ctx context.Context, c client.Client, owner client.Object, name string) (bool, error) {
	var sts appsv1.StatefulSet
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &sts)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get StatefulSet %s: %w", name, err)
	}
	return metav1.IsControlledBy(&sts, owner), nil
}

// isClaimOf reports whether the claim is one the StatefulSet controller made for stsName.
func isClaimOf(claim *corev1.PersistentVolumeClaim, stsName string) bool {
	template, ordinal, ok := splitClaimName(claim.Name, stsName)
	if !ok || !isOrdinal(ordinal) {
		return false
	}
	return slices.Contains(builder.ClaimTemplateNamesOf(stsName), template) || claim.Labels[builder.LabelApp] == stsName
}

// splitClaimName splits <template>-<stsName>-<ordinal>.
func splitClaimName(claimName, stsName string) (template, ordinal string, ok bool) {
	i := strings.LastIndex(claimName, "-"+stsName+"-")
	if i <= 0 {
		return "", "", false
	}
	return claimName[:i], claimName[i+len(stsName)+2:], true
}

func isOrdinal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// finalize deletes the PVCs of the resource's StatefulSets unless asked to keep them, then
// lets the resource go by removing the finalizer. It needs only the resource's kind and name,
// so that a resource with any spec the API server admitted can be deleted.
func (d *Dependencies) finalize(ctx context.Context, obj client.Object, kind string, keepClaims bool, requeue func(time.Duration, string)) error {
	c, rec, mem := d.Client, d.Recorder, d.Memory
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
