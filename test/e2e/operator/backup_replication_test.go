package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestReplicationWithSentinelsBackupRestores backs up a RedisReplication watched by its own
// sentinels into the sample store while a client writes to its master, and restores the backup
// into a new replication with sentinels: every key acknowledged before the backup was asked
// for is on every pod of the new replication with its value and TTL, none
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

	writeKeysBeforeBackup(t, master)
	sequence := startSequence(t, master)
	ackedBefore := sequence.ackedSoFar()
	b := takeBackup(t, ns, "RedisReplication", source)
	sequence.halt()
	if len(b.Status.Shards) != 1 || b.Status.Shards[0].Bytes <= 0 || len(b.Status.Shards[0].SHA256) != 64 {
		t.Fatalf("a replication's backup: want one shard with its bytes and SHA-256, got %+v", b.Status.Shards)
	}
	writeKeysAfterBackup(t, master)

	start := time.Now()
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", restoredName, 1)+"  restore:\n    backupName: "+b.Name+"\n")
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
		requireRestoredKeys(t, rc, "pod "+p.Name, ackedBefore)
	}
	t.Logf("restored on every pod: %d keys written before the backup, %d of a sequence acknowledged before it was asked for; none of the %d written after",
		keysBeforeBackup, ackedBefore+1, keysAfterBackup)
}
