package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rediskube/redis-operator/internal/builder"
)

// The names other programs and stored objects rely on: changing one makes the operator lose
// track of what it applied, or wakes every object up with a write.
func TestStableNames(t *testing.T) {
	if FieldManager != "redis-operator" {
		t.Errorf("FieldManager %q", FieldManager)
	}
	if AppliedHashAnnotation != "redis.opstreelabs.in/applied-hash" {
		t.Errorf("AppliedHashAnnotation %q", AppliedHashAnnotation)
	}
	if RecreateStatefulSetAnnotation != "redis.opstreelabs.in/recreate-statefulset" {
		t.Errorf("RecreateStatefulSetAnnotation %q", RecreateStatefulSetAnnotation)
	}
}

func TestNewApplierHandsOverItsOwnAndTheLegacyManagers(t *testing.T) {
	update := func(manager, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource}
	}
	a := NewApplier("redis-operator-v0", "manager")
	for _, tc := range []struct {
		entry metav1.ManagedFieldsEntry
		want  bool
	}{
		{update(FieldManager, ""), true}, // the operator's own create
		{update("redis-operator-v0", ""), true},
		{update("manager", ""), true},
		{update("kubectl", ""), false},
		{update("manager", "status"), false}, // status is not applied
		{metav1.ManagedFieldsEntry{Manager: "manager", Operation: metav1.ManagedFieldsOperationApply}, false},
	} {
		if got := a.isLegacyEntry(tc.entry); got != tc.want {
			t.Errorf("isLegacyEntry(%+v) = %v, want %v", tc.entry, got, tc.want)
		}
	}
	if NewApplier().isLegacyEntry(update("manager", "")) {
		t.Error("an applier given no legacy managers takes over another manager's fields")
	}
}

func TestAppliedHash(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	base, err := appliedHash(cm)
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 16 {
		t.Errorf("hash %q: want 16 hex digits", base)
	}
	annotated := cm.DeepCopy()
	annotated.Annotations = map[string]string{AppliedHashAnnotation: "stale"}
	if got, _ := appliedHash(annotated); got != base {
		t.Errorf("the digest depends on the digest annotation: %s, want %s", got, base)
	}
	if annotated.Annotations[AppliedHashAnnotation] != "stale" {
		t.Error("appliedHash changed the object it digested")
	}
	changed := cm.DeepCopy()
	changed.Data["k"] = "w"
	if got, _ := appliedHash(changed); got == base {
		t.Error("a changed object has the same digest")
	}
}

