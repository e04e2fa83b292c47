//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestReplicationNamesTheStorageClassItsPodWaitsFor: a replication whose first pod cannot be
// scheduled because its claim names a StorageClass that does not exist says so on the
// resource (Degraded Unschedulable, the pod, the claim and the class), where it said only
// that no Redis answered yet.
func TestReplicationNamesTheStorageClassItsPodWaitsFor(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	class := "no-such-class"
	claimSpec := corev1.PersistentVolumeClaimSpec{
		StorageClassName: &class,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: ns},
		Spec: v1beta2.RedisReplicationSpec{Size: ptrTo(int32(2)), KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Storage: &v1beta2.Storage{VolumeClaimTemplate: corev1.PersistentVolumeClaim{Spec: claimSpec}}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	waitUntil(t, 10*time.Second, "the StatefulSet", func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cr.Name}, sts) })

	// What the StatefulSet controller and the scheduler would make: the claim, Pending, and
	// the first pod, unschedulable for a minute already.
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound-unbound-0", Namespace: ns}, Spec: claimSpec}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Phase = corev1.ClaimPending
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unbound-0", Namespace: ns, Labels: sts.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis:7.0.15"}},
			Volumes: []corev1.Volume{{Name: "unbound", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.", LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "Degraded naming the pod and the missing StorageClass", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d == nil || d.Status != metav1.ConditionTrue || d.Reason != corev1.PodReasonUnschedulable ||
			!strings.Contains(d.Message, "pod unbound-0") || !strings.Contains(d.Message, `PVC unbound-unbound-0 is Pending: its StorageClass "no-such-class" does not exist`) {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
}
