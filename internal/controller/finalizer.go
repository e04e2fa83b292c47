package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// Finalizer keeps a custom resource until the operator has removed the PVCs of its pods
// (owner references cannot do it: the StatefulSet controller creates PVCs without one).
const Finalizer = "redis.opstreelabs.in/finalizer"

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
