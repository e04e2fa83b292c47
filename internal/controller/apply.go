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
	if live.GetDeletionTimestamp() != nil {
		return false, nil // being recreated: its delete event brings the owner back to create it
	}
	if isDerived(desired, live) {
		return false, nil
	}
	original := live.DeepCopyObject().(client.Object)
	mergeInto(desired, live)
	if err := c.Patch(ctx, live, client.MergeFrom(original)); err != nil {
		if apierrors.IsInvalid(err) {
			return false, &ImmutableError{Kind: kindOf(desired), Name: desired.GetName(), Err: err}
		}
		return false, fmt.Errorf("patch %s %s: %w", kindOf(desired), desired.GetName(), err)
	}
	return true, nil
}

// ImmutableError is returned when the API server refuses a change (a StatefulSet's selector,
// service name or pod management policy): the object has to be recreated, which the operator
// does only when the resource carries the recreate-statefulset annotation.
type ImmutableError struct {
	Kind, Name string
	Err        error
}

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("%s %s cannot be changed in place (%v); set the annotation %s: \"true\" to let the operator recreate it, keeping pods and volumes",
		e.Kind, e.Name, e.Err, RecreateStatefulSetAnnotation)
}

func (e *ImmutableError) Unwrap() error { return e.Err }

// RecreateStatefulSetAnnotation lets the operator delete a StatefulSet, leaving its pods and
// PVCs, and create it anew when a field Kubernetes won't update in place changed.
const RecreateStatefulSetAnnotation = "redis.opstreelabs.in/recreate-statefulset"

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
// StatefulSet's (a new storage size or class), which only a recreation can apply.
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

// isDerived reports whether live already holds every label, annotation and field desired sets.
func isDerived(desired, live client.Object) bool {
	if !subset(desired.GetLabels(), live.GetLabels()) || !subset(desired.GetAnnotations(), live.GetAnnotations()) {
		return false
	}
	switch d := desired.(type) {
	case *appsv1.StatefulSet:
		// Claim templates cannot change on a live StatefulSet: they are compared, and acted on,
		// apart (see statefulSetNeedsRecreate).
		spec := *d.Spec.DeepCopy()
		spec.VolumeClaimTemplates = live.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates
		return equality.Semantic.DeepDerivative(spec, live.(*appsv1.StatefulSet).Spec)
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
