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
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestStuckPodIsNamedOnTheResource: a Redis whose pod cannot pull its image says so itself
// (Degraded, the pod and the kubelet's reason) with one Warning event however often it is
// reconciled.
func TestStuckPodIsNamedOnTheResource(t *testing.T) {
	t.Parallel()
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
