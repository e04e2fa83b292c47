package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// TestBackupOnAClaimResolvesToItsStore: a backup on a claim is stored in the claim store's
// bucket with no prefix, and its locations name the claim's folder the files are in; a backup
// in S3 keeps its own store and s3:// locations.
func TestBackupOnAClaimResolvesToItsStore(t *testing.T) {
	onClaim := func(subPath string) *v1alpha1.RedisBackup {
		b := &v1alpha1.RedisBackup{}
		b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "backups", SubPath: subPath}
		return b
	}
	s3 := backupS3(onClaim(""))
	if s3.Endpoint != "http://backups-backup-store:8333" || s3.Bucket != "backups" || s3.Prefix != "" || !s3.ForcePathStyle ||
		s3.CredentialsSecret.Name != "backups-backup-store" || s3.CASecret != nil {
		t.Errorf("a claim's store: %+v", s3)
	}
	for subPath, want := range map[string]string{
		"":             "pvc://backups/backups/",
		"redis":        "pvc://backups/redis/backups/",
		"redis/a/./b/": "pvc://backups/redis/a/b/backups/",
	} {
		if got := locationPrefix(onClaim(subPath)); got != want {
			t.Errorf("subPath %q: location prefix %q, want %q", subPath, got, want)
		}
	}
	inS3 := &v1alpha1.RedisBackup{}
	inS3.Spec.Storage.S3 = &v1alpha1.S3Storage{Endpoint: "https://s3.example", Bucket: "b", Prefix: "p"}
	if backupS3(inS3) != inS3.Spec.Storage.S3 || locationPrefix(inS3) != "s3://b/" {
		t.Errorf("a backup in S3 resolves to %+v, %q", backupS3(inS3), locationPrefix(inS3))
	}
	st := located(&memoryStore{}, onClaim("redis"))
	if got := st.Location("ns/b/pod-0.rdb"); got != "pvc://backups/redis/backups/ns/b/pod-0.rdb" {
		t.Errorf("a claim store's object is located at %q", got)
	}
	if got := located(&memoryStore{}, inS3).Location("k"); got != "s3://b/k" {
		t.Errorf("an S3 store's object is located at %q", got)
	}
}

// TestClaimBackupObjectsAreDeletedByKey: the objects a deleted backup on a claim lists, by
// their pvc:// locations, are deleted from the claim store by their keys in its bucket.
func TestClaimBackupObjectsAreDeletedByKey(t *testing.T) {
	b := &v1alpha1.RedisBackup{}
	b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "r"}
	mem := &memoryStore{objects: map[string]bool{"ns/rb/a.rdb": true, "ns/other/a.rdb": true}}
	shards := []v1alpha1.ShardBackup{{Location: "pvc://backups/r/backups/ns/rb/a.rdb"}, {Location: "s3://backups/ns/other/a.rdb"}}
	deleted, err := (&RedisBackupReconciler{}).deleteShards(context.Background(), located(mem, b), shards)
	if err != nil || deleted != 1 {
		t.Fatalf("deleted %d (%v), want 1", deleted, err)
	}
	if mem.objects["ns/rb/a.rdb"] || !mem.objects["ns/other/a.rdb"] {
		t.Errorf("objects left %v: want only the backup's deleted", mem.objects)
	}
}

// TestDeploymentUnavailable: the store is used once its Deployment serves a ready pod of its
// latest template, and not before.
func TestDeploymentUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    appsv1.DeploymentStatus
		available bool
	}{
		{"new", appsv1.DeploymentStatus{}, false},
		{"spec not seen", appsv1.DeploymentStatus{ObservedGeneration: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, false},
		{"old pod only", appsv1.DeploymentStatus{ObservedGeneration: 2, AvailableReplicas: 1}, false},
		{"pod not ready", appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1}, false},
		{"available", appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1}, true},
	} {
		d := &appsv1.Deployment{Status: tc.status}
		d.Generation = 2
		if why := deploymentUnavailable(d); (why == "") != tc.available {
			t.Errorf("%s: unavailable because %q, want available %v", tc.name, why, tc.available)
		}
	}
}
