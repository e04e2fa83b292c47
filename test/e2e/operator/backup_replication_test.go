package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestReplicationWithSentinelsBackupRestores backs up a RedisReplication watched by its own
// sentinels into the sample store while a client writes to its master, and restores the backup
// into a new replication with sentinels: every key acknowledged before the backup was asked
// for is on every pod of the new replication with its value (and TTL on the master), none
// written after the backup completed is, and the new sentinels name the restored master.
func TestReplicationWithSentinelsBackupRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "replication-backup")
	sb.Apply(t, ns, sample(t, "backup/s3-store.yaml"))
	const manifest = `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: NAME
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  sentinel:
    size: 3
    image: redis:7.0.15
`
	const source, restoredName = "ledger", "ledger-restored"
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", source, 1))
	cr := &v1beta2.RedisReplication{}
	sentinelWatched{ns: ns, name: source, cr: cr, timeout: 4 * time.Minute}.waitReady(t, "before the backup", time.Time{})
	sampleStore(t, ns)
	master := sb.Redis(t, getPod(t, ns, cr.Status.MasterNode))

	const before = 500
	for i := range before {
		ttl := time.Duration(0)
		if i%3 == 0 {
			ttl = time.Hour
		}
		if err := master.Set(ctx, fmt.Sprintf("before-%d", i), i, ttl).Err(); err != nil {
			t.Fatalf("SET before-%d: %v", i, err)
		}
	}
	// A sequence written through the backup: the last key acknowledged before the backup is
	// asked for must be in it.
	var acked atomic.Int64
	acked.Store(-1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := int64(0); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := master.Set(ctx, fmt.Sprintf("seq-%d", n), n, 0).Err(); err != nil {
				n-- // written again: a sequence without gaps
				time.Sleep(50 * time.Millisecond)
				continue
			}
			acked.Store(n)
		}
	})
	time.Sleep(2 * time.Second)
	ackedBefore := acked.Load()
	if ackedBefore < 0 {
		t.Fatal("no write of the sequence was acknowledged in 2 s")
	}

	name := source + "-backup"
	sb.Apply(t, ns, fmt.Sprintf(`apiVersion: redis.redis.opstreelabs.in/v1alpha1
kind: RedisBackup
metadata:
  name: %s
spec:
  target: {kind: RedisReplication, name: %s}
  storage:
    s3:
      endpoint: http://s3-store:8333
      bucket: backups
      forcePathStyle: true
      credentialsSecret: {name: s3-store-credentials}
`, name, source))
	b := &v1alpha1.RedisBackup{}
	sb.WaitFor(t, ns, "RedisBackup "+name+" Completed", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		if b.Status.Phase == v1alpha1.BackupFailed {
			return false, "", fmt.Errorf("the backup failed: %+v", b.Status.Conditions)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, fmt.Sprintf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions), nil
	})
	close(stop)
	wg.Wait()
	if len(b.Status.Shards) != 1 || b.Status.Shards[0].Bytes <= 0 || len(b.Status.Shards[0].SHA256) != 64 {
		t.Fatalf("a replication's backup: want one shard with its bytes and SHA-256, got %+v", b.Status.Shards)
	}
	const after = 100
	for i := range after {
		if err := master.Set(ctx, fmt.Sprintf("after-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET after-%d: %v", i, err)
		}
	}

	start := time.Now()
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", restoredName, 1)+"  restore:\n    backupName: "+name+"\n")
	restored := &v1beta2.RedisReplication{}
	sentinelWatched{ns: ns, name: restoredName, cr: restored, timeout: 4 * time.Minute}.waitReady(t, "after the restore", start)
	sb.WaitFor(t, ns, "RedisReplication "+restoredName+" Restored", time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: restoredName}, restored); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(restored.Status.Conditions, "Restored")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %+v", restored.Status.Conditions), nil
	})
	newMaster := getPod(t, ns, restored.Status.MasterNode)
	sentinelsName(t, ns, restoredName+"-s", "mymaster", newMaster.Status.PodIP)

	var pods corev1.PodList
	if err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": restoredName}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods of %s, want 3", len(pods.Items), restoredName)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		rc := sb.Redis(t, p)
		if p.Name != newMaster.Name {
			// A replica holds the master's data set once its first sync is done.
			sb.WaitFor(t, ns, "replica "+p.Name+" synced", time.Minute, func(ctx context.Context) (bool, string, error) {
				info, err := rc.Info(ctx, "replication").Result()
				return err == nil && strings.Contains(info, "master_link_status:up") && !strings.Contains(info, "master_sync_in_progress:1"), info, nil
			})
		}
		var missing []string
		for i := range before {
			key := fmt.Sprintf("before-%d", i)
			if got, err := rc.Get(ctx, key).Int(); err != nil || got != i {
				missing = append(missing, fmt.Sprintf("%s=%d (%v)", key, got, err))
			}
		}
		for n := range ackedBefore + 1 {
			key := fmt.Sprintf("seq-%d", n)
			if got, err := rc.Get(ctx, key).Int64(); err != nil || got != n {
				missing = append(missing, fmt.Sprintf("%s=%d (%v)", key, got, err))
			}
		}
		if len(missing) > 0 {
			t.Errorf("pod %s: %d keys acknowledged before the backup are not restored as written, e.g. %s", p.Name, len(missing), strings.Join(missing[:min(len(missing), 10)], ", "))
		}
		for i := range after {
			key := fmt.Sprintf("after-%d", i)
			if err := rc.Get(ctx, key).Err(); !errors.Is(err, goredis.Nil) {
				t.Errorf("pod %s: %s, written after the backup completed, reads %v, want no such key", p.Name, key, err)
			}
		}
	}
	mc := sb.Redis(t, newMaster)
	for i := 0; i < before; i += 3 {
		key := fmt.Sprintf("before-%d", i)
		if ttl, err := mc.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
			t.Errorf("%s restored with TTL %s (%v), want its hour (less the time since)", key, ttl, err)
		}
	}
	t.Logf("restored on every pod: %d keys written before the backup, %d of a sequence acknowledged before it was asked for; none of the %d written after",
		before, ackedBefore+1, after)
}