func TestApplyConfigurationLeavesOutStatusAndNulls(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec:   corev1.ServiceSpec{Selector: map[string]string{"app": "x"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	config, err := applyConfiguration(svc, "v1", "Service")
	if err != nil {
		t.Fatal(err)
	}
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(config)
	if err != nil {
		t.Fatal(err)
	}
	if data["apiVersion"] != "v1" || data["kind"] != "Service" {
		t.Errorf("apiVersion %v kind %v", data["apiVersion"], data["kind"])
	}
	if _, has := data["status"]; has {
		t.Error("the status is applied")
	}
	meta := data["metadata"].(map[string]any)
	for _, field := range []string{"creationTimestamp", "resourceVersion", "managedFields"} {
		if _, has := meta[field]; has {
			t.Errorf("metadata.%s is applied: %v", field, meta)
		}
	}
}

func TestDropNulls(t *testing.T) {
	m := map[string]any{"a": nil, "b": map[string]any{"c": nil, "d": 1}, "e": []any{map[string]any{"f": nil, "g": "x"}, "h"}}
	dropNulls(m)
	want := "map[b:map[d:1] e:[map[g:x] h]]"
	if got := fmt.Sprint(m); got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

func TestIsDerived(t *testing.T) {
	labels := map[string]string{"app": "x"}
	replicas := int32(3)
	sts := func(image string, claims ...string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: appsv1.StatefulSetSpec{Replicas: &replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: image}}}}}}
		for _, c := range claims {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: c},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
		}
		return s
	}
	defaulted := sts("redis:7")
	defaulted.Spec.RevisionHistoryLimit = &replicas // set by the API server, not by us
	defaulted.Labels = map[string]string{"app": "x", "other": "y"}
	for _, tc := range []struct {
		name          string
		desired, live client.Object
		want          bool
	}{
		{"same", sts("redis:7"), sts("redis:7"), true},
		{"fields and labels others added", sts("redis:7"), defaulted, true},
		{"an owned field changed", sts("redis:7"), sts("redis:6"), false},
		// Claim templates are compared apart (the controllers recreate the StatefulSet).
		{"other claim templates", sts("redis:7", "data"), sts("redis:7"), true},
		{"a label removed", sts("redis:7"), &appsv1.StatefulSet{Spec: sts("redis:7").Spec}, false},
		{"ConfigMap data", &corev1.ConfigMap{Data: map[string]string{"a": "1"}}, &corev1.ConfigMap{Data: map[string]string{"a": "1"}}, true},
		{"ConfigMap data added", &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}, false},
		{"Secret data", &corev1.Secret{Data: map[string][]byte{"a": []byte("1")}}, &corev1.Secret{Data: map[string][]byte{"a": []byte("2")}}, false},
		{"Service ports", &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 6379}}}},
			&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 6379, Protocol: corev1.ProtocolTCP}}, ClusterIP: "10.0.0.1"}}, true},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudget{}, true},
		{"a kind it does not know", &corev1.Pod{}, &corev1.Pod{}, false},
	} {
		if got := isDerived(tc.desired, tc.live); got != tc.want {
			t.Errorf("%s: isDerived = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	notOwned := &NotOwnedError{Kind: "Service", Name: "rc-leader"}
	if want := "Service rc-leader exists and is not owned by this resource; rename or delete it"; notOwned.Error() != want {
		t.Errorf("%q, want %q", notOwned.Error(), want)
	}
	cause := errors.New("spec.selector: Invalid value")
	immutable := &ImmutableError{Kind: "StatefulSet", Name: "rc-leader", Err: cause}
	if !errors.Is(immutable, cause) {
		t.Error("an ImmutableError does not unwrap to the API server's error")
	}
	if !strings.Contains(immutable.Error(), RecreateStatefulSetAnnotation) || !strings.HasPrefix(immutable.Error(), "StatefulSet rc-leader cannot be changed in place") {
		t.Errorf("%q does not name the object and the annotation that lets it be recreated", immutable.Error())
	}
}

// fixture is an owner ConfigMap and a fake client holding objects, which fails the test on any
// write when readOnly.
func fixture(t *testing.T, readOnly bool, objects ...client.Object) (*corev1.ConfigMap, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: types.UID("owner-uid")}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append([]client.Object{owner}, objects...)...)
	if readOnly {
		fail := func(verb string) error { t.Errorf("unexpected %s", verb); return errors.New("no writes in this test") }
		b = b.WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return fail("create")
			},
			Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				return fail("patch")
			},
			Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
				return fail("apply")
			},
			Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				return fail("delete")
			},
		})
	}
	return owner, b.Build()
}

func controlledBy(owner *corev1.ConfigMap) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}}
}

