//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

func restoringRedis(ns, name, backup string) *v1beta2.Redis {
	return &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Restore: &v1beta2.RestoreSpec{BackupName: backup}}}
}

// waitRestoreCondition waits for the Restored condition's status and reason, and for the
// Degraded or Progressing condition to carry the same reason when the restore is not done.
func waitRestoreCondition(t *testing.T, c client.Client, cr *v1beta2.Redis, want metav1.ConditionStatus, reason, also string) {
	t.Helper()
	waitUntil(t, 30*time.Second, fmt.Sprintf("%s Restored=%s %s", cr.Name, want, reason), func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		got := meta.FindStatusCondition(cr.Status.Conditions, ConditionRestored)
		other := meta.FindStatusCondition(cr.Status.Conditions, also)
		if got != nil && got.Status == want && got.Reason == reason &&
			(also == "" || other != nil && other.Status == metav1.ConditionTrue && other.Reason == reason) {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})
}

// noStatefulSet checks that nothing started in the restored resource's place.
func noStatefulSet(t *testing.T, c client.Client, cr *v1beta2.Redis) {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet %s: %v, want none", cr.Name, err)
	}
}

// A Redis restored from a backup of another serves every key of it; a restore that cannot be
// done creates nothing, and a running Redis is never restored into.
func TestRestoreIntoRedis(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	source, kubelet := runReadyStandalone(ctx, t, c, ns, "source")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("source-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)
	f := newBackupFixture(t, c, ns)
	nightly := f.create("nightly", v1alpha1.TargetRedis, "source", "", "s3-credentials")
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte("not-the-secret")}}); err != nil {
		t.Fatal(err)
	}
	failed := f.create("failed", v1alpha1.TargetRedis, "source", "", "wrong-credentials")
	f.create("pending", v1alpha1.TargetRedis, "nowhere", "", "s3-credentials") // waits for its target
	f.waitPhase(nightly, v1alpha1.BackupCompleted)
	f.waitPhase(failed, v1alpha1.BackupFailed)

	// Refused or waiting: no StatefulSet, the reason in the conditions.
	missing := restoringRedis(ns, "from-missing", "not-there")
	fromFailed := restoringRedis(ns, "from-failed", "failed")
	fromPending := restoringRedis(ns, "from-pending", "pending")
	for _, cr := range []*v1beta2.Redis{missing, fromFailed, fromPending} {
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	waitRestoreCondition(t, c, missing, metav1.ConditionFalse, status.ReasonRestoreBackupNotFound, v1beta2.ConditionProgressing)
	waitRestoreCondition(t, c, fromFailed, metav1.ConditionFalse, status.ReasonRestoreBackupFailed, v1beta2.ConditionDegraded)
	waitRestoreCondition(t, c, fromPending, metav1.ConditionFalse, status.ReasonRestoreBackupNotReady, v1beta2.ConditionProgressing)
	waitForEvent(t, c, ns, "from-failed", status.ReasonRestoreBackupFailed)

	// The running source is never restored into: Degraded, reconciled without the init container.
	if err := c.Get(ctx, client.ObjectKeyFromObject(source), source); err != nil {
		t.Fatal(err)
	}
	source.Spec.Restore = &v1beta2.RestoreSpec{BackupName: "nightly"}
	if err := c.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	waitRestoreCondition(t, c, source, metav1.ConditionFalse, status.ReasonRestoreRefused, v1beta2.ConditionDegraded)
	waitForEvent(t, c, ns, "source", status.ReasonRestoreRefused)

	// Restored into a new Redis: the init container fills its volume before Redis starts.
	restored := restoringRedis(ns, "restored", "nightly")
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "StatefulSet restored", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(restored), &sts)
	})
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "restore" || inits[0].Image != "redis-operator:test" ||
		sts.Annotations[builder.AnnotationRestoredFrom] != "nightly" {
		t.Fatalf("init containers %+v, annotations %v; want the restore's, from nightly", inits, sts.Annotations)
	}
	kubelet.runStatefulSet(ctx, ns, "restored")
	waitStandaloneReady(t, c, restored)
	waitRestoreCondition(t, c, restored, metav1.ConditionTrue, status.ReasonRestored, "")
	restoredClient := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("restored-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = restoredClient.Close() }()
	checkBackupKeys(ctx, t, restoredClient)
	waitForEvent(t, c, ns, "restored", status.ReasonRestored)
	if n := countEvents(t, c, ns, "restored", status.ReasonRestored); n != 1 {
		t.Errorf("%d Restored events, want 1", n)
	}

	// The backup deleted (as a schedule's retention does): the restored Redis keeps its pod
	// template, built from the restore its StatefulSet recorded, so its pod is not restarted.
	if err := c.Get(ctx, client.ObjectKeyFromObject(restored), &sts); err != nil {
		t.Fatal(err)
	}
	generation := sts.Generation
	if err := c.Delete(ctx, &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "backup nightly gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &v1alpha1.RedisBackup{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(restored), &sts); err != nil {
			t.Fatal(err)
		}
		if sts.Generation != generation || len(sts.Spec.Template.Spec.InitContainers) != 1 {
			t.Fatalf("the backup's deletion changed the restored StatefulSet: generation %d → %d, init containers %+v",
				generation, sts.Generation, sts.Spec.Template.Spec.InitContainers)
		}
	}

	// Every refusal left its resource without a StatefulSet; the source has no init container.
	noStatefulSet(t, c, missing)
	noStatefulSet(t, c, fromFailed)
	noStatefulSet(t, c, fromPending)
	if err := c.Get(ctx, client.ObjectKeyFromObject(source), &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Spec.Template.Spec.InitContainers) != 0 || sts.Annotations[builder.AnnotationRestoredFrom] != "" {
		t.Errorf("the running source got %+v, annotations %v", sts.Spec.Template.Spec.InitContainers, sts.Annotations)
	}
}

