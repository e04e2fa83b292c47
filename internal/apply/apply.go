package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldManager is the name the operator applies its objects under. Server-side apply removes
// from an object what this manager applied before and applies no more, and leaves alone what
// other managers (users, other controllers, the API server's defaults) set.
const FieldManager = "redis-operator"

// AppliedHashAnnotation holds a digest of the configuration last applied to an object, so that
// an idle reconcile can tell, without a request, that nothing it wants has changed.
const AppliedHashAnnotation = "redis.opstreelabs.in/applied-hash"

// Applier writes the objects a resource owns with server-side apply. The program builds one
// (NewApplier) and gives it to every reconciler; it holds nothing that changes after that.
type Applier struct {
	// legacyManagers are the managers whose fields, written with create or update rather than
	// apply, are handed to FieldManager before an object is applied.
	legacyManagers sets.Set[string]
}

// NewApplier returns an Applier that takes over, as FieldManager's, the fields written without
// apply under FieldManager itself (the operator's own creates) and under each of
// legacyManagers: the names earlier versions of the operator wrote objects under with create
// and merge patches (they set no field manager, so the API server took the program's name, as
// filepath.Base(os.Args[0]) gives it). A field the spec no longer asks for is then removed from
// objects made before server-side apply too.
func NewApplier(legacyManagers ...string) *Applier {
	return &Applier{legacyManagers: sets.New(FieldManager).Insert(legacyManagers...)}
}

// errNoApplier is what a reconciler made without an Applier gets, rather than a panic.
var errNoApplier = errors.New("no Applier: give the reconciler the one apply.NewApplier made for the operator")

// Owned makes the object match desired with server-side apply and returns whether it wrote.
// desired is the complete state the operator wants: what it applied before and leaves out now
// is removed. It writes nothing when the live object carries the digest of desired and still
// holds every field desired sets (nobody changed them since). An object of that name that owner
// does not control is never taken over: Owned returns a *NotOwnedError. A change the API server
// refuses as invalid (a field it will not update in place) is returned as an *ImmutableError.
func (a *Applier) Owned(ctx context.Context, c client.Client, owner metav1.Object, desired client.Object) (wrote bool, err error) {
	if a == nil {
		return false, errNoApplier
	}
	gvk, err := apiutil.GVKForObject(desired, c.Scheme())
	if err != nil {
		return false, fmt.Errorf("kind of %s: %w", desired.GetName(), err)
	}
	kind := gvk.Kind
	live := desired.DeepCopyObject().(client.Object)
	err = c.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return true, a.create(ctx, c, kind, desired)
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s: %w", kind, desired.GetName(), err)
	}
	if !metav1.IsControlledBy(live, owner) {
		return false, &NotOwnedError{Kind: kind, Name: desired.GetName()}
	}
	if live.GetDeletionTimestamp() != nil {
		return false, nil // being recreated: its delete event brings the owner back to create it
	}
	upgraded, err := a.upgradeLegacyFields(ctx, c, kind, live)
	if err != nil {
		return false, err
	}
	hash, err := appliedHash(desired)
	if err != nil {
		return false, err
	}
	if !upgraded && live.GetAnnotations()[AppliedHashAnnotation] == hash && isDerived(desired, live) {
		return false, nil
	}
	applied := desired.DeepCopyObject().(client.Object)
	if sts, ok := applied.(*appsv1.StatefulSet); ok {
		// Claim templates cannot change on a live StatefulSet: a change is acted on apart (the
		// controllers recreate the StatefulSet), so that it does not hold back every other field.
		sts.Spec.VolumeClaimTemplates = live.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates
	}
	setAnnotation(applied, AppliedHashAnnotation, hash)
	config, err := applyConfiguration(applied, gvk.GroupVersion().String(), kind)
	if err != nil {
		return false, err
	}
	if err := c.Apply(ctx, config, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsInvalid(err) {
			return false, &ImmutableError{Kind: kind, Name: desired.GetName(), Err: err}
		}
		return false, fmt.Errorf("apply %s %s: %w", kind, desired.GetName(), err)
	}
	return true, nil
}

// create makes a new object. It is a create, not an apply, so that an object of that name the
// cache does not show (made an instant ago, or outside what the cache watches) is refused
// instead of adopted; its fields are then handed to the apply manager.
func (a *Applier) create(ctx context.Context, c client.Client, kind string, desired client.Object) error {
	hash, err := appliedHash(desired)
	if err != nil {
		return err
	}
	obj := desired.DeepCopyObject().(client.Object)
	setAnnotation(obj, AppliedHashAnnotation, hash)
	if err := c.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		// AlreadyExists: not in the cache yet, or not ours; the next reconcile sees which.
		return fmt.Errorf("create %s %s: %w", kind, desired.GetName(), err)
	}
	_, err = a.upgradeLegacyFields(ctx, c, kind, obj)
	return err
}

