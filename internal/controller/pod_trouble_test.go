package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
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

// TestStuckPodIsNamedOnTheResource: a Redis whose pod cannot pull its image says so itself
// (Degraded, the pod and the kubelet's reason) with one Warning event however often it is
// reconciled.
func TestStuckPodIsNamedOnTheResource(t *testing.T) {
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "nosuchimage:1"}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	waitUntil(t, 10*time.Second, "the StatefulSet", func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stuck"}, sts) })
	// What the StatefulSet controller and the kubelet would make: a pod waiting on its image.
	isController := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck-0", Namespace: ns, Labels: sts.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: &isController}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "stuck", Image: "nosuchimage:1"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "stuck", Image: "nosuchimage:1", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nosuchimage:1"`}}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "Degraded naming the pod", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "ImagePullBackOff" || !strings.Contains(d.Message, "stuck-0") {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	// More reconciles while it lasts (a metadata change brings each): still one event.
	for i := range 3 {
		touch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test/touch":"%d"}}}`, i)))
		if err := c.Patch(ctx, cr, touch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, e := range events.Items {
		if e.Reason == "ImagePullBackOff" && e.Regarding.Name == "stuck" {
			count++
			if e.Series != nil && e.Series.Count > 1 {
				t.Errorf("the ImagePullBackOff event was sent %d times", e.Series.Count)
			}
		}
	}
	if count != 1 {
		t.Errorf("%d ImagePullBackOff events, want 1", count)
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
