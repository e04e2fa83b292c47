package builder

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testSts = "c-leader"

// stsWithClaims is a StatefulSet with a data template and, when nodeConf is not "", a
// node-conf template; recorded is its storageCapacity annotation ("" for none).
func stsWithClaims(data, nodeConf, recorded string) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: testSts}}
	if recorded != "" {
		sts.Annotations = map[string]string{AnnotationStorageCapacity: recorded}
	}
	add := func(name, size string) {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			},
		})
	}
	add(testSts, data)
	if nodeConf != "" {
		add(nodeConfVolume, nodeConf)
	}
	return sts
}

// boundClaim is a bound claim of template at ordinal, requesting request, with capacity
// reported ("" for none).
func boundClaim(template string, ordinal int, request, capacity string) corev1.PersistentVolumeClaim {
	c := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", template, testSts, ordinal)},
		Spec: corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	if capacity != "" {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
	return c
}

func TestPlanStorage(t *testing.T) {
	unbound := boundClaim(testSts, 2, "1Gi", "")
	unbound.Status.Phase = corev1.ClaimPending
	otherSts := boundClaim(testSts, 0, "1Gi", "1Gi")
	otherSts.Name = testSts + "-c-follower-0"
	changedClass := stsWithClaims("2Gi", "", "")
	class := "slow"
	changedClass.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = &class

	tests := []struct {
		name                  string
		desired, live         *appsv1.StatefulSet
		claims                []corev1.PersistentVolumeClaim
		wantSizes             map[string]string
		wantResize            []string // name=size
		wantPending, wantShrk []string
		wantGrown             bool
	}{
		{
			name:      "new StatefulSet: the spec's sizes, nothing to resize",
			desired:   stsWithClaims("1Gi", "", ""),
			wantSizes: map[string]string{testSts: "1Gi"},
		},
		{
			name:      "unchanged: nothing to do",
			desired:   stsWithClaims("1Gi", "", ""),
			live:      stsWithClaims("1Gi", "", "1073741824"),
			claims:    []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "1Gi", "1Gi")},
			wantSizes: map[string]string{testSts: "1Gi"},
		},
		{
			name:    "growth of data and node-conf resizes every bound claim of this StatefulSet",
			desired: stsWithClaims("2Gi", "200Mi", ""),
			live:    stsWithClaims("1Gi", "100Mi", "1073741824"),
			claims: []corev1.PersistentVolumeClaim{
				boundClaim(testSts, 0, "1Gi", "1Gi"), boundClaim(testSts, 1, "1Gi", "1Gi"),
				boundClaim(nodeConfVolume, 0, "100Mi", "100Mi"), unbound, otherSts,
			},
			wantSizes: map[string]string{testSts: "2Gi", nodeConfVolume: "200Mi"},
			wantResize: []string{
				testSts + "-" + testSts + "-0=2Gi", testSts + "-" + testSts + "-1=2Gi", nodeConfVolume + "-" + testSts + "-0=200Mi",
			},
			wantPending: []string{testSts + "-" + testSts + "-0", testSts + "-" + testSts + "-1", nodeConfVolume + "-" + testSts + "-0"},
			wantGrown:   true,
		},
		{
			name:        "requests patched, capacity not yet reported: pending, nothing to patch",
			desired:     stsWithClaims("2Gi", "", ""),
			live:        stsWithClaims("1Gi", "", "2147483648"),
			claims:      []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "2Gi", "1Gi")},
			wantSizes:   map[string]string{testSts: "2Gi"},
			wantPending: []string{testSts + "-" + testSts + "-0"},
			wantGrown:   true,
		},
		{
			name:      "resized claims, StatefulSet still at the old size: grown, ready to recreate",
			desired:   stsWithClaims("2Gi", "", ""),
			live:      stsWithClaims("1Gi", "", "2147483648"),
			claims:    []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "2Gi", "2Gi")},
			wantSizes: map[string]string{testSts: "2Gi"},
			wantGrown: true,
		},
		{
			name:      "shrink is ignored: the template keeps the larger size, no claim touched",
			desired:   stsWithClaims("1Gi", "50Mi", ""),
			live:      stsWithClaims("2Gi", "100Mi", "2147483648"),
			claims:    []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "2Gi", "2Gi")},
			wantSizes: map[string]string{testSts: "2Gi", nodeConfVolume: "100Mi"},
			wantShrk:  []string{testSts, nodeConfVolume},
		},
		{
			name:      "shrink below the recorded size of a StatefulSet not yet recreated is ignored too",
			desired:   stsWithClaims("1Gi", "", ""),
			live:      stsWithClaims("1Gi", "", "2147483648"),
			claims:    []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "2Gi", "2Gi")},
			wantSizes: map[string]string{testSts: "2Gi"},
			wantShrk:  []string{testSts},
			wantGrown: true,
		},
		{
			name:       "growth with another template change: claims grow, the StatefulSet waits for permission",
			desired:    changedClass,
			live:       stsWithClaims("1Gi", "", ""),
			claims:     []corev1.PersistentVolumeClaim{boundClaim(testSts, 0, "1Gi", "1Gi")},
			wantSizes:  map[string]string{testSts: "2Gi"},
			wantResize: []string{testSts + "-" + testSts + "-0=2Gi"},
			wantPending: []string{
				testSts + "-" + testSts + "-0",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanStorage(tt.desired, tt.live, tt.claims)
			for name, want := range tt.wantSizes {
				if got := plan.Sizes[name]; got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("size of %s = %s, want %s", name, got.String(), want)
				}
			}
			if len(plan.Sizes) != len(tt.wantSizes) {
				t.Errorf("sizes = %v, want %v", plan.Sizes, tt.wantSizes)
			}
			var resize []string
			for _, r := range plan.Resize {
				resize = append(resize, r.Name+"="+r.Size.String())
			}
			if !slices.Equal(resize, tt.wantResize) {
				t.Errorf("resize = %v, want %v", resize, tt.wantResize)
			}
			if !slices.Equal(plan.Pending, tt.wantPending) {
				t.Errorf("pending = %v, want %v", plan.Pending, tt.wantPending)
			}
			var shrinks []string
			for _, s := range plan.Shrinks {
				shrinks = append(shrinks, s.Template)
			}
			if !slices.Equal(shrinks, tt.wantShrk) {
				t.Errorf("shrinks = %v, want %v", shrinks, tt.wantShrk)
			}
			if plan.Grown != tt.wantGrown {
				t.Errorf("grown = %v, want %v", plan.Grown, tt.wantGrown)
			}
		})
	}
}

func TestStoragePlanApply(t *testing.T) {
	live := stsWithClaims("1Gi", "100Mi", "1073741824")
	plan := PlanStorage(stsWithClaims("2Gi", "200Mi", ""), live, nil)

	waiting := stsWithClaims("2Gi", "200Mi", "")
	plan.Apply(waiting, live, true)
	if got := waiting.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("while claims resize the template keeps the live size, got %s", got.String())
	}
	if got := waiting.Annotations[AnnotationStorageCapacity]; got != "2147483648" {
		t.Errorf("storageCapacity = %q, want the new size in bytes at once", got)
	}

	done := stsWithClaims("2Gi", "200Mi", "")
	plan.Apply(done, live, false)
	if got := done.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("200Mi")) != 0 {
		t.Errorf("node-conf template = %s, want 200Mi", got.String())
	}

	shrunk := stsWithClaims("1Gi", "", "")
	PlanStorage(shrunk, stsWithClaims("2Gi", "", "2147483648"), nil).Apply(shrunk, nil, false)
	if got := shrunk.Annotations[AnnotationStorageCapacity]; got != "2147483648" {
		t.Errorf("storageCapacity after a shrink = %q, want the larger size kept", got)
	}
}
