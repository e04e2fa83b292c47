package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestBackupToTheSampleStore takes a backup into the S3 store users are given to try backups
// with (config/samples/backup, versitygw's published image), of the sample Redis holding keys,
// and reads the object back through the store's Service: it is whole, of the size and SHA-256
// the status records, an RDB file holding the keys. Then it restores the backup into a new
// Redis, which serves every key.
func TestBackupToTheSampleStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "backup-store")
	sb.Apply(t, ns, sample(t, "backup/s3-store.yaml"))
	sb.Apply(t, ns, sample(t, "redis_v1beta2_redis_minimal.yaml"))
	sb.WaitPodsReady(t, ns, "app.kubernetes.io/name=s3-store", 1, 3*time.Minute)
	pod := sb.WaitPodReady(t, ns, "redis-standalone-0", 3*time.Minute)

	rdb := sb.Redis(t, pod)
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("backup-key-%02d", i)
		if err := rdb.Set(ctx, keys[i], fmt.Sprintf("value %d", i), 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", keys[i], err)
		}
	}

	s3, storeAddr := sampleStore(t, ns)

	// The sample names the store by its bare Service name, which the operator (in another
	// namespace) resolves in the backup's namespace.
	backup := sample(t, "backup/redisbackup.yaml")
	if !strings.Contains(backup, "http://s3-store:8333") {
		t.Fatal("config/samples/backup/redisbackup.yaml no longer names the endpoint http://s3-store:8333")
	}
	sb.Apply(t, ns, backup)
	const name = "redis-standalone-backup"
	b := &v1alpha1.RedisBackup{}
	sb.WaitFor(t, ns, "RedisBackup "+name+" Completed", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		if b.Status.Phase == v1alpha1.BackupFailed {
			return false, "", fmt.Errorf("the backup failed: %+v", b.Status.Conditions)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, fmt.Sprintf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions), nil
	})
	if len(b.Status.Shards) != 1 {
		t.Fatalf("a Redis backup has %d shards, want 1: %+v", len(b.Status.Shards), b.Status.Shards)
	}
	shard := b.Status.Shards[0]
	if shard.Node != pod.Name || shard.Bytes <= 0 || b.Status.TotalBytes != shard.Bytes || len(shard.SHA256) != 64 {
		t.Fatalf("status %+v: want the shard of %s with its bytes and SHA-256, and the total its bytes", b.Status, pod.Name)
	}
	key, ok := strings.CutPrefix(shard.Location, "s3://backups/")
	if want := ns + "/" + name + "/" + pod.Name + ".rdb"; !ok || key != want {
		t.Fatalf("the shard's object is %s, want s3://backups/%s", shard.Location, want)
	}

	data, err := readObject(ctx, s3, "backups", key)
	if err != nil {
		t.Fatalf("read %s back through the Service %s: %v", shard.Location, storeAddr, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != shard.Bytes || hex.EncodeToString(sum[:]) != shard.SHA256 {
		t.Errorf("the object has %d bytes, SHA-256 %x; the status records %d bytes, %s", len(data), sum, shard.Bytes, shard.SHA256)
	}
	if !strings.HasPrefix(string(data), "REDIS") {
		t.Errorf("the object starts with %q, not an RDB header", data[:min(len(data), 9)])
	}
	// Short keys are stored as they are in an RDB file.
	for _, k := range keys {
		if !strings.Contains(string(data), k) {
			t.Errorf("the snapshot does not hold the key %s", k)
		}
	}

	// Restored into a new Redis: its pod starts from the backup (the restore init container
	// runs the operator's image), and every key is there with its value.
	restoredClient := restoreSampleRedis(t, ns, name)
	for i, k := range keys {
		got, err := restoredClient.Get(ctx, k).Result()
		if want := fmt.Sprintf("value %d", i); err != nil || got != want {
			t.Errorf("restored %s = %q (%v), want %q", k, got, err, want)
		}
	}
}

// restoreSampleRedis creates redis-restored in ns, a copy of the sample Redis
// (redis-standalone) restoring backup, waits until it says Restored, and returns a client of
// its pod.
func restoreSampleRedis(t *testing.T, ns, backup string) *goredis.Client {
	t.Helper()
	ctx := context.Background()
	var source v1beta2.Redis
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-standalone"}, &source); err != nil {
		t.Fatal(err)
	}
	restored := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "redis-restored", Namespace: ns}, Spec: *source.Spec.DeepCopy()}
	restored.Spec.Restore = &v1beta2.RestoreSpec{BackupName: backup}
	if err := sb.Client.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "Redis redis-restored Restored", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(restored), restored); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(restored.Status.Conditions, "Restored")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %+v", restored.Status.Conditions), nil
	})
	return sb.Redis(t, sb.WaitPodReady(t, ns, "redis-restored-0", time.Minute))
}

// sampleStore is an S3 client of the sample store (config/samples/backup/s3-store.yaml) applied
// in ns, through its Service with the credentials of the sample's Secret, once the store
// answers there, and the Service's address.
func sampleStore(t *testing.T, ns string) (*minio.Client, string) {
	t.Helper()
	ctx := context.Background()
	var secret corev1.Secret
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3-store-credentials"}, &secret); err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3-store"}, &svc); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "8333")
	s3, err := minio.New(addr, &minio.Options{
		Creds: credentials.NewStaticV4(string(secret.Data["AWS_ACCESS_KEY_ID"]), string(secret.Data["AWS_SECRET_ACCESS_KEY"]), ""),
		// versitygw's default region.
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A pod Ready is not yet a Service that answers, under load: wait for the bucket.
	sb.WaitFor(t, ns, "the store answering through its Service", time.Minute, func(ctx context.Context) (bool, string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ok, err := s3.BucketExists(ctx, "backups")
		if err != nil {
			return false, err.Error(), nil
		}
		return ok, "bucket backups not there yet", nil
	})
	return s3, addr
}

// readObject reads an object whole.
func readObject(ctx context.Context, s3 *minio.Client, bucket, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	obj, err := s3.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", bucket, key, err)
	}
	defer func() { _ = obj.Close() }()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	return data, nil
}
