//go:build integration

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

// The storage tests run no StatefulSet controller, no volume expander and no garbage
// collector: the test creates the claims a StatefulSet would have made, binds them, reports
// their capacity as an expander would, and drops the orphan finalizer as the collector would.

func claimTemplate(class, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: &class,
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
}

func createStorageClass(t *testing.T, c client.Client, name string, expandable bool) {
	t.Helper()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/none", AllowVolumeExpansion: &expandable}
	if err := c.Create(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), class) })
}

// createBoundClaim makes the claim <template>-<sts>-<ordinal> of the given size, bound, its
// capacity reported.
func createBoundClaim(t *testing.T, c client.Client, ns, name, class, size string) {
	t.Helper()
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: claimTemplate(class, size).Spec}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
}

// reportCapacity sets the claim's reported capacity to its request, as a finished expansion does.
func reportCapacity(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	var claim corev1.PersistentVolumeClaim
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]}
	if err := c.Status().Update(ctx, &claim); err != nil {
		t.Fatal(err)
	}
}

func claimRequest(ctx context.Context, c client.Client, ns, name string) (resource.Quantity, error) {
	var claim corev1.PersistentVolumeClaim
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &claim); err != nil {
		return resource.Quantity{}, err
	}
	return claim.Spec.Resources.Requests[corev1.ResourceStorage], nil
}

// eventCount counts the occurrences of events with reason regarding the named object.
func eventCount(t *testing.T, c client.Client, ns, kind, name, reason string) int {
	t.Helper()
	var events eventsv1.EventList
	if err := c.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			n++
			if e.Series != nil && e.Series.Count > 1 {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

func waitCondition(t *testing.T, what string, get func() []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	waitUntil(t, 20*time.Second, what, func() error {
		cond := meta.FindStatusCondition(get(), typ)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("%s is %+v", typ, cond)
		}
		return nil
	})
}

// TestClusterStorageGrowsInPlace raises a RedisCluster's data and node-conf sizes: every claim
// grows, storageCapacity records the size, Progressing holds until every claim reports the new
// capacity, then the StatefulSet is recreated, without the recreate annotation, with the new
// templates. A later smaller request is ignored, with a Warning and a condition.
func TestClusterStorageGrowsInPlace(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	class := ns + "-expandable"
	createStorageClass(t, c, class, true)
	size, followers := int32(3), int32(0)
	cr := &v1beta2.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
		Spec: v1beta2.RedisClusterSpec{
			Size:             &size,
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Storage: &v1beta2.ClusterStorage{
				Storage:                     v1beta2.Storage{VolumeClaimTemplate: claimTemplate(class, "1Gi")},
				NodeConfVolume:              true,
				NodeConfVolumeClaimTemplate: claimTemplate(class, "100Mi"),
			},
		},
	}
	cr.Spec.RedisFollower.Replicas = &followers
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	get := func() *v1beta2.RedisCluster {
		var got v1beta2.RedisCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	conditions := func() []metav1.Condition { return get().Status.Conditions }
	stsKey := client.ObjectKey{Namespace: ns, Name: "grow-leader"}
	var before appsv1.StatefulSet
	waitUntil(t, 20*time.Second, "leader StatefulSet with storageCapacity", func() error {
		if err := c.Get(ctx, stsKey, &before); err != nil {
			return err
		}
		if got := before.Annotations[builder.AnnotationStorageCapacity]; got != "1073741824" {
			return fmt.Errorf("storageCapacity = %q", got)
		}
		return nil
	})
	var claims []string
	for i := range 3 {
		data, nodeConf := fmt.Sprintf("grow-leader-grow-leader-%d", i), fmt.Sprintf("node-conf-grow-leader-%d", i)
		createBoundClaim(t, c, ns, data, class, "1Gi")
		createBoundClaim(t, c, ns, nodeConf, class, "100Mi")
		claims = append(claims, data, nodeConf)
	}

	cr = get()
	cr.Spec.Storage.VolumeClaimTemplate = claimTemplate(class, "2Gi")
	cr.Spec.Storage.NodeConfVolumeClaimTemplate = claimTemplate(class, "200Mi")
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "every claim's request grown", func() error {
		for _, name := range claims {
			want := resource.MustParse("2Gi")
			if name[:len("node-conf")] == "node-conf" {
				want = resource.MustParse("200Mi")
			}
			got, err := claimRequest(ctx, c, ns, name)
			if err != nil {
				return err
			}
			if got.Cmp(want) != 0 {
				return fmt.Errorf("%s requests %s, want %s", name, got.String(), want.String())
			}
		}
		return nil
	})
	waitCondition(t, "Progressing while claims resize", conditions, v1beta2.ConditionProgressing, metav1.ConditionTrue, ReasonStorageResizing)
	var during appsv1.StatefulSet
	waitUntil(t, 10*time.Second, "storageCapacity recorded at once", func() error {
		if err := c.Get(ctx, stsKey, &during); err != nil {
			return err
		}
		if got := during.Annotations[builder.AnnotationStorageCapacity]; got != "2147483648" {
			return fmt.Errorf("storageCapacity = %q", got)
		}
		return nil
	})
	if during.UID != before.UID || during.DeletionTimestamp != nil {
		t.Fatal("the StatefulSet was recreated before its claims reported their new capacity")
	}

	// Half the claims report: still Progressing, naming the others.
	for _, name := range claims[:3] {
		reportCapacity(t, c, ns, name)
	}
	time.Sleep(3 * whileResizing)
	if cond := meta.FindStatusCondition(conditions(), v1beta2.ConditionProgressing); cond == nil || cond.Reason != ReasonStorageResizing || !containsAll(cond.Message, claims[3:]...) {
		t.Fatalf("with claims %v still resizing, Progressing is %+v", claims[3:], cond)
	}
	for _, name := range claims[3:] {
		reportCapacity(t, c, ns, name)
	}
	waitUntil(t, 20*time.Second, "StatefulSet deleted with orphaned pods", func() error {
		var old appsv1.StatefulSet
		if err := c.Get(ctx, stsKey, &old); err != nil {
			return err
		}
		if old.DeletionTimestamp == nil || !slices.Contains(old.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("deletion %v, finalizers %v", old.DeletionTimestamp, old.Finalizers)
		}
		old.Finalizers = nil
		return c.Update(ctx, &old)
	})
	waitUntil(t, 20*time.Second, "StatefulSet recreated with the grown templates", func() error {
		var after appsv1.StatefulSet
		if err := c.Get(ctx, stsKey, &after); err != nil {
			return err
		}
		if after.UID == before.UID {
			return fmt.Errorf("not recreated yet")
		}
		sizes := map[string]string{}
		for _, tmpl := range after.Spec.VolumeClaimTemplates {
			q := tmpl.Spec.Resources.Requests[corev1.ResourceStorage]
			sizes[tmpl.Name] = q.String()
		}
		if sizes["grow-leader"] != "2Gi" || sizes["node-conf"] != "200Mi" || after.Annotations[builder.AnnotationStorageCapacity] != "2147483648" {
			return fmt.Errorf("templates %v, storageCapacity %q", sizes, after.Annotations[builder.AnnotationStorageCapacity])
		}
		return nil
	})
	waitUntil(t, 20*time.Second, "Progressing no longer for storage", func() error {
		cond := meta.FindStatusCondition(conditions(), v1beta2.ConditionProgressing)
		if cond == nil || cond.Reason == ReasonStorageResizing {
			return fmt.Errorf("progressing is %+v", cond)
		}
		return nil
	})
	if n := eventCount(t, c, ns, "RedisCluster", "grow", "RecreateStatefulSet"); n == 0 {
		t.Error("no RecreateStatefulSet event")
	}

	// A smaller request: accepted, the claims and the recorded size stay, a Warning and a condition say so.
	cr = get()
	cr.Spec.Storage.VolumeClaimTemplate = claimTemplate(class, "1Gi")
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "shrink reported", conditions, ConditionStorageShrinkIgnored, metav1.ConditionTrue, ReasonStorageShrinkIgnored)
	waitUntil(t, 10*time.Second, "a StorageShrinkIgnored Warning", func() error {
		if eventCount(t, c, ns, "RedisCluster", "grow", ReasonStorageShrinkIgnored) == 0 {
			return fmt.Errorf("no event yet")
		}
		return nil
	})
	for _, name := range claims {
		got, err := claimRequest(ctx, c, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if name[:len("grow")] == "grow" && got.Cmp(resource.MustParse("2Gi")) != 0 {
			t.Errorf("%s requests %s after a shrink, want 2Gi kept", name, got.String())
		}
	}
	var kept appsv1.StatefulSet
	if err := c.Get(ctx, stsKey, &kept); err != nil {
		t.Fatal(err)
	}
	if got := kept.Annotations[builder.AnnotationStorageCapacity]; got != "2147483648" || kept.DeletionTimestamp != nil {
		t.Errorf("after a shrink storageCapacity = %q (want 2147483648), being deleted %v", got, kept.DeletionTimestamp != nil)
	}
}

