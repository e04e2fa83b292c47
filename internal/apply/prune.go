package apply

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rediskube/redis-operator/internal/builder"
)

// Prune deletes the objects of the kinds the builders make that owner controls but desired no
// longer holds (the metrics Service once the exporter is off, the follower StatefulSet of a
// cluster scaled to zero followers...), keeping those desired lists as retained. It looks only
// at objects labelled as the operator's for that owner, and returns the "Kind/name" of each
// it deleted, also when it stops at an error.
func Prune(ctx context.Context, c client.Client, owner metav1.Object, desired *builder.Objects) (deleted []string, err error) {
	wanted := map[string]bool{}
	for _, obj := range desired.All() {
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			return nil, fmt.Errorf("kind of %s: %w", obj.GetName(), err)
		}
		wanted[gvk.Kind+"/"+obj.GetName()] = true
	}
	for _, kindName := range desired.Retained {
		wanted[kindName] = true
	}
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"StatefulSet", &appsv1.StatefulSetList{}},
		{"Service", &corev1.ServiceList{}},
		{"ConfigMap", &corev1.ConfigMapList{}},
		{"Secret", &corev1.SecretList{}},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudgetList{}},
	}
	for _, l := range lists {
		if err := c.List(ctx, l.list, client.InNamespace(owner.GetNamespace()),
			client.MatchingLabels{builder.LabelInstance: owner.GetName(), builder.LabelManagedBy: builder.ManagedByValue}); err != nil {
			return deleted, fmt.Errorf("list %ss: %w", l.kind, err)
		}
		items, err := objectsOf(l.list)
		if err != nil {
			return deleted, err
		}
		for _, obj := range items {
			if wanted[l.kind+"/"+obj.GetName()] || !metav1.IsControlledBy(obj, owner) || obj.GetDeletionTimestamp() != nil {
				continue
			}
			if err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("delete %s %s: %w", l.kind, obj.GetName(), err)
			}
			deleted = append(deleted, l.kind+"/"+obj.GetName())
		}
	}
	return deleted, nil
}

// objectsOf returns the items of a list as objects.
func objectsOf(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	err := meta.EachListItem(list, func(item runtime.Object) error {
		obj, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("list item %T is not an object", item)
		}
		out = append(out, obj)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read list: %w", err)
	}
	return out, nil
}
