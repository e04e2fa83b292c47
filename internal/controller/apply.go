package controller

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NotOwnedError is returned when an object with a name we need exists but is not controlled
// by the custom resource: we never adopt what someone else made.
type NotOwnedError struct {
	Kind, Name string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this resource; rename or delete it", e.Kind, e.Name)
}

// applyOwned creates desired, or patches the live object when a field that desired sets
// differs. It returns whether it wrote. Fields desired leaves unset (API defaults, what other
// controllers add) are left alone, so a steady state makes no write.
func applyOwned(ctx context.Context, c client.Client, owner metav1.Object, desired client.Object) (bool, error) {
	live := desired.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		if err := c.Create(ctx, desired); err != nil {
			return false, fmt.Errorf("create %s %s: %w", kindOf(desired), desired.GetName(), err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s: %w", kindOf(desired), desired.GetName(), err)
	}
	if !metav1.IsControlledBy(live, owner) {
		return false, &NotOwnedError{Kind: kindOf(desired), Name: desired.GetName()}
	}
	if isDerived(desired, live) {
		return false, nil
	}
	original := live.DeepCopyObject().(client.Object)
	mergeInto(desired, live)
	if err := c.Patch(ctx, live, client.MergeFrom(original)); err != nil {
		return false, fmt.Errorf("patch %s %s: %w", kindOf(desired), desired.GetName(), err)
	}
	return true, nil
}

// isDerived reports whether live already holds every label, annotation and field desired sets.
func isDerived(desired, live client.Object) bool {
	if !subset(desired.GetLabels(), live.GetLabels()) || !subset(desired.GetAnnotations(), live.GetAnnotations()) {
		return false
	}
	switch d := desired.(type) {
	case *appsv1.StatefulSet:
		return equality.Semantic.DeepDerivative(d.Spec, live.(*appsv1.StatefulSet).Spec)
	case *corev1.Service:
		return equality.Semantic.DeepDerivative(d.Spec, live.(*corev1.Service).Spec)
	case *policyv1.PodDisruptionBudget:
		return equality.Semantic.DeepDerivative(d.Spec, live.(*policyv1.PodDisruptionBudget).Spec)
	case *corev1.ConfigMap:
		return maps.Equal(d.Data, live.(*corev1.ConfigMap).Data)
	case *corev1.Secret:
		return reflect.DeepEqual(d.Data, live.(*corev1.Secret).Data)
	default:
		return false
	}
}

// mergeInto copies what desired sets into live, keeping what the API server assigned and
// may not be changed (a Service's cluster IPs, a StatefulSet's claim templates).
func mergeInto(desired, live client.Object) {
	labels := live.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	live.SetLabels(labels)
	annotations := live.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, desired.GetAnnotations())
	live.SetAnnotations(annotations)

	switch d := desired.(type) {
	case *appsv1.StatefulSet:
		l := live.(*appsv1.StatefulSet)
		claims := l.Spec.VolumeClaimTemplates
		l.Spec = *d.Spec.DeepCopy()
		l.Spec.VolumeClaimTemplates = claims
	case *corev1.Service:
		l := live.(*corev1.Service)
		kept := l.Spec
		l.Spec = *d.Spec.DeepCopy()
		if l.Spec.ClusterIP == "" {
			l.Spec.ClusterIP, l.Spec.ClusterIPs = kept.ClusterIP, kept.ClusterIPs
		}
		l.Spec.IPFamilies, l.Spec.IPFamilyPolicy = kept.IPFamilies, kept.IPFamilyPolicy
		if l.Spec.HealthCheckNodePort == 0 {
			l.Spec.HealthCheckNodePort = kept.HealthCheckNodePort
		}
		if l.Spec.Type == kept.Type {
			keepNodePorts(l.Spec.Ports, kept.Ports)
		}
	case *policyv1.PodDisruptionBudget:
		live.(*policyv1.PodDisruptionBudget).Spec = *d.Spec.DeepCopy()
	case *corev1.ConfigMap:
		live.(*corev1.ConfigMap).Data = maps.Clone(d.Data)
	case *corev1.Secret:
		live.(*corev1.Secret).Data = maps.Clone(d.Data)
	}
}

// keepNodePorts keeps the node ports the API server allocated, so an update does not move them.
func keepNodePorts(ports, kept []corev1.ServicePort) {
	for i := range ports {
		if ports[i].NodePort != 0 {
			continue
		}
		for _, k := range kept {
			if k.Name == ports[i].Name {
				ports[i].NodePort = k.NodePort
			}
		}
	}
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func kindOf(obj client.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	return reflect.TypeOf(obj).Elem().Name()
}
