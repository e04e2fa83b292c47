package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestBackupToAClaimRestores backs up a Redis onto a PersistentVolumeClaim (of the sandbox's
// default StorageClass) while a client writes to it: the operator runs its claim store over
// the claim (versitygw's published image, the claim's subPath as its root), owned by the
// backup, and streams the snapshot into it. Restored into a new Redis, whose init container
// downloads it from the claim store, every key acknowledged before the backup was asked for
// reads back with its value and TTL, and none written after it completed. Deleting the backup
// deletes its object through the store, and the store goes with its last backup.
func TestBackupToAClaimRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "backup-claim")
	sb.Apply(t, ns, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: backups
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`)
	const manifest = `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: NAME
spec:
  kubernetesConfig:
    image: redis:7.0.15
`
	const source, restoredName = "ledger", "ledger-restored"
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", source, 1))
	rdb := sb.Redis(t, sb.WaitPodReady(t, ns, source+"-0", 3*time.Minute))

	writeKeysBeforeBackup(t, rdb)
	sequence := startSequence(t, rdb)
	ackedBefore := sequence.ackedSoFar()
	b := takeBackupInto(t, ns, "Redis", source, `    persistentVolumeClaim:
      claimName: backups
      subPath: redis
`)
	sequence.halt()
	writeKeysAfterBackup(t, rdb)
	want := "pvc://backups/redis/backups/" + ns + "/" + b.Name + "/"
	if b.Status.Location != want || len(b.Status.Shards) != 1 || b.Status.Shards[0].Location != want+source+"-0.rdb" ||
		b.Status.Shards[0].Bytes <= 0 || len(b.Status.Shards[0].SHA256) != 64 {
		t.Fatalf("the backup is at %s with shards %+v; want one at %s%s-0.rdb with its bytes and SHA-256", b.Status.Location, b.Status.Shards, want, source)
	}
	const storeName = "backups-backup-store"
	var store appsv1.Deployment
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: storeName}, &store); err != nil {
		t.Fatalf("the claim store: %v", err)
	}
	if refs := store.OwnerReferences; len(refs) != 1 || refs[0].UID != b.UID || metav1.GetControllerOf(&store) != nil {
		t.Errorf("the claim store's owners %+v, want the backup only, not as its controller", refs)
	}

	start := time.Now()
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", restoredName, 1)+"  restore:\n    backupName: "+b.Name+"\n")
	restored := &v1beta2.Redis{}
	sb.WaitFor(t, ns, "Redis "+restoredName+" Restored", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: restoredName}, restored); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		c := meta.FindStatusCondition(restored.Status.Conditions, "Restored")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %+v", restored.Status.Conditions), nil
	})
	requireRestoredKeys(t, sb.Redis(t, sb.WaitPodReady(t, ns, restoredName+"-0", time.Minute)), "Redis "+restoredName, ackedBefore)
	t.Logf("restored from the claim in %s: %d keys written before the backup, %d of a sequence acknowledged before it was asked for; none of the %d written after",
		time.Since(start).Round(time.Second), keysBeforeBackup, ackedBefore+1, keysAfterBackup)

	// Deleted, the backup's object goes through the store (the operator's event says so), and
	// the store goes with its last backup.
	if err := sb.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the backup and its claim store gone", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, obj := range []client.Object{b, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: storeName}}} {
			if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%T %s still there (%v)", obj, obj.GetName(), err), nil
			}
		}
		return true, "", nil
	})
	// The event is the operator's word that the store deleted the object: its Note is
	// "deleted 1 objects under <location>".
	sb.WaitFor(t, ns, "the ObjectsDeleted event of the backup", time.Minute, func(context.Context) (bool, string, error) {
		notes := eventNotes(t, ns, "ObjectsDeleted")
		return strings.Contains(notes, "deleted 1 objects under "+want), "events: " + notes, nil
	})
}
