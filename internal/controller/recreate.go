package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recreateStatefulSet deletes the live StatefulSet without its pods (orphan), so that the next
// apply creates it with the new spec and adopts the pods.
func recreateStatefulSet(ctx context.Context, c client.Client, namespace, name string) error {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete StatefulSet %s to recreate it: %w", name, err)
	}
	return nil
}

// statefulSetNeedsRecreate reports whether the claim templates of desired differ from the live
// StatefulSet's (a new storage class, a template added or removed), which only a recreation can
// apply. A larger size alone never gets here: the storage phase grows the claims and recreates
// the StatefulSet itself (storage.go).
func statefulSetNeedsRecreate(desired, live *appsv1.StatefulSet) bool {
	if len(desired.Spec.VolumeClaimTemplates) != len(live.Spec.VolumeClaimTemplates) {
		return true
	}
	for i, d := range desired.Spec.VolumeClaimTemplates {
		l := live.Spec.VolumeClaimTemplates[i]
		if d.Name != l.Name || !equality.Semantic.DeepDerivative(d.Spec, l.Spec) {
			return true
		}
	}
	return false
}
