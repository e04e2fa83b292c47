package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestDeletionRemovesClaimsUnlessKept deletes two Redis resources with a volume: the PVCs of the
// one are deleted, those of the one with storage.keepAfterDelete stay. (Without a StatefulSet
// controller here, the test creates the PVCs the StatefulSet would have made.)
func TestDeletionRemovesClaimsUnlessKept(t *testing.T) {
	ns := testNamespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	c := newClient(t)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
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
