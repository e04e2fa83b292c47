//go:build integration

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/s3test"
)

const backupKeys = 5000

// backupFixture is a test's S3 server, its credentials Secret and a way to make backups.
type backupFixture struct {
	t  *testing.T
	c  client.Client
	ns string
	s3 *s3test.Server
	// caSecret, when set, is the Secret of the store's CA the backups name.
	caSecret string
	// endpoint, when set, is the store's endpoint the backups name instead of the server's
	// own: a front in its place.
	endpoint string
}

func newBackupFixture(t *testing.T, c client.Client, ns string) *backupFixture {
	t.Helper()
	return newBackupFixtureWith(t, c, ns, s3test.Options{})
}

func newBackupFixtureWith(t *testing.T, c client.Client, ns string, opts s3test.Options) *backupFixture {
	t.Helper()
	f := &backupFixture{t: t, c: c, ns: ns, s3: s3test.Start(t, opts)}
	if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte(f.s3.SecretKey)}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *backupFixture) create(name, kind, target string, source v1alpha1.BackupSource, credentials string) *v1alpha1.RedisBackup {
	f.t.Helper()
	b := &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       f.spec(kind, target, source, credentials),
	}
	if err := f.c.Create(context.Background(), b); err != nil {
		f.t.Fatal(err)
	}
	return b
}

// spec is the spec of a backup of target into the fixture's bucket.
func (f *backupFixture) spec(kind, target string, source v1alpha1.BackupSource, credentials string) v1alpha1.RedisBackupSpec {
	endpoint := f.s3.URL()
	if f.endpoint != "" {
		endpoint = f.endpoint
	}
	spec := v1alpha1.RedisBackupSpec{
		Target: v1alpha1.BackupTarget{Kind: kind, Name: target},
		Storage: v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{
			Endpoint: endpoint, Bucket: f.s3.Bucket, Prefix: "/team-a/", Region: s3test.Region, ForcePathStyle: true,
			CredentialsSecret: v1alpha1.SecretReference{Name: credentials},
		}},
		Source: source,
	}
	if f.caSecret != "" {
		spec.Storage.S3.CASecret = &v1alpha1.SecretReference{Name: f.caSecret}
	}
	return spec
}

