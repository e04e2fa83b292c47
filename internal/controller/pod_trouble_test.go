package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitingPod is pod x-0 with its container waiting for the given reason.
func waitingPod(reason string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{
		ContainerStatuses: []corev1.ContainerStatus{{Name: "redis", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "why " + reason}}}}}}
}

func TestTroubleOfNamesTheStuckPod(t *testing.T) {
	now := time.Now()
	unschedulableSince := func(since time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-1"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 Insufficient cpu.", LastTransitionTime: metav1.NewTime(since)}}}}
	}
	unschedulable := unschedulableSince(now.Add(-time.Minute))
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string // "" for no trouble
	}{
		{"none", nil, ""},
		{"starting", []corev1.Pod{waitingPod("ContainerCreating")}, ""},
		{"image", []corev1.Pod{waitingPod("ImagePullBackOff")}, "pod x-0: ImagePullBackOff: container redis: why ImagePullBackOff"},
		{"crash loop", []corev1.Pod{waitingPod("CrashLoopBackOff")}, "pod x-0: CrashLoopBackOff: container redis: why CrashLoopBackOff"},
		{"config", []corev1.Pod{waitingPod("CreateContainerConfigError")}, "pod x-0: CreateContainerConfigError: container redis: why CreateContainerConfigError"},
		{"unschedulable", []corev1.Pod{unschedulable}, "pod x-1: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."},
		{"first by name", []corev1.Pod{unschedulable, waitingPod("ErrImagePull")}, "pod x-0: ErrImagePull: container redis: why ErrImagePull"},
		// A claim being provisioned keeps a new pod unschedulable for a moment: no trouble yet.
		{"unschedulable a moment", []corev1.Pod{unschedulableSince(now.Add(-5 * time.Second))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if trouble, _ := troubleOf(tc.pods, now); trouble != nil {
				got = trouble.String()
			}
			if got != tc.want {
				t.Errorf("troubleOf = %q, want %q", got, tc.want)
			}
		})
	}
	if _, recheck := troubleOf([]corev1.Pod{unschedulableSince(now.Add(-5 * time.Second))}, now); recheck != unschedulableGrace-5*time.Second {
		t.Errorf("recheck in %v, want when the grace ends", recheck)
	}
}

func TestUnboundClaimNamesItsStorageClass(t *testing.T) {
	className := func(s string) *string { return &s }
	claim := func(phase corev1.PersistentVolumeClaimPhase, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	fast := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example"}
	for _, tc := range []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		class   *storagev1.StorageClass
		missing bool
		want    string
	}{
		{"bound", claim(corev1.ClaimBound, className("fast")), fast, false, ""},
		{"gone", nil, nil, false, "PVC data-x-0 does not exist"},
		{"unknown class", claim(corev1.ClaimPending, className("nope")), nil, true, `PVC data-x-0 is Pending: its StorageClass "nope" does not exist`},
		{"no class", claim(corev1.ClaimPending, nil), nil, false, "PVC data-x-0 is Pending: it names no StorageClass and no volume is bound to it"},
		{"provisioning", claim(corev1.ClaimPending, className("fast")), fast, false, `PVC data-x-0 is Pending: StorageClass "fast" (provisioner csi.example) has not provided a volume`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unboundClaim("data-x-0", tc.claim, tc.class, tc.missing); got != tc.want {
				t.Errorf("unboundClaim = %q, want %q", got, tc.want)
			}
		})
	}
}
