//go:build integration

package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/internal/builder"
)

// TestApplyOwnedRemovesWhatItNoLongerSets applies objects of every kind the builders make
// straight through Applier.Owned: a label, an annotation and a data key the operator applied and
// then leaves out are removed, what another manager set stays, and an unchanged desired
// object is not written again.
func TestApplyOwnedRemovesWhatItNoLongerSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, "")
	owner := ownerInNamespace(t, c)
	ns := owner.Namespace
	a := NewApplier()
	isController := true
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &isController}
	meta := func(extra bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "applied", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref},
			Labels: map[string]string{"kept": "1"}, Annotations: map[string]string{"kept": "1"}}
		if extra {
			m.Labels["dropped"], m.Annotations["dropped"] = "1", "1"
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		build func(extra bool) client.Object
		check func(obj client.Object, extra bool) error
	}{
		{"ConfigMap", func(extra bool) client.Object {
			cm := &corev1.ConfigMap{ObjectMeta: meta(extra), Data: map[string]string{"kept": "1"}}
			if extra {
				cm.Data["dropped"] = "1"
			}
			return cm
		}, func(obj client.Object, extra bool) error {
			if _, has := obj.(*corev1.ConfigMap).Data["dropped"]; has != extra {
				return fmt.Errorf("data %v", obj.(*corev1.ConfigMap).Data)
			}
			return nil
		}},
		{"Secret", func(extra bool) client.Object {
			s := &corev1.Secret{ObjectMeta: meta(extra), Data: map[string][]byte{"kept": []byte("1")}}
			if extra {
				s.Data["dropped"] = []byte("1")
			}
			return s
		}, func(obj client.Object, extra bool) error {
			if _, has := obj.(*corev1.Secret).Data["dropped"]; has != extra {
				return fmt.Errorf("data keys %d", len(obj.(*corev1.Secret).Data))
			}
			return nil
		}},
		{"Service", func(extra bool) client.Object {
			s := &corev1.Service{ObjectMeta: meta(extra), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"},
				Ports: []corev1.ServicePort{{Name: "redis", Port: 6379, TargetPort: intstr.FromInt32(6379)}}}}
			if extra {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "extra", Port: 9121, TargetPort: intstr.FromInt32(9121)})
			}
			return s
		}, func(obj client.Object, extra bool) error {
			if n := len(obj.(*corev1.Service).Spec.Ports); (n == 2) != extra {
				return fmt.Errorf("%d ports", n)
			}
			return nil
		}},
		{"PodDisruptionBudget", func(extra bool) client.Object {
			one := &intstr.IntOrString{Type: intstr.Int, IntVal: 1}
			p := &policyv1.PodDisruptionBudget{ObjectMeta: meta(extra), Spec: policyv1.PodDisruptionBudgetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
			if extra {
				p.Spec.MinAvailable = one
			} else {
				p.Spec.MaxUnavailable = one
			}
			return p
		}, func(obj client.Object, extra bool) error {
			spec := obj.(*policyv1.PodDisruptionBudget).Spec
			if (spec.MinAvailable != nil) != extra || (spec.MaxUnavailable != nil) == extra {
				return fmt.Errorf("minAvailable %v maxUnavailable %v", spec.MinAvailable, spec.MaxUnavailable)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, extra := range []bool{true, false, false} {
				desired := tc.build(extra)
				desired.SetName("applied-" + strings.ToLower(tc.name))
				wrote, err := a.Owned(ctx, c, owner, desired)
				if err != nil {
					t.Fatalf("apply %d: %v", i, err)
				}
				if want := i < 2; wrote != want {
					t.Errorf("apply %d (extra %v) wrote %v, want %v", i, extra, wrote, want)
				}
				live := tc.build(extra)
				if err := c.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
					t.Fatal(err)
				}
				if err := tc.check(live, extra); err != nil {
					t.Errorf("after apply %d (extra %v): %v", i, extra, err)
				}
				if _, has := live.GetLabels()["dropped"]; has != extra {
					t.Errorf("after apply %d: labels %v", i, live.GetLabels())
				}
				if _, has := live.GetAnnotations()["dropped"]; has != extra {
					t.Errorf("after apply %d: annotations %v", i, live.GetAnnotations())
				}
				if i == 0 {
					foreign := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"foreign":"1"}}}`))
					if err := c.Patch(ctx, live, foreign, client.FieldOwner("someone-else")); err != nil {
						t.Fatal(err)
					}
				} else if live.GetLabels()["foreign"] != "1" {
					t.Errorf("after apply %d: the label someone else set is gone: %v", i, live.GetLabels())
				}
			}
		})
	}
	// An object of that name we do not control is refused, not adopted.
	stranger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns}}
	if err := c.Create(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref}}}
	var notOwned *NotOwnedError
	if _, err := a.Owned(ctx, c, owner, desired); !errors.As(err, &notOwned) {
		t.Errorf("applying over an object we do not own: %v, want NotOwnedError", err)
	}
}

// TestLegacyFieldsAreHandedOver: an object an earlier version of the operator made with create
// and merge patches, under the manager the API server named after the program, loses the
// fields the spec no longer asks for once an Applier told that name applies it; an Applier not
// told leaves them to that manager.
func TestLegacyFieldsAreHandedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, "")
	earlier := newClient(t, "redis-operator-v0") // what the earlier version wrote under
	owner := ownerInNamespace(t, c)
	isController := true
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &isController}
	for _, tc := range []struct {
		name        string
		applier     *Applier
		handedOver  bool
		idleApplies bool
	}{
		{"told", NewApplier("redis-operator-v0"), true, true},
		{"not-told", NewApplier(), false, false},
	} {
		made := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: owner.Namespace, OwnerReferences: []metav1.OwnerReference{ref},
			Labels: map[string]string{"kept": "1", "dropped": "1"}}, Data: map[string]string{"kept": "1", "dropped": "1"}}
		if err := earlier.Create(ctx, made); err != nil {
			t.Fatal(err)
		}
		desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: owner.Namespace, OwnerReferences: []metav1.OwnerReference{ref},
			Labels: map[string]string{"kept": "1"}}, Data: map[string]string{"kept": "1"}}
		wrote, err := tc.applier.Owned(ctx, c, owner, desired)
		if err != nil || !wrote {
			t.Fatalf("%s: wrote %v, error %v", tc.name, wrote, err)
		}
		var live corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(desired), &live); err != nil {
			t.Fatal(err)
		}
		_, labelLeft := live.Labels["dropped"]
		_, dataLeft := live.Data["dropped"]
		if labelLeft == tc.handedOver || dataLeft == tc.handedOver {
			t.Errorf("%s: labels %v data %v, want the dropped ones removed: %v", tc.name, live.Labels, live.Data, tc.handedOver)
		}
		for _, entry := range live.ManagedFields {
			if entry.Manager == "redis-operator-v0" && tc.handedOver {
				t.Errorf("%s: the earlier manager still owns fields: %+v", tc.name, entry)
			}
		}
		if live.Labels["kept"] != "1" || live.Data["kept"] != "1" {
			t.Errorf("%s: labels %v data %v", tc.name, live.Labels, live.Data)
		}
		if tc.idleApplies {
			if wrote, err := tc.applier.Owned(ctx, c, owner, desired); wrote || err != nil {
				t.Errorf("%s: applying it again wrote %v, error %v", tc.name, wrote, err)
			}
		}
	}
}

// TestPruneDeletesWhatTheSpecNoLongerAsksFor: Prune deletes, in the background, the owned
// objects labelled as the operator's that the build left out, and nothing else.
func TestPruneDeletesWhatTheSpecNoLongerAsksFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, "")
	owner := ownerInNamespace(t, c)
	isController := true
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &isController}
	ours := map[string]string{builder.LabelInstance: owner.Name, builder.LabelManagedBy: builder.ManagedByValue}
	a := NewApplier()
	wanted := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: owner.Namespace, Labels: ours,
		OwnerReferences: []metav1.OwnerReference{ref}}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 6379}}}}
	unwanted := wanted.DeepCopy()
	unwanted.Name = "owner-metrics"
	for _, obj := range []client.Object{wanted, unwanted} {
		if _, err := a.Owned(ctx, c, owner, obj); err != nil {
			t.Fatal(err)
		}
	}
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "owner-foreign", Namespace: owner.Namespace, Labels: ours},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 6379}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	deleted, err := Prune(ctx, c, owner, &builder.Objects{Services: []*corev1.Service{wanted}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deleted) != "[Service/owner-metrics]" {
		t.Errorf("deleted %v", deleted)
	}
	for _, svc := range []*corev1.Service{wanted, unwanted, foreign} {
		err := c.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
		if gone := apierrors.IsNotFound(err); gone != (svc == unwanted) {
			t.Errorf("Service %s: %v", svc.Name, err)
		}
	}
}

// TestSharedAddsEachOwnerAndAdoptsNothing: a shared object is made with its first owner's
// reference, takes the second's beside it (neither a controller), is not written again when
// nothing changed, and an object of the name without the mark is refused, not taken over.
func TestSharedAddsEachOwnerAndAdoptsNothing(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, FieldManager)
	first := ownerInNamespace(t, c)
	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: first.Namespace}}
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	const mark = "example.com/store"
	desired := func() *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: first.Namespace, Labels: map[string]string{mark: "store"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "s3", Port: 8333, TargetPort: intstr.FromInt32(8333), Protocol: corev1.ProtocolTCP}}},
		}
	}
	a := NewApplier()
	for i, owner := range []*corev1.ConfigMap{first, second, second} {
		wrote, err := a.Shared(ctx, c, owner, desired(), mark)
		if err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		if want := i < 2; wrote != want {
			t.Errorf("apply %d wrote %v, want %v", i, wrote, want)
		}
	}
	var live corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: first.Namespace, Name: "store"}, &live); err != nil {
		t.Fatal(err)
	}
	refs := live.OwnerReferences
	if len(refs) != 2 || refs[0].UID != first.UID || refs[1].UID != second.UID || metav1.GetControllerOf(&live) != nil {
		t.Fatalf("owner references %+v: want both owners, neither a controller", refs)
	}

	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: first.Namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	d := desired()
	d.Name = "foreign"
	_, err := a.Shared(ctx, c, first, d, mark)
	var notOwned *NotOwnedError
	if !errors.As(err, &notOwned) {
		t.Fatalf("an unmarked Service of the name: got %v, want a NotOwnedError", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.OwnerReferences) != 0 || live.Spec.Ports[0].Port != 80 {
		t.Fatalf("the unmarked Service was changed: %+v", live)
	}
}

// TestSharedClaimStoreIsNotSentAgain: the claim store's objects, as the builder makes them,
// hold after the API server's defaults what was applied, so a second Shared sends nothing.
func TestSharedClaimStoreIsNotSentAgain(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, FieldManager)
	owner := ownerInNamespace(t, c)
	st, err := builder.BuildClaimStore(builder.ClaimStoreInput{Namespace: owner.Namespace,
		Claim: v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "redis"}, Image: builder.DefaultClaimStoreImage,
		InitImage: builder.DefaultClaimStoreInitImage, AccessKeyID: "key-id", SecretAccessKey: "secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	a := NewApplier()
	for round, want := range []bool{true, false} {
		for _, obj := range []client.Object{st.Secret, st.Service, st.Deployment} {
			wrote, err := a.Shared(ctx, c, owner, obj.DeepCopyObject().(client.Object), builder.LabelBackupStore)
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, obj.GetName(), err)
			}
			if wrote != want {
				t.Errorf("round %d: %T sent %v, want %v", round, obj, wrote, want)
			}
		}
	}
}