// objects lists the keys in the fixture's bucket.
func (f *backupFixture) objects() []string {
	f.t.Helper()
	var keys []string
	for obj := range f.s3.Client(f.t).ListObjects(context.Background(), f.s3.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			f.t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	return keys
}

// waitPhase waits for the backup to reach phase, failing at once on another final phase.
func (f *backupFixture) waitPhase(b *v1alpha1.RedisBackup, phase v1alpha1.BackupPhase) {
	f.t.Helper()
	waitUntil(f.t, 60*time.Second, "RedisBackup "+b.Name+" "+string(phase), func() error {
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if b.Status.Phase == phase {
			return nil
		}
		if b.Finished() {
			f.t.Fatalf("backup %s ended %s: %s", b.Name, b.Status.Phase, describeConditions(b.Status.Conditions))
		}
		return fmt.Errorf("phase %q, conditions %s", b.Status.Phase, describeConditions(b.Status.Conditions))
	})
}

// restore downloads the backup's one object, checks its size and digest against the status,
// and starts a redis-server on it.
func (f *backupFixture) restore(b *v1alpha1.RedisBackup) *goredis.Client {
	f.t.Helper()
	if len(b.Status.Shards) != 1 || b.Status.TotalBytes != b.Status.Shards[0].Bytes {
		f.t.Fatalf("shards %+v of %d bytes, want one", b.Status.Shards, b.Status.TotalBytes)
	}
	return f.restoreShard(b.Status.Shards[0])
}

// restoreShard downloads a shard's object, checks its size and digest against the status,
// and starts a (non-cluster) redis-server on it.
func (f *backupFixture) restoreShard(shard v1alpha1.ShardBackup) *goredis.Client {
	f.t.Helper()
	key := strings.TrimPrefix(shard.Location, "s3://"+f.s3.Bucket+"/")
	obj, err := f.s3.Client(f.t).GetObject(context.Background(), f.s3.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = obj.Close() }()
	path := filepath.Join(f.t.TempDir(), "dump.rdb")
	out, err := os.Create(path)
	if err != nil {
		f.t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), obj)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.t.Fatalf("download %s: %v", shard.Location, err)
	}
	if n != shard.Bytes || hex.EncodeToString(h.Sum(nil)) != shard.SHA256 {
		f.t.Fatalf("the object holds %d bytes of digest %x; the status says %d, %s", n, h.Sum(nil), shard.Bytes, shard.SHA256)
	}
	restored := redistest.StartServer(f.t, redistest.ServerOptions{RDB: path})
	rdb := goredis.NewClient(&goredis.Options{Addr: restored.Addr()})
	f.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func writeBackupKeys(ctx context.Context, t *testing.T, rdb *goredis.Client) {
	t.Helper()
	p := rdb.Pipeline()
	for i := range backupKeys {
		k := "key:" + strconv.Itoa(i)
		p.Set(ctx, k, "value-"+strconv.Itoa(i), 0)
		if i%100 == 0 {
			p.Expire(ctx, k, time.Hour)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func checkBackupKeys(ctx context.Context, t *testing.T, rdb *goredis.Client) {
	t.Helper()
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != backupKeys {
		t.Fatalf("DBSIZE %d, %v; want %d", n, err, backupKeys)
	}
	p := rdb.Pipeline()
	gets := make([]*goredis.StringCmd, backupKeys)
	ttls := make([]*goredis.DurationCmd, backupKeys)
	for i := range backupKeys {
		gets[i] = p.Get(ctx, "key:"+strconv.Itoa(i))
		ttls[i] = p.TTL(ctx, "key:"+strconv.Itoa(i))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range backupKeys {
		if gets[i].Val() != "value-"+strconv.Itoa(i) {
			t.Fatalf("key:%d = %q", i, gets[i].Val())
		}
		if ttl := ttls[i].Val(); (i%100 == 0) != (ttl > 0) {
			t.Fatalf("key:%d TTL %v", i, ttl)
		}
	}
}

// A backup of a standalone Redis with a password streams the pod's snapshot into S3 at
// <prefix>/<namespace>/<backup>/<pod>.rdb; a new server loading the object serves every key,
// and the status, which says so, is never taken again.
func TestRedisBackupOfStandaloneRestoresEveryKey(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	c := newClient(t)
	const password = "s3cret-backup"
	kubelet := newFakeKubelet(t, c, builder.DefaultRedisPort)
	kubelet.standalone, kubelet.password = true, password
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-secret", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	secretName, secretKey := "redis-secret", "password"
	cr := &v1beta2.Redis{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
			ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}}},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	kubelet.runStatefulSet(ctx, ns, "cache")
	waitStandaloneReady(t, c, cr)
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("cache-0").addr(builder.DefaultRedisPort), Password: password})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)

	f := newBackupFixture(t, c, ns)
	b := f.create("nightly", v1alpha1.TargetRedis, "cache", "", "s3-credentials")
	f.waitPhase(b, v1alpha1.BackupCompleted)

	if b.Spec.Source != v1alpha1.SourcePreferReplica {
		t.Errorf("source %q, want the default PreferReplica", b.Spec.Source)
	}
	wantLocation := "s3://" + f.s3.Bucket + "/team-a/" + ns + "/nightly/"
	shard := b.Status.Shards[0]
	if b.Status.Location != wantLocation || shard.Location != wantLocation+"cache-0.rdb" || shard.Node != "cache-0" || shard.Role != "master" {
		t.Errorf("location %q, shard %+v; want %scache-0.rdb of the master cache-0", b.Status.Location, shard, wantLocation)
	}
	if b.Status.StartedAt == nil || b.Status.CompletedAt == nil || b.Status.CompletedAt.Before(b.Status.StartedAt) || b.Status.Size == "" ||
		shard.ReplicationOffset < 0 || shard.RDBVersion == 0 {
		t.Errorf("status %+v", b.Status)
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != string(v1alpha1.BackupCompleted) {
		t.Errorf("conditions %s, want Ready True Completed", describeConditions(b.Status.Conditions))
	}
	checkBackupKeys(ctx, t, f.restore(b))
	if strings.Contains(fmt.Sprintf("%+v", b.Status), password) || strings.Contains(fmt.Sprintf("%+v", b.Status), f.s3.SecretKey) {
		t.Error("the status shows a credential")
	}

	// Taken once: a later reconcile (an annotation wakes it) takes no second snapshot.
	started := countEvents(t, c, ns, "nightly", ReasonBackupStarted)
	if started != 1 || countEvents(t, c, ns, "nightly", ReasonBackupCompleted) != 1 {
		t.Errorf("%d BackupStarted events, want 1 with 1 BackupCompleted", started)
	}
	startedAt := b.Status.StartedAt.DeepCopy()
	b.Annotations = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if !b.Status.StartedAt.Equal(startedAt) || countEvents(t, c, ns, "nightly", ReasonBackupStarted) != 1 {
		t.Errorf("the completed backup was taken again: started at %v, then %v", startedAt, b.Status.StartedAt)
	}
	// Its metrics say what its status says, and it is counted once, read again or not.
	target := map[string]string{"namespace": ns, "target_kind": v1alpha1.TargetRedis, "target": "cache"}
	waitSamples(t, "the metrics of the completed backup", []wantSample{
		sampleOf("redis_operator_backups_total", withResult(target, "completed"), 1),
		sampleOf("redis_operator_backups_total", withResult(target, "failed"), 0),
		sampleOf("redis_operator_backup_last_success_timestamp_seconds", target, float64(b.Status.CompletedAt.Unix())),
		sampleOf("redis_operator_backup_duration_seconds", target, float64(b.Status.CompletedAt.Unix()-b.Status.StartedAt.Unix())),
		sampleOf("redis_operator_backup_bytes", target, float64(b.Status.TotalBytes)),
	})
}

