//go:build integration

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// TestDeletionRemovesClaimsUnlessKept deletes two Redis resources with a volume: the PVCs of the
// one are deleted, those of the one with storage.keepAfterDelete stay. (Without a StatefulSet
// controller here, the test creates the PVCs the StatefulSet would have made.)
func TestDeletionRemovesClaimsUnlessKept(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	for _, keep := range []bool{false, true} {
		name := fmt.Sprintf("keep-%v", keep)
		cr := &v1beta2.Redis{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1beta2.RedisSpec{
				KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
				Storage: &v1beta2.Storage{KeepAfterDelete: keep, VolumeClaimTemplate: corev1.PersistentVolumeClaim{
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					}}},
			},
		}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, "finalizer on "+name, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
				return err
			}
			if len(cr.Finalizers) == 0 {
				return fmt.Errorf("no finalizer yet")
			}
			return nil
		})
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + name + "-0", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := c.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, name+" deleted", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (finalizers %v): %w", cr.Finalizers, err)
		})
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			t.Fatal(err)
		}
		// The PVC protection finalizer keeps a deleted claim visible, marked for deletion.
		if deleting := claim.DeletionTimestamp != nil; deleting == keep {
			t.Errorf("keepAfterDelete=%v: PVC marked for deletion = %v", keep, deleting)
		}
	}
}

// TestResourcesTheBuildersRefuseAreDeleted deletes resources whose specs the API server admits
// but the builders refuse (no image): their deletion must not depend on building, and it
// still removes their PVCs.
func TestResourcesTheBuildersRefuseAreDeleted(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	size := int32(3)
	refused := []struct {
		cr    client.Object
		claim string
	}{
		{&v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "noimage", Namespace: ns}}, "noimage-noimage-0"},
		{&v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "noimage-cluster", Namespace: ns},
			Spec: v1beta2.RedisClusterSpec{Size: &size}}, "node-conf-noimage-cluster-leader-1"},
		{&v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "noimage-rr", Namespace: ns},
			Spec: v1beta2.RedisReplicationSpec{Size: &size}}, "noimage-rr-noimage-rr-2"},
		{&v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Name: "noimage-sn", Namespace: ns},
			Spec: v1beta2.RedisSentinelSpec{Size: &size}}, ""},
	}
	for _, r := range refused {
		if err := c.Create(ctx, r.cr); err != nil {
			t.Fatalf("create %s: %v", r.cr.GetName(), err)
		}
		waitUntil(t, 10*time.Second, "finalizer and a refusal on "+r.cr.GetName(), func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(r.cr), r.cr); err != nil {
				return err
			}
			if len(r.cr.GetFinalizers()) == 0 {
				return fmt.Errorf("no finalizer yet")
			}
			return nil
		})
		if r.claim != "" {
			claim := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: r.claim, Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}
			if err := c.Create(ctx, claim); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Delete(ctx, r.cr); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range refused {
		waitUntil(t, 20*time.Second, r.cr.GetName()+" deleted", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(r.cr), r.cr)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (finalizers %v): %w", r.cr.GetFinalizers(), err)
		})
		if r.claim == "" {
			continue
		}
		var claim corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.claim}, &claim); err != nil {
			t.Fatal(err)
		}
		if claim.DeletionTimestamp == nil {
			t.Errorf("PVC %s of deleted %s is not marked for deletion", r.claim, r.cr.GetName())
		}
	}
}

// TestTerminatingNamespaceIsNotRecreatedInto: once its namespace is terminating, a resource's
// missing objects are not made again and the refusal is not reported as a failure of the
// resource. (envtest runs no namespace controller, so the namespace stays terminating.)
func TestTerminatingNamespaceIsNotRecreatedInto(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	c := newClient(t)
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := c.Create(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "going", Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "going", Namespace: ns}}
	waitUntil(t, 10*time.Second, "the Service", func() error { return c.Get(ctx, client.ObjectKeyFromObject(svc), svc) })
	if err := c.Delete(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); !apierrors.IsNotFound(err) {
		t.Errorf("Service in the terminating namespace: %v (made again?)", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	for _, cond := range cr.Status.Conditions {
		if cond.Reason == status.ReasonApplyFailed {
			t.Errorf("condition %s reports the terminating namespace as a failure: %s", cond.Type, cond.Message)
		}
	}
}

// TestDeletionDeletesClaimsOnlyOnceTheirPodsAreGone deletes a Redis whose pod is still there
// (held by a finalizer, as a terminating or Pending pod would be): the operator deletes the
// StatefulSet and the pod, and deletes the claim only once the pod is gone, so the StatefulSet
// controller has no pod to create the claim again for.
func TestDeletionDeletesClaimsOnlyOnceTheirPodsAreGone(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	const name = "held"
	cr := &v1beta2.Redis{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta2.RedisSpec{
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Storage: &v1beta2.Storage{VolumeClaimTemplate: corev1.PersistentVolumeClaim{
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}},
		},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	waitUntil(t, 10*time.Second, "the StatefulSet", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts)
	})
	// What the StatefulSet controller would have made: the pod (held by a finalizer of the
	// test's) and its claim.
	const hold = "test.redis.opstreelabs.in/hold"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns, Finalizers: []string{hold},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis:7.0.15"}}},
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + name + "-0", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	for _, obj := range []client.Object{pod, claim} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the StatefulSet deleted and the pod marked for deletion", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("StatefulSet still there: %w", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.DeletionTimestamp == nil {
			return fmt.Errorf("pod not marked for deletion")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // reconciles run meanwhile: none may delete the claim
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	if claim.DeletionTimestamp != nil {
		t.Fatal("the claim was deleted while its pod was still there")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatalf("the resource went before its claim: %v", err)
	}

	pod.Finalizers = nil
	if err := c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the claim deleted and the resource gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		if claim.DeletionTimestamp == nil {
			return fmt.Errorf("claim not marked for deletion")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); !apierrors.IsNotFound(err) {
			return fmt.Errorf("resource still there (finalizers %v): %w", cr.Finalizers, err)
		}
		return nil
	})
}
