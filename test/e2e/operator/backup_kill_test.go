package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// killedBackupKeys of killedBackupValue bytes make a snapshot of about 200 MB: long enough to
// stream that the operator is killed with parts of it in the store and more to come.
const (
	killedBackupKeys  = 200_000
	killedBackupValue = 1024
)

// TestBackupOfAnOperatorKilledMidStreamIsTakenAgainWhole kills the operator's process
// (SIGKILL: no abort of the upload, no status written) while a backup streams its snapshot
// into the sample store, parts of it already stored. The backup is never Completed with what
// was sent: the restarted operator takes it again, at attempt 2, from a fresh snapshot; the
// object is whole (its size and SHA-256 are the status's), no unfinished upload is left in
// the bucket, and a Redis restored from it holds every key. Not parallel: it kills the
// operator every test shares.
func TestBackupOfAnOperatorKilledMidStreamIsTakenAgainWhole(t *testing.T) {
	ctx := context.Background()
	ns := sb.Namespace(t, "backup-kill")
	sb.Apply(t, ns, sample(t, "backup/s3-store.yaml"))
	sb.Apply(t, ns, sample(t, "redis_v1beta2_redis_minimal.yaml"))
	sb.WaitPodsReady(t, ns, "app.kubernetes.io/name=s3-store", 1, 3*time.Minute)
	pod := sb.WaitPodReady(t, ns, "redis-standalone-0", 3*time.Minute)
	rdb := sb.Redis(t, pod)
	// Random values: the snapshot compresses nothing away.
	random := rand.New(rand.NewChaCha8([32]byte{1}))
	values := map[int]string{}
	for start := 0; start < killedBackupKeys; start += 1000 {
		pipe := rdb.Pipeline()
		for i := start; i < start+1000; i++ {
			v := make([]byte, killedBackupValue)
			for j := range v {
				v[j] = byte(random.Uint32())
			}
			if i%50_000 == 0 || i == killedBackupKeys-1 {
				values[i] = string(v)
			}
			pipe.Set(ctx, fmt.Sprintf("big-%d", i), v, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("write keys from %d: %v", start, err)
		}
	}
	s3, _ := sampleStore(t, ns)

	const name = "killed-backup"
	sb.Apply(t, ns, fmt.Sprintf(`apiVersion: redis.redis.opstreelabs.in/v1alpha1
kind: RedisBackup
metadata:
  name: %s
spec:
  target: {kind: Redis, name: redis-standalone}
  storage:
%s`, name, sampleStoreStorage))
	key := ns + "/" + name + "/" + pod.Name + ".rdb"
	sb.WaitFor(t, ns, "a part of the snapshot stored", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		parts, err := storedParts(ctx, s3, key)
		if parts == 0 {
			b := &v1alpha1.RedisBackup{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err == nil && b.Status.Phase == v1alpha1.BackupCompleted {
				return false, "", fmt.Errorf("the backup completed before a part of it was seen stored: its snapshot is too small to kill the operator mid-stream")
			}
		}
		return parts > 0, fmt.Sprintf("%d parts stored, %v", parts, err), nil
	})
	var operators corev1.PodList
	if err := sb.Client.List(ctx, &operators, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "redis-operator"}); err != nil || len(operators.Items) == 0 {
		t.Fatalf("the operator's pod: %v (%d pods)", err, len(operators.Items))
	}
	if err := sb.Fault.CrashContainer(ctx, operatorNamespace, operators.Items[0].Name, "manager"); err != nil {
		t.Fatal(err)
	}

	b := &v1alpha1.RedisBackup{}
	sb.WaitFor(t, ns, "RedisBackup "+name+" Completed", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, "", err
		}
		if b.Status.Phase == v1alpha1.BackupFailed {
			return false, "", fmt.Errorf("the backup failed: %+v", b.Status.Conditions)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, fmt.Sprintf("phase %q, attempts %v", b.Status.Phase, b.Status.Attempts), nil
	})
	if b.Status.Attempts == nil || *b.Status.Attempts != 2 {
		t.Errorf("attempts %v, want 2: the one the kill cut short, then a whole one", b.Status.Attempts)
	}
	if len(b.Status.Shards) != 1 || b.Status.Shards[0].Location != "s3://backups/"+key {
		t.Fatalf("shards %+v, want one at s3://backups/%s", b.Status.Shards, key)
	}
	data, err := readObject(ctx, s3, "backups", key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if shard := b.Status.Shards[0]; int64(len(data)) != shard.Bytes || hex.EncodeToString(sum[:]) != shard.SHA256 ||
		shard.Bytes < killedBackupKeys*killedBackupValue {
		t.Errorf("the object has %d bytes, SHA-256 %x; the status records %d bytes, %s", len(data), sum, shard.Bytes, shard.SHA256)
	}
	for upload := range s3.ListIncompleteUploads(ctx, "backups", ns+"/", true) {
		t.Errorf("an unfinished upload is left in the bucket: %+v", upload)
	}

	rc := restoreSampleRedis(t, ns, name)
	if n, err := rc.DBSize(ctx).Result(); err != nil || n != killedBackupKeys {
		t.Errorf("restored DBSIZE %d (%v), want %d", n, err, killedBackupKeys)
	}
	for i, want := range values {
		if got, err := rc.Get(ctx, fmt.Sprintf("big-%d", i)).Result(); err != nil || got != want {
			t.Errorf("restored big-%d: %d bytes (%v), not the %d written", i, len(got), err, len(want))
		}
	}
}

// storedParts counts the parts stored so far of the unfinished uploads of key, 0 when none is
// under way.
func storedParts(ctx context.Context, s3 *minio.Client, key string) (int, error) {
	core := minio.Core{Client: s3}
	stored := 0
	for upload := range s3.ListIncompleteUploads(ctx, "backups", key, false) {
		if upload.Err != nil {
			return stored, upload.Err
		}
		parts, err := core.ListObjectParts(ctx, "backups", upload.Key, upload.UploadID, 0, 1000)
		if err != nil {
			return stored, err
		}
		stored += len(parts.ObjectParts)
	}
	return stored, nil
}
