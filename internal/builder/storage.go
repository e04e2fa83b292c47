package builder

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AnnotationStorageCapacity on a StatefulSet records, in bytes, the size of its data volumes:
// the largest the spec ever asked for, since volumes grow and never shrink.
const AnnotationStorageCapacity = "storageCapacity"

// ClaimResize is a PVC whose storage request must grow to Size.
type ClaimResize struct {
	Name string
	Size resource.Quantity
}

// IgnoredShrink is a claim template whose spec asks less than its volumes already have.
type IgnoredShrink struct {
	Template        string
	Requested, Kept resource.Quantity
}

// StoragePlan is what growing a StatefulSet's volumes in place takes.
type StoragePlan struct {
	// Sizes is the size of each claim template: the spec's, or the larger one the StatefulSet
	// already has or recorded.
	Sizes map[string]resource.Quantity
	// Resize are the bound claims whose request is below their template's size.
	Resize []ClaimResize
	// Pending are the bound claims whose reported capacity is still below their template's size.
	Pending []string
	// Shrinks are the templates whose smaller request is ignored.
	Shrinks []IgnoredShrink
	// Grown: the live StatefulSet's claim templates are smaller than Sizes, and differ in
	// nothing else, so the StatefulSet is to be recreated with them once Pending is empty.
	Grown bool
}

// PlanStorage decides how the volumes of the live StatefulSet (nil when there is none yet) and
// its claims grow to the claim templates of desired. A smaller request is never applied: the
// template keeps the larger size and the shrink is reported.
func PlanStorage(desired, live *appsv1.StatefulSet, claims []corev1.PersistentVolumeClaim) StoragePlan {
	plan := StoragePlan{Sizes: map[string]resource.Quantity{}}
	known := map[string]resource.Quantity{}
	if live != nil {
		for _, t := range live.Spec.VolumeClaimTemplates {
			known[t.Name] = storageOf(t.Spec.Resources.Requests)
		}
		if recorded, err := strconv.ParseInt(live.Annotations[AnnotationStorageCapacity], 10, 64); err == nil {
			if data := dataTemplate(live); data != "" && resource.NewQuantity(recorded, resource.BinarySI).Cmp(known[data]) > 0 {
				known[data] = *resource.NewQuantity(recorded, resource.BinarySI)
			}
		}
	}
	for _, t := range desired.Spec.VolumeClaimTemplates {
		requested := storageOf(t.Spec.Resources.Requests)
		size := requested
		if had, ok := known[t.Name]; ok && had.Cmp(requested) > 0 {
			size = had
			plan.Shrinks = append(plan.Shrinks, IgnoredShrink{Template: t.Name, Requested: requested, Kept: had})
		}
		plan.Sizes[t.Name] = size
	}
	for i := range claims {
		claim := &claims[i]
		template, ok := claimTemplateOf(claim.Name, desired.Name)
		size, wanted := plan.Sizes[template]
		if !ok || !wanted || claim.DeletionTimestamp != nil || claim.Status.Phase != corev1.ClaimBound {
			continue // an unbound claim cannot be resized; it is provisioned at its request
		}
		if requested := storageOf(claim.Spec.Resources.Requests); requested.Cmp(size) < 0 {
			plan.Resize = append(plan.Resize, ClaimResize{Name: claim.Name, Size: size})
		}
		if capacity := storageOf(claim.Status.Capacity); capacity.Cmp(size) < 0 {
			plan.Pending = append(plan.Pending, claim.Name)
		}
	}
	plan.Grown = live != nil && onlyGrown(live.Spec.VolumeClaimTemplates, desired.Spec.VolumeClaimTemplates, plan.Sizes)
	return plan
}

// Apply writes the plan into a desired StatefulSet: the template sizes and the recorded
// capacity. While claims are still resizing (or a resize is refused), keepLive leaves the
// templates as live has them, so that the StatefulSet is recreated only once the claims are done.
func (p StoragePlan) Apply(desired, live *appsv1.StatefulSet, keepLive bool) {
	for i := range desired.Spec.VolumeClaimTemplates {
		t := &desired.Spec.VolumeClaimTemplates[i]
		size := p.Sizes[t.Name]
		if keepLive && live != nil {
			for _, l := range live.Spec.VolumeClaimTemplates {
				if l.Name == t.Name {
					size = storageOf(l.Spec.Resources.Requests)
				}
			}
		}
		if t.Spec.Resources.Requests == nil {
			t.Spec.Resources.Requests = corev1.ResourceList{}
		}
		t.Spec.Resources.Requests[corev1.ResourceStorage] = size
	}
	if data := dataTemplate(desired); data != "" {
		size := p.Sizes[data]
		if desired.Annotations == nil {
			desired.Annotations = map[string]string{}
		}
		desired.Annotations[AnnotationStorageCapacity] = strconv.FormatInt(size.Value(), 10)
	}
}

// onlyGrown reports whether the desired templates, at the planned sizes, differ from the live
// ones by larger storage requests and nothing else.
func onlyGrown(live, desired []corev1.PersistentVolumeClaim, sizes map[string]resource.Quantity) bool {
	if len(live) != len(desired) {
		return false
	}
	grown := false
	for i, d := range desired {
		l := live[i]
		if d.Name != l.Name {
			return false
		}
		size, had := sizes[d.Name], storageOf(l.Spec.Resources.Requests)
		if size.Cmp(had) > 0 {
			grown = true
		}
		spec := *d.Spec.DeepCopy()
		spec.Resources.Requests = l.Spec.Resources.Requests.DeepCopy()
		if !equality.Semantic.DeepDerivative(spec, l.Spec) {
			return false
		}
	}
	return grown
}

// dataTemplate is the name of the StatefulSet's data claim template, "" without one.
func dataTemplate(sts *appsv1.StatefulSet) string {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name != nodeConfVolume {
			return t.Name
		}
	}
	return ""
}

// claimTemplateOf is the template of a claim named <template>-<stsName>-<ordinal>.
func claimTemplateOf(claimName, stsName string) (string, bool) {
	i := strings.LastIndex(claimName, "-"+stsName+"-")
	if i <= 0 {
		return "", false
	}
	ordinal := claimName[i+len(stsName)+2:]
	if _, err := strconv.ParseUint(ordinal, 10, 32); err != nil {
		return "", false
	}
	return claimName[:i], true
}

func storageOf(list corev1.ResourceList) resource.Quantity {
	return list[corev1.ResourceStorage].DeepCopy()
}
