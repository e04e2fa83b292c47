package controller

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finalizer keeps a custom resource until the operator has removed the PVCs of its pods
// (owner references cannot do it: the StatefulSet controller creates PVCs without one).
const Finalizer = "redis.opstreelabs.in/finalizer"

// deleteClaims deletes the PVCs that the claim templates of the given StatefulSets created:
// <template>-<statefulset>-<ordinal>.
func deleteClaims(ctx context.Context, c client.Client, namespace string, statefulSets []*appsv1.StatefulSet) ([]string, error) {
	var claims corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claims, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list PVCs: %w", err)
	}
	var deleted []string
	for _, sts := range statefulSets {
		for _, template := range sts.Spec.VolumeClaimTemplates {
			prefix := template.Name + "-" + sts.Name + "-"
			for i := range claims.Items {
				claim := &claims.Items[i]
				if !strings.HasPrefix(claim.Name, prefix) || !isOrdinal(strings.TrimPrefix(claim.Name, prefix)) || claim.DeletionTimestamp != nil {
					continue
				}
				if err := c.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
					return deleted, fmt.Errorf("delete PVC %s: %w", claim.Name, err)
				}
				deleted = append(deleted, claim.Name)
			}
		}
	}
	return deleted, nil
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
