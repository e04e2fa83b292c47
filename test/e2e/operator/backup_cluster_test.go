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

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// TestClusterBackupUnderWritesRestoresIntoANewCluster backs up a 3×(1+1) cluster with a
// password into the sample store while writers load every shard, then restores the backup
// into a new cluster: every key acknowledged before the backup was asked for is there with
// its value and its TTL, and keys written after the backup completed are not.
func TestClusterBackupUnderWritesRestoresIntoANewCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "cluster-backup")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("back-me-up")}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	const manifest = `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: NAME
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: shop-auth
      key: password
`
	backUpUnderWritesAndRestore(t, manifest,
		&cluster{t: t, ctx: ctx, ns: ns, name: "shop", password: "back-me-up"},
		&cluster{t: t, ctx: ctx, ns: ns, name: "shop-restored", password: "back-me-up"})
}

// TestTLSClusterWithoutDefaultUserBackupRestores is the same for a cluster that serves TLS only
// and whose ACL file turns the default user off: the operator reads the snapshots over TLS as
// its own user, the application's user writes and reads, and the restored cluster (same
// certificate Secret, same ACL Secret) serves every key acknowledged before the backup.
func TestTLSClusterWithoutDefaultUserBackupRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "tls-acl-backup")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "vault-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("admin-pass")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "vault-users", Namespace: ns}, Data: map[string][]byte{"user.acl": []byte("user default off\nuser app on >app-pass ~* +@all\n")}},
	} {
		if err := sb.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ca := redistest.NewCA(t, "redis-ca")
	cfg := tlsSecret(t, ns, ca.CertPEM, ca.Issue(t, "vault-leader", "vault-follower", "vault-restored-leader", "vault-restored-follower"))
	const manifest = `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: NAME
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: vault-auth, key: password}
  acl:
    secret: {secretName: vault-users}
  TLS:
    secret:
      secretName: ` + tlsSecretName + `
`
	backUpUnderWritesAndRestore(t, manifest,
		&cluster{t: t, ctx: ctx, ns: ns, name: "vault", username: "app", password: "app-pass", tls: cfg},
		&cluster{t: t, ctx: ctx, ns: ns, name: "vault-restored", username: "app", password: "app-pass", tls: cfg})
	// The default user is off in the restored cluster too: the file came with the resource.
	for _, p := range (&cluster{t: t, ctx: ctx, ns: ns, name: "vault-restored"}).pods(ctx) {
		n := tlsClient(t, p.Status.PodIP, 6379, "admin-pass", cfg)
		if err := n.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("pod %s: the default user with the admin password = %v, want WRONGPASS", p.Name, err)
		}
	}
}

// backUpUnderWritesAndRestore makes the cluster source from manifest (NAME its name), backs it
// up into the sample store under writes on every shard, and makes restored from the same
// manifest with spec.restore: every key acknowledged before the backup was asked for reads
// back with its value and TTL, none written after the backup completed does.
func backUpUnderWritesAndRestore(t *testing.T, manifest string, source, restored *cluster) {
	t.Helper()
	ns := source.ns
	sb.Apply(t, ns, sample(t, "backup/s3-store.yaml"))
	start := time.Now()
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", source.name, 1))
	source.waitReady(start)
	sampleStore(t, ns)

	// Keys written and replicated before the backup; a load on every shard through the
	// backup, and a sequence whose last acknowledged key before the backup is asked for must
	// be in it.
	cc := source.client()
	writeKeysBeforeBackup(t, cc)
	checker := source.startWriting("during")
	sequence := startSequence(t, cc)
	ackedBefore := sequence.ackedSoFar()
	b := takeBackup(t, ns, "RedisCluster", source.name)
	sequence.halt()
	source.requireWrites(checker, "during the backup", 0)
	if len(b.Status.Shards) != 3 {
		t.Fatalf("the backup of a 3-shard cluster has %d shards: %+v", len(b.Status.Shards), b.Status.Shards)
	}
	for _, s := range b.Status.Shards {
		if len(s.SlotRanges) == 0 || s.Bytes <= 0 || len(s.SHA256) != 64 {
			t.Errorf("shard %+v: want its slot ranges, bytes and SHA-256", s)
		}
	}
	writeKeysAfterBackup(t, cc)

	start = time.Now()
	sb.Apply(t, ns, strings.Replace(manifest, "NAME", restored.name, 1)+"  restore:\n    backupName: "+b.Name+"\n")
	restored.waitReady(start)
	sb.WaitFor(t, ns, "RedisCluster "+restored.name+" Restored", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := restored.get()
		c := meta.FindStatusCondition(cr.Status.Conditions, "Restored")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %+v", cr.Status.Conditions), nil
	})
	requireRestoredKeys(t, restored.client(), "the restored cluster", ackedBefore)
	t.Logf("restored %d keys written before the backup (%d of a sequence acknowledged before it was asked for); none of the %d written after", keysBeforeBackup, ackedBefore+1, keysAfterBackup)
}