// A replication's backup reads a replica in sync unless told to read the master.
func TestRedisBackupOfReplicationReadsAReplica(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	writeBackupKeys(f.ctx, t, f.redis("rr-0"))
	f.checkTopology("rr-0", nil)
	waitUntil(t, 15*time.Second, "replicas caught up", func() error {
		for _, pod := range []string{"rr-1", "rr-2"} {
			n, err := f.redis(pod).DBSize(f.ctx).Result()
			if err != nil {
				return fmt.Errorf("%s: %w", pod, err)
			}
			if n != backupKeys {
				return fmt.Errorf("%s: %d keys", pod, n)
			}
		}
		return nil
	})

	bf := newBackupFixture(t, f.c, f.cr.Namespace)
	fromReplica := bf.create("from-replica", v1alpha1.TargetRedisReplication, "rr", v1alpha1.SourcePreferReplica, "s3-credentials")
	fromMaster := bf.create("from-master", v1alpha1.TargetRedisReplication, "rr", v1alpha1.SourceMaster, "s3-credentials")
	bf.waitPhase(fromReplica, v1alpha1.BackupCompleted)
	bf.waitPhase(fromMaster, v1alpha1.BackupCompleted)
	if s := fromReplica.Status.Shards[0]; s.Role != "replica" || s.Node == "rr-0" || s.ReplicationOffset <= 0 {
		t.Errorf("PreferReplica read %+v, want a replica with its offset", s)
	}
	if s := fromMaster.Status.Shards[0]; s.Role != "master" || s.Node != "rr-0" || s.ReplicationOffset <= 0 {
		t.Errorf("Master read %+v, want rr-0 with its offset", s)
	}
	checkBackupKeys(f.ctx, t, bf.restore(fromReplica))
	checkBackupKeys(f.ctx, t, bf.restore(fromMaster))
}

// A backup that cannot be taken ends Failed with the cause and leaves no object; one whose
// target (or claim) is missing waits, Pending.
func TestRedisBackupFailures(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	runReadyStandalone(ctx, t, c, ns, "plain")

	f := newBackupFixture(t, c, ns)
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte("not-the-secret")}}); err != nil {
		t.Fatal(err)
	}
	wrong := f.create("wrong-credentials", v1alpha1.TargetRedis, "plain", "", "wrong-credentials")
	onClaim := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Name: "on-claim", Namespace: ns},
		Spec: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "plain"},
			Storage: v1alpha1.BackupStorage{PersistentVolumeClaim: &v1alpha1.PVCStorage{ClaimName: "backups"}}}}
	if err := c.Create(ctx, onClaim); err != nil {
		t.Fatal(err)
	}
	missing := f.create("missing-target", v1alpha1.TargetRedis, "nowhere", "", "s3-credentials")

	f.waitPhase(wrong, v1alpha1.BackupFailed)
	cond := meta.FindStatusCondition(wrong.Status.Conditions, v1beta2.ConditionReady)
	if cond == nil || cond.Reason != ReasonBackupFailed || !strings.Contains(cond.Message, "access denied") ||
		strings.Contains(cond.Message, "not-the-secret") || len(wrong.Status.Shards) != 0 || wrong.Status.CompletedAt == nil {
		t.Errorf("wrong credentials: %s, shards %+v", describeConditions(wrong.Status.Conditions), wrong.Status.Shards)
	}
	if countEvents(t, c, ns, "wrong-credentials", ReasonBackupFailed) != 1 {
		t.Error("no BackupFailed event")
	}
	waitUntil(t, 30*time.Second, "the backup on a claim that does not exist waits", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(onClaim), onClaim); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(onClaim.Status.Conditions, v1beta2.ConditionReady)
		if onClaim.Status.Phase != v1alpha1.BackupPending || cond == nil || cond.Reason != ReasonBackupWaiting ||
			!strings.Contains(cond.Message, "PersistentVolumeClaim backups does not exist") {
			return fmt.Errorf("phase %q, %s", onClaim.Status.Phase, describeConditions(onClaim.Status.Conditions))
		}
		return nil
	})
	waitUntil(t, 30*time.Second, "the backup of a missing target waits", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(missing), missing); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(missing.Status.Conditions, v1beta2.ConditionReady)
		if missing.Status.Phase != v1alpha1.BackupPending || cond == nil || cond.Reason != ReasonBackupWaiting ||
			!strings.Contains(cond.Message, "Redis nowhere does not exist") {
			return fmt.Errorf("phase %q, %s", missing.Status.Phase, describeConditions(missing.Status.Conditions))
		}
		return nil
	})
	for obj := range f.s3.Client(t).ListObjects(ctx, f.s3.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		t.Errorf("object %s (%v) in the bucket after backups that failed", obj.Key, obj.Err)
	}
	// One failed backup of plain (the other waits for its claim), counted once; no success to show.
	target := map[string]string{"namespace": ns, "target_kind": v1alpha1.TargetRedis, "target": "plain"}
	waitSamples(t, "the metrics of the failed backups", []wantSample{
		sampleOf("redis_operator_backups_total", withResult(target, "failed"), 1),
		sampleOf("redis_operator_backups_total", withResult(target, "completed"), 0),
		noSample("redis_operator_backup_last_success_timestamp_seconds", target),
	})
}