func TestOwnedWritesNothing(t *testing.T) {
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: types.UID("owner-uid")}}
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", Labels: map[string]string{"app": "x"},
		OwnerReferences: controlledBy(owner)}, Data: map[string]string{"k": "v"}}
	hash, err := appliedHash(desired)
	if err != nil {
		t.Fatal(err)
	}
	applied := desired.DeepCopy()
	applied.Annotations = map[string]string{AppliedHashAnnotation: hash}
	stranger := desired.DeepCopy()
	stranger.OwnerReferences = nil
	deleting := applied.DeepCopy()
	deleting.Finalizers = []string{"example.com/hold"}
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name    string
		live    *corev1.ConfigMap
		wantErr bool
	}{
		{"the live object carries the digest of desired", applied, false},
		{"the object is being deleted", deleting, false},
		{"someone else's object of that name", stranger, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, c := fixture(t, true, tc.live)
			wrote, err := NewApplier().Owned(ctx, c, owner, desired.DeepCopy())
			var notOwned *NotOwnedError
			if tc.wantErr != errors.As(err, &notOwned) || (!tc.wantErr && err != nil) {
				t.Errorf("error %v, want a NotOwnedError: %v", err, tc.wantErr)
			}
			if notOwned != nil && (notOwned.Kind != "ConfigMap" || notOwned.Name != "cm") {
				t.Errorf("NotOwnedError %+v", notOwned)
			}
			if wrote {
				t.Error("reported a write")
			}
		})
	}
}

func TestOwnedRefusesWithoutAnApplier(t *testing.T) {
	owner, c := fixture(t, true)
	var a *Applier
	if _, err := a.Owned(context.Background(), c, owner, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}); err == nil {
		t.Error("a nil Applier wrote")
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: types.UID("owner-uid")}}
	ours := map[string]string{builder.LabelInstance: "owner", builder.LabelManagedBy: builder.ManagedByValue}
	meta := func(name string, labels map[string]string, controlled bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}
		if controlled {
			m.OwnerReferences = controlledBy(owner)
		}
		return m
	}
	existing := []client.Object{
		&appsv1.StatefulSet{ObjectMeta: meta("owner-leader", ours, true)},
		&appsv1.StatefulSet{ObjectMeta: meta("owner-follower", ours, true)},         // no longer wanted
		&corev1.Service{ObjectMeta: meta("owner-leader", ours, true)},               // wanted
		&corev1.Service{ObjectMeta: meta("owner-metrics", ours, true)},              // no longer wanted
		&corev1.Service{ObjectMeta: meta("owner-handmade", ours, false)},            // not controlled by owner
		&corev1.ConfigMap{ObjectMeta: meta("owner-config", nil, true)},              // not labelled as ours
		&corev1.Secret{ObjectMeta: meta("owner-acl", ours, true)},                   // retained
		&policyv1.PodDisruptionBudget{ObjectMeta: meta("owner-leader", ours, true)}, // no longer wanted
	}
	_, c := fixture(t, false, existing...)
	desired := &builder.Objects{
		StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "owner-leader", Namespace: "ns"}}},
		Services:     []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "owner-leader", Namespace: "ns"}}},
		Retained:     []string{"Secret/owner-acl"},
	}
	deleted, err := Prune(ctx, c, owner, desired)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"StatefulSet/owner-follower", "Service/owner-metrics", "PodDisruptionBudget/owner-leader"}
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	for _, obj := range existing {
		live := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		gvk, _ := c.GroupVersionKindFor(obj)
		gone := err != nil
		if gone != slices.Contains(want, gvk.Kind+"/"+obj.GetName()) {
			t.Errorf("%s/%s: get %v", gvk.Kind, obj.GetName(), err)
		}
	}
}

// An object changed between the read and the hand-over of its legacy fields (the patch tests
// its resourceVersion) is no failure: the change's event brings the next reconcile, which
// hands them over then.
func TestLegacyHandOverThatConflictsWaitsForTheNextReconcile(t *testing.T) {
	ctx := context.Background()
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "old-binary", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}}}`)}}},
		Data: map[string]string{"k": "v"}}
	patched := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			patched++
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("the object has been modified"))
		},
	}).Build()
	upgraded, err := NewApplier("old-binary").upgradeLegacyFields(ctx, c, "ConfigMap", live)
	if patched != 1 {
		t.Fatalf("the hand-over was patched %d times, want once (the test must reach the patch)", patched)
	}
	if err != nil || upgraded {
		t.Errorf("a conflicting hand-over: upgraded %v, error %v; want neither", upgraded, err)
	}
}