// waitReplicationRestored waits for a restored replication to be Ready with its master, every
// pod ready, and Restored=True.
func waitReplicationRestored(t *testing.T, c client.Client, cr *v1beta2.RedisReplication, master string) {
	t.Helper()
	waitUntil(t, 60*time.Second, cr.Name+" Ready and Restored with master "+master, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		restored := meta.FindStatusCondition(cr.Status.Conditions, ConditionRestored)
		if cr.Status.State == ReplicationStateReady && ready != nil && ready.Status == metav1.ConditionTrue &&
			ready.ObservedGeneration == cr.Generation && cr.Status.MasterNode == master && cr.Status.ReadyReplicas == *cr.Spec.Size &&
			restored != nil && restored.Status == metav1.ConditionTrue && restored.Reason == status.ReasonRestored {
			return nil
		}
		return fmt.Errorf("state %q master %q ready %d, conditions %s", cr.Status.State, cr.Status.MasterNode,
			cr.Status.ReadyReplicas, describeConditions(cr.Status.Conditions))
	})
}

// backedUpReplication runs the replication rr (3 pods) with the backup keys and takes its
// backup nightly, Completed, from a replica.
func backedUpReplication(t *testing.T) (*replicationFixture, *v1alpha1.RedisBackup) {
	t.Helper()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	writeBackupKeys(f.ctx, t, f.redis("rr-0"))
	waitUntil(t, 15*time.Second, "replicas caught up", func() error {
		for _, pod := range []string{"rr-1", "rr-2"} {
			if n, err := f.redis(pod).DBSize(f.ctx).Result(); err != nil || n != backupKeys {
				return fmt.Errorf("%s: %d keys, %w", pod, n, err)
			}
		}
		return nil
	})
	bf := newBackupFixture(t, f.c, f.cr.Namespace)
	nightly := bf.create("nightly", v1alpha1.TargetRedisReplication, "rr", v1alpha1.SourcePreferReplica, "s3-credentials")
	bf.waitPhase(nightly, v1alpha1.BackupCompleted)
	return f, nightly
}

// restoringReplication is a new replication of two pods, with the fixture's password, that
// restores the backup.
func restoringReplication(ns, name, backup string) *v1beta2.RedisReplication {
	size := int32(2)
	secretName, secretKey := "redis-secret", "password"
	return &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta2.RedisReplicationSpec{Size: &size,
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
				ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}},
			Restore: &v1beta2.RestoreSpec{BackupName: backup}}}
}

// A restored replication watched by its embedded sentinels: the operator makes the restored
// pod 0 master before any sentinel exists, so the sentinels are seeded with it and monitor it,
// and the replica syncs every key from it.
func TestRestoreIntoRedisReplicationWithSentinels(t *testing.T) {
	t.Parallel()
	f, _ := backedUpReplication(t)
	ctx, c, ns := f.ctx, f.c, f.cr.Namespace
	restored := restoringReplication(ns, "restored", "nightly")
	restored.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.0.15",
		SentinelConfig: v1beta2.SentinelConfig{DownAfterMilliseconds: "1000", FailoverTimeout: "5000", ParallelSyncs: "1"}}
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	f.kubelet.runStatefulSet(ctx, ns, "restored")
	sentinels := f.sentinelKubelet(builder.EmbeddedSentinelStatefulSetName("restored"), builder.EmbeddedMasterGroupName)
	sentinels.nextIP = 150
	sentinels.runStatefulSet(ctx, ns, builder.EmbeddedSentinelStatefulSetName("restored"))
	waitReplicationRestored(t, c, restored, "restored-0")
	for _, pod := range []string{"restored-0", "restored-1"} {
		checkBackupKeys(ctx, t, f.redis(pod))
	}
	masterIP := f.kubelet.pod("restored-0").ip
	for _, name := range sentinels.podNames() {
		sc, err := f.op.pool.Client(redis.NewEndpoint(sentinels.pod(name).ip, builder.DefaultSentinelPort, redis.Auth{}))
		if err != nil {
			t.Fatal(err)
		}
		state, err := sc.SentinelMaster(ctx, builder.EmbeddedMasterGroupName)
		if err != nil || state["ip"] != masterIP {
			t.Errorf("%s: SENTINEL MASTER %v (%v), want the restored pod 0 at %s", name, state, err, masterIP)
		}
	}
}