// TestStorageGrowthRefusedByTheClass: a class without allowVolumeExpansion leaves the claims
// as they are and gives Degraded with the reason, with one Warning however often it reconciles.
func TestStorageGrowthRefusedByTheClass(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	class := ns + "-fixed"
	createStorageClass(t, c, class, false)
	cr := &v1beta2.RedisReplication{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed", Namespace: ns},
		Spec: v1beta2.RedisReplicationSpec{
			Size:             ptrTo(int32(2)),
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Storage:          &v1beta2.Storage{VolumeClaimTemplate: claimTemplate(class, "1Gi")},
		},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "StatefulSet", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed"}, &appsv1.StatefulSet{})
	})
	for i := range 2 {
		createBoundClaim(t, c, ns, fmt.Sprintf("fixed-fixed-%d", i), class, "1Gi")
	}
	get := func() *v1beta2.RedisReplication {
		var got v1beta2.RedisReplication
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	cr = get()
	cr.Spec.Storage.VolumeClaimTemplate = claimTemplate(class, "3Gi")
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "Degraded for a class without expansion", func() []metav1.Condition { return get().Status.Conditions },
		v1beta2.ConditionDegraded, metav1.ConditionTrue, status.ReasonStorageNotExpandable)
	// More reconciles (each annotation change brings one): still one Warning.
	for i := range 3 {
		cr = get()
		cr.Annotations = map[string]string{"test/poke": fmt.Sprint(i)}
		if err := c.Update(ctx, cr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := eventCount(t, c, ns, "RedisReplication", "fixed", status.ReasonStorageNotExpandable); n != 1 {
		t.Errorf("%d StorageNotExpandable events, want 1", n)
	}
	if cond := meta.FindStatusCondition(get().Status.Conditions, v1beta2.ConditionDegraded); cond == nil || !containsAll(cond.Message, class, "allowVolumeExpansion") {
		t.Errorf("Degraded does not name the class and the reason: %+v", cond)
	}
	for i := range 2 {
		got, err := claimRequest(ctx, c, ns, fmt.Sprintf("fixed-fixed-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("claim %d requests %s, want 1Gi untouched", i, got.String())
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