// A store served over HTTPS by a private CA is reached with the CA of caSecret.
func TestRedisBackupToATLSStoreWithItsCA(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "plain")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("plain-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)

	ca := redistest.NewCA(t, "store-ca")
	files := redistest.WriteTLSFiles(t, ca.CertPEM, ca.Issue(t, s3test.Host))
	f := newBackupFixtureWith(t, c, ns, s3test.Options{TLS: &files})
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "store-ca", Namespace: ns},
		Data: map[string][]byte{S3CAKey: ca.CertPEM}}); err != nil {
		t.Fatal(err)
	}
	untrusted := f.create("untrusted", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	f.caSecret = "store-ca"
	trusted := f.create("trusted", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	f.waitPhase(trusted, v1alpha1.BackupCompleted)
	checkBackupKeys(ctx, t, f.restore(trusted))
	f.waitPhase(untrusted, v1alpha1.BackupFailed)
	if cond := meta.FindStatusCondition(untrusted.Status.Conditions, v1beta2.ConditionReady); cond == nil || !strings.Contains(cond.Message, "certificate") {
		t.Errorf("without the CA: %s, want a certificate refusal", describeConditions(untrusted.Status.Conditions))
	}
}

// A cluster's backup reads every shard (a replica of each, in sync) in parallel; the shards'
// slot ranges cover the 16384 slots, and the keys of the shards' objects are every key written,
// each once.
func TestRedisBackupOfClusterTakesEveryShard(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(90 * time.Second)
	const keys = 1500
	f.writeKeys(keys)

	bf := newBackupFixture(t, f.c, f.ns)
	b := bf.create("whole-cluster", v1alpha1.TargetRedisCluster, f.name, "", "s3-credentials")
	bf.waitPhase(b, v1alpha1.BackupCompleted)
	if len(b.Status.Shards) != 3 {
		t.Fatalf("shards %+v, want 3", b.Status.Shards)
	}
	slots, total := 0, int64(0)
	got := map[string]string{}
	for _, shard := range b.Status.Shards {
		if shard.Role != "replica" || !strings.HasPrefix(shard.Node, f.name+"-follower-") {
			t.Errorf("shard %+v: want a follower (replica) read", shard)
		}
		for _, r := range shard.SlotRanges {
			var lo, hi int
			if _, err := fmt.Sscanf(r, "%d-%d", &lo, &hi); err != nil {
				t.Fatalf("slot range %q: %v", r, err)
			}
			slots += hi - lo + 1
		}
		total += shard.Bytes
		rdb := bf.restoreShard(shard)
		iter := rdb.Scan(context.Background(), 0, "*", 1000).Iterator()
		for iter.Next(context.Background()) {
			k := iter.Val()
			if _, dup := got[k]; dup {
				t.Errorf("key %s in two shards", k)
			}
			got[k] = rdb.Get(context.Background(), k).Val()
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if slots != 16384 || total != b.Status.TotalBytes {
		t.Errorf("the shards cover %d slots in %d bytes; want 16384 in %d", slots, total, b.Status.TotalBytes)
	}
	if len(got) != keys {
		t.Errorf("%d keys in the shards, want %d", len(got), keys)
	}
	for i := range keys {
		if k := fmt.Sprintf("key-%d", i); got[k] != fmt.Sprintf("value-%d", i) {
			t.Fatalf("%s = %q in the backup", k, got[k])
		}
	}
}
