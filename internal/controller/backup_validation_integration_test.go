//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// The RedisBackup CRD refuses what the operator could not honour before anything runs: no or
// two storages, an unknown target kind or source, and any change of a backup's spec; it
// defaults the source to PreferReplica.
func TestRedisBackupValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := testNamespace(t)
	c := newClient(t)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	s3 := &v1alpha1.S3Storage{Endpoint: "http://s3-store:8333", Bucket: "backups",
		CredentialsSecret: v1alpha1.SecretReference{Name: "s3-store-credentials"}}
	pvc := &v1alpha1.PVCStorage{ClaimName: "backups"}
	backup := func(name string, mutate func(*v1alpha1.RedisBackupSpec)) *v1alpha1.RedisBackup {
		b := &v1alpha1.RedisBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RedisBackupSpec{
				Target:  v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "cache"},
				Storage: v1alpha1.BackupStorage{S3: s3},
			},
		}
		mutate(&b.Spec)
		return b
	}
	for _, c2 := range []struct {
		name   string
		mutate func(*v1alpha1.RedisBackupSpec)
		refuse string
	}{
		{"no storage", func(s *v1alpha1.RedisBackupSpec) { s.Storage = v1alpha1.BackupStorage{} }, "exactly one of s3 and persistentVolumeClaim"},
		{"two storages", func(s *v1alpha1.RedisBackupSpec) { s.Storage.PersistentVolumeClaim = pvc }, "exactly one of s3 and persistentVolumeClaim"},
		{"unknown kind", func(s *v1alpha1.RedisBackupSpec) { s.Target.Kind = "RedisSentinel" }, "spec.target.kind"},
		{"unknown source", func(s *v1alpha1.RedisBackupSpec) { s.Source = "Anywhere" }, "spec.source"},
		{"no credentials", func(s *v1alpha1.RedisBackupSpec) {
			s.Storage.S3 = &v1alpha1.S3Storage{Endpoint: "http://x", Bucket: "backups"}
		}, "credentialsSecret.name"},
	} {
		err := c.Create(ctx, backup("bad", c2.mutate))
		if err == nil || !strings.Contains(err.Error(), c2.refuse) {
			t.Errorf("%s: %v; want a refusal naming %q", c2.name, err, c2.refuse)
		}
	}

	ok := backup("ok", func(*v1alpha1.RedisBackupSpec) {})
	if err := c.Create(ctx, ok); err != nil {
		t.Fatalf("a valid backup: %v", err)
	}
	if ok.Spec.Source != v1alpha1.SourcePreferReplica {
		t.Errorf("source defaulted to %q, want PreferReplica", ok.Spec.Source)
	}
	ok.Spec.Target.Name = "other"
	if err := c.Update(ctx, ok); err == nil || !strings.Contains(err.Error(), "spec cannot change") {
		t.Errorf("changing the target: %v; want a refusal", err)
	}
	onPVC := backup("pvc", func(s *v1alpha1.RedisBackupSpec) { s.Storage = v1alpha1.BackupStorage{PersistentVolumeClaim: pvc} })
	if err := c.Create(ctx, onPVC); err != nil {
		t.Errorf("a backup to a claim: %v", err)
	}
}