// upgradeLegacyFields hands the fields that this operator set with create or update (not
// apply) to its apply manager, once per object, and reports whether it did.
func (a *Applier) upgradeLegacyFields(ctx context.Context, c client.Client, kind string, live client.Object) (bool, error) {
	// Asked cheaply first: the upgrade decodes field sets, which an idle reconcile of an
	// object already owned by apply need not pay for.
	if !slices.ContainsFunc(live.GetManagedFields(), a.isLegacyEntry) {
		return false, nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, a.legacyManagers, FieldManager)
	if err != nil {
		return false, fmt.Errorf("managed fields of %s %s: %w", kind, live.GetName(), err)
	}
	if patch == nil {
		return false, nil
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			// Changed since it was read (the patch tests its resourceVersion): that change's
			// event brings the next reconcile, which hands the fields over then.
			return false, nil
		}
		return false, fmt.Errorf("hand the fields of %s %s to %s: %w", kind, live.GetName(), FieldManager, err)
	}
	return true, nil
}

// isLegacyEntry: fields our earlier versions (or our own create) wrote without apply.
func (a *Applier) isLegacyEntry(entry metav1.ManagedFieldsEntry) bool {
	return entry.Operation == metav1.ManagedFieldsOperationUpdate && entry.Subresource == "" && a.legacyManagers.Has(entry.Manager)
}

// appliedHash is the digest of what the operator wants an object to be.
func appliedHash(desired client.Object) (string, error) {
	obj := desired.DeepCopyObject().(client.Object)
	annotations := maps.Clone(obj.GetAnnotations())
	delete(annotations, AppliedHashAnnotation)
	obj.SetAnnotations(annotations)
	data, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", desired.GetName(), err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// applyConfiguration turns a typed object into the configuration to apply: its fields without
// the status (written by others through the status subresource) and without null values
// (fields a typed object cannot leave out, such as creationTimestamp).
func applyConfiguration(obj client.Object, apiVersion, kind string) (runtime.ApplyConfiguration, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", kind, obj.GetName(), err)
	}
	delete(content, "status")
	dropNulls(content)
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetResourceVersion("")
	u.SetManagedFields(nil)
	return client.ApplyConfigurationFromUnstructured(u), nil
}

func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
}

func setAnnotation(obj client.Object, key, value string) {
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	obj.SetAnnotations(annotations)
}

// isDerived reports whether live still holds every label, annotation and field desired sets:
// false when someone changed a field the operator owns.
func isDerived(desired, live client.Object) bool {
	if !subset(desired.GetLabels(), live.GetLabels()) || !subset(desired.GetAnnotations(), live.GetAnnotations()) {
		return false
	}
	switch d := desired.(type) {
	case *appsv1.StatefulSet:
		spec := *d.Spec.DeepCopy()
		spec.VolumeClaimTemplates = live.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates
		return equality.Semantic.DeepDerivative(spec, live.(*appsv1.StatefulSet).Spec)
	case *appsv1.Deployment:
		return equality.Semantic.DeepDerivative(d.Spec, live.(*appsv1.Deployment).Spec)
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

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Shared makes desired match with server-side apply, as Owned does, for an object several
// owners share with references that are not controllers' (the claim store the RedisBackups on
// one claim use): owner's reference joins those the live object has, and the object goes away
// with the last of its owners. An object of that name without desired's label mark (key and
// value), or with a controller, was not made this way and is never taken over: Shared returns
// a *NotOwnedError. It writes nothing when nothing it wants changed.
func (a *Applier) Shared(ctx context.Context, c client.Client, owner client.Object, desired client.Object, mark string) (wrote bool, err error) {
	if a == nil {
		return false, errNoApplier
	}
	gvk, err := apiutil.GVKForObject(desired, c.Scheme())
	if err != nil {
		return false, fmt.Errorf("kind of %s: %w", desired.GetName(), err)
	}
	ownerGVK, err := apiutil.GVKForObject(owner, c.Scheme())
	if err != nil {
		return false, fmt.Errorf("kind of %s: %w", owner.GetName(), err)
	}
	kind := gvk.Kind
	ref := metav1.OwnerReference{APIVersion: ownerGVK.GroupVersion().String(), Kind: ownerGVK.Kind, Name: owner.GetName(), UID: owner.GetUID()}
	live := desired.DeepCopyObject().(client.Object)
	err = c.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		obj := desired.DeepCopyObject().(client.Object)
		obj.SetOwnerReferences([]metav1.OwnerReference{ref})
		return true, a.create(ctx, c, kind, obj)
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s: %w", kind, desired.GetName(), err)
	}
	value, marked := live.GetLabels()[mark]
	if !marked || value != desired.GetLabels()[mark] || metav1.GetControllerOf(live) != nil {
		return false, &NotOwnedError{Kind: kind, Name: desired.GetName()}
	}
	if live.GetDeletionTimestamp() != nil {
		return false, nil // going with its last owner: made anew once it is gone
	}
	refs := live.GetOwnerReferences()
	if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
		refs = append(slices.Clone(refs), ref)
	}
	applied := desired.DeepCopyObject().(client.Object)
	applied.SetOwnerReferences(refs)
	hash, err := appliedHash(applied)
	if err != nil {
		return false, err
	}
	if live.GetAnnotations()[AppliedHashAnnotation] == hash && isDerived(applied, live) &&
		equality.Semantic.DeepEqual(refs, live.GetOwnerReferences()) {
		return false, nil
	}
	setAnnotation(applied, AppliedHashAnnotation, hash)
	config, err := applyConfiguration(applied, gvk.GroupVersion().String(), kind)
	if err != nil {
		return false, err
	}
	if err := c.Apply(ctx, config, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply %s %s: %w", kind, desired.GetName(), err)
	}
	return true, nil
}