// A RedisReplication restored from a backup of another starts with the backup's data on its
// first master, pod 0, which alone restores; its replica syncs every key from it. Once
// restored, a pod 0 recreated without its volume skips the restore (the backup is deleted by
// then) and syncs from the master like any replica.
func TestRestoreIntoRedisReplication(t *testing.T) {
	t.Parallel()
	f, nightly := backedUpReplication(t)
	ctx, c, ns := f.ctx, f.c, f.cr.Namespace

	// The running source is never restored into.
	if err := c.Get(ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	f.cr.Spec.Restore = &v1beta2.RestoreSpec{BackupName: "nightly"}
	if err := c.Update(ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "rr refuses the restore", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		restored := meta.FindStatusCondition(f.cr.Status.Conditions, ConditionRestored)
		degraded := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionDegraded)
		if restored != nil && restored.Reason == status.ReasonRestoreRefused && degraded != nil && degraded.Status == metav1.ConditionTrue {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
	})

	restored := restoringReplication(ns, "restored", "nightly")
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "StatefulSet restored", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(restored), &sts)
	})
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "restore" || inits[0].Image != "redis-operator:test" ||
		!strings.Contains(strings.Join(inits[0].Command, " "), "--only-ordinal 0") {
		t.Fatalf("init containers %+v; want the restore, in pod 0 only", inits)
	}
	recorded, err := builder.RecordedRestore(sts.Annotations)
	if sts.Annotations[builder.AnnotationRestoredFrom] != "nightly" || err != nil || recorded == nil ||
		recorded.SHA256 != nightly.Status.Shards[0].SHA256 || recorded.Bytes != nightly.Status.Shards[0].Bytes {
		t.Fatalf("annotations %v (%v); want the restore of nightly recorded", sts.Annotations, err)
	}
	// Pod 1 starts first (as with podManagementPolicy Parallel, or pod 0 still downloading):
	// it skips the restore and answers empty, and must not be made the first master.
	f.kubelet.startPod(ctx, &sts, 1, "")
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(restored), restored); err != nil {
			t.Fatal(err)
		}
		if restored.Status.MasterNode != "" {
			t.Fatalf("master %s chosen before the restored pod 0 answers", restored.Status.MasterNode)
		}
	}
	if n, err := f.redis("restored-1").DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("restored-1 holds %d keys (%v): it restored, though only pod 0 does", n, err)
	}
	if role, err := f.redis("restored-1").Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "slave" {
		t.Fatalf("restored-1 ROLE %v, %v; want it still waiting for its master", role, err)
	}
	f.kubelet.startPod(ctx, &sts, 0, "")
	waitReplicationRestored(t, c, restored, "restored-0")
	for _, pod := range []string{"restored-0", "restored-1"} {
		checkBackupKeys(ctx, t, f.redis(pod))
	}
	if role, err := f.redis("restored-1").Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "slave" {
		t.Errorf("restored-1 ROLE %v, %v; want a replica", role, err)
	}
	waitForEvent(t, c, ns, "restored", status.ReasonRestored)

	// Restored: the state ConfigMap says so, which no pod template carries.
	generation := sts.Generation
	waitUntil(t, 30*time.Second, "the restore state says restored", func() error {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: builder.RestoreStateConfigMapName("restored")}, &cm); err != nil {
			return err
		}
		if cm.Data[builder.RestoreDoneKey] != "nightly" {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(restored), &sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != generation {
		t.Errorf("the restore being done changed the StatefulSet: generation %d → %d", generation, sts.Generation)
	}

	// The backup deleted, and with it its object: pod 0 recreated without its volume skips
	// the restore (run, it would fail on the missing object, and its data would be older than
	// the master's), comes back empty, and the replica holding the data takes over.
	if err := c.Delete(ctx, &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "backup nightly gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &v1alpha1.RedisBackup{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	if _, err := f.redis("restored-0").Set(ctx, "after-restore", "1", 0).Result(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the replica has the write made after the restore", func() error {
		return f.redis("restored-1").Get(ctx, "after-restore").Err()
	})
	f.kubelet.deletePod(ctx, ns, "restored-0", syscall.SIGKILL)
	f.kubelet.startPod(ctx, &sts, 0, "")
	waitReplicationRestored(t, c, restored, "restored-1")
	for _, pod := range []string{"restored-0", "restored-1"} {
		waitUntil(t, 15*time.Second, pod+" holds every key", func() error {
			n, err := f.redis(pod).DBSize(ctx).Result()
			if err != nil || n != backupKeys+1 {
				return fmt.Errorf("%d keys, %w", n, err)
			}
			return nil
		})
		if err := f.redis(pod).Get(ctx, "after-restore").Err(); err != nil {
			t.Errorf("%s: the write made after the restore: %v", pod, err)
		}
	}
	if err := f.redis("restored-0").Del(ctx, "after-restore").Err(); err == nil {
		t.Error("restored-0 took a write: it should be a read-only replica now")
	}
}
