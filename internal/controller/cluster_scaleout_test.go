package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A scale-out does not grow a StatefulSet over an ordinal whose claims an earlier scale-in
// left on their way out (the StatefulSet controller would not create the pod while one is
// being deleted, and retries ever more slowly); a claim kept to be used again does not hold
// it.
func TestCondemnedClaimsOfAnEarlierScaleInHoldTheirOrdinal(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	claim := func(name string, mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		mutate(c)
		return c
	}
	c := fake.NewClientBuilder().WithObjects(
		// ordinal 3: the data claim is being deleted (a finalizer keeps it a while).
		claim("shards-follower-shards-follower-3", func(c *corev1.PersistentVolumeClaim) {
			c.DeletionTimestamp, c.Finalizers = &now, []string{"kubernetes.io/pvc-protection"}
		}),
		// ordinal 4: node-conf still owned by the scaled-in pod, waiting for the collector.
		claim("node-conf-shards-follower-4", func(c *corev1.PersistentVolumeClaim) {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "shards-follower-4", UID: "gone"}}
		}),
		// ordinal 5: kept (WhenScaled: Retain): owned by nothing, used again.
		claim("shards-follower-shards-follower-5", func(*corev1.PersistentVolumeClaim) {}),
	).Build()
	for ordinal, want := range map[int32]string{
		3: "shards-follower-shards-follower-3",
		4: "node-conf-shards-follower-4",
		5: "",
		6: "",
	} {
		got, err := condemnedClaim(ctx, c, "ns", "shards-follower", ordinal)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("ordinal %d: condemned claim %q, want %q", ordinal, got, want)
		}
	}
}
