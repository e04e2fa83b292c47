//go:build integration

package controller

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
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

// keySlot is the cluster slot of a key without a hash tag: CRC16 (XMODEM) modulo 16384.
func keySlot(key string) int {
	var crc uint16
	for _, b := range []byte(key) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % redis.SlotCount
}

// keylessSlot: the slots the restore test leaves without keys, so that the restored cluster
// must also serve slots that no restored node claims by its keys.
func keylessSlot(slot int) bool {
	return slot >= 5000 && slot < 5100 || slot >= 16300
}

// restoreTestKeys is one key per slot but the keyless ones, and whether it has a TTL.
func restoreTestKeys() map[string]bool {
	bySlot := map[int]string{}
	for i := 0; len(bySlot) < redis.SlotCount-100-84; i++ {
		k := "restore:" + strconv.Itoa(i)
		if slot := keySlot(k); !keylessSlot(slot) && bySlot[slot] == "" {
			bySlot[slot] = k
		}
	}
	out := map[string]bool{}
	for slot, k := range bySlot {
		out[k] = slot%7 == 0
	}
	return out
}

// passwordNode is a client of one pod of a cluster fixture that requires password.
func (f *clusterFixture) passwordNode(pod, password string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(pod).addr(f.port), Password: password})
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (f *clusterFixture) passwordClusterClient(password string) *goredis.ClusterClient {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: f.addrs(), Password: password, MaxRedirects: 8})
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

// leaderSlots reads, from pod's view, the slots each leader pod serves as a master.
func (f *clusterFixture) leaderSlots(pod, password string) map[int][]redis.SlotRange {
	f.t.Helper()
	text, err := f.passwordNode(pod, password).ClusterNodes(f.ctx).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[int][]redis.SlotRange{}
	for i := range int(builder.LeaderReplicas(f.get())) {
		node, ok := topo.NodeByAddr(f.kubelet.pod(fmt.Sprintf("%s-leader-%d", f.name, i)).addr(f.port))
		if !ok || !node.IsMaster() {
			f.t.Errorf("%s's view: leader %d is no master (%+v)", pod, i, node)
			continue
		}
		out[i] = redis.NormalizeSlotRanges(node.Slots)
	}
	return out
}

// checkServedAsBackedUp checks a restored cluster's slot map (restored, by leader ordinal)
// against its backup: each leader serves what the source's leader of its ordinal served
// (source), and each of the backup's shards is what one restored leader serves.
func checkServedAsBackedUp(t *testing.T, shards []v1alpha1.ShardBackup, source, restored map[int][]redis.SlotRange) {
	t.Helper()
	for i := range source {
		if !slices.Equal(restored[i], source[i]) {
			t.Errorf("leader %d serves %v, the source's leader served %v", i, restored[i], source[i])
		}
	}
	for _, shard := range shards {
		var ranges []redis.SlotRange
		for _, text := range shard.SlotRanges {
			r, err := redis.ParseSlotRange(text)
			if err != nil {
				t.Fatal(err)
			}
			ranges = append(ranges, r)
		}
		if !slices.ContainsFunc(slices.Collect(maps.Values(restored)), func(served []redis.SlotRange) bool {
			return slices.Equal(served, redis.NormalizeSlotRanges(ranges))
		}) {
			t.Errorf("shard %s (%v) is served by no restored leader: %v", shard.Node, shard.SlotRanges, restored)
		}
	}
}

// A RedisCluster restored from a backup of another starts shard by shard from it: each
// leader restores the snapshot of its slots and serves them, the followers sync from the
// restored masters, and the cluster is Ready and Restored only once every slot is served:
// every key reads back with its value and TTL through a cluster client, and the slot map is
// the backup's. Made before its backup, it waits for it, creating nothing; a backup of
// another number of shards is refused, creating nothing, and the running source is never
// restored into.
func TestRestoreIntoRedisCluster(t *testing.T) {
	t.Parallel()
	const password = "restore-secret"
	startOperator(t, testNamespace(t))
	f := newClusterFixtureWithPassword(t, 3, 3, password)
	f.runPods()
	f.waitReady(90 * time.Second)
	ctx, c, ns := f.ctx, f.c, f.ns

	newCluster := func(name string, leaders int32, port int) *v1beta2.RedisCluster {
		secretName, secretKey := "redis-secret", "password"
		followers := leaders
		cr := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1beta2.RedisClusterSpec{Size: &leaders, Port: &port,
				KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
					ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}},
				Restore: &v1beta2.RestoreSpec{BackupName: "nightly"}}}
		cr.Spec.RedisFollower.Replicas = &followers
		return cr
	}
	waitClusterRestoreCondition := func(cr *v1beta2.RedisCluster, want metav1.ConditionStatus, reason string) {
		t.Helper()
		waitUntil(t, 60*time.Second, fmt.Sprintf("%s Restored=%s %s", cr.Name, want, reason), func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
				return err
			}
			got := meta.FindStatusCondition(cr.Status.Conditions, ConditionRestored)
			if got != nil && got.Status == want && got.Reason == reason {
				return nil
			}
			return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
		})
	}

	keys := restoreTestKeys()
	for _, k := range []string{"restore:0", "restore:1", "restore:99"} {
		if got, err := f.passwordNode(f.name+"-leader-0", password).ClusterKeySlot(ctx, k).Result(); err != nil || int(got) != keySlot(k) {
			t.Fatalf("CLUSTER KEYSLOT %s = %d (%v), the test computes %d", k, got, err, keySlot(k))
		}
	}
	source := f.passwordClusterClient(password)
	if _, err := source.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for k, ttl := range keys {
			exp := time.Duration(0)
			if ttl {
				exp = time.Hour
			}
			p.Set(ctx, k, "v:"+k, exp)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := f.passwordNode(fmt.Sprintf("%s-leader-%d", f.name, i), password).Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
			t.Fatal(err)
		}
	}
	g := &clusterFixture{t: t, ctx: ctx, c: c, name: "restored", ns: ns, port: nextTestPort()}
	g.kubelet = newFakeKubelet(t, c, g.port)
	g.kubelet.password = password
	restored := newCluster(g.name, 3, g.port)
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	waitClusterRestoreCondition(restored, metav1.ConditionFalse, status.ReasonRestoreBackupNotFound)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored-leader"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("StatefulSet restored-leader before the backup: %v, want none", err)
	}
	bf := newBackupFixture(t, c, ns)
	nightly := bf.create("nightly", v1alpha1.TargetRedisCluster, f.name, "", "s3-credentials")
	bf.waitPhase(nightly, v1alpha1.BackupCompleted)
	if len(nightly.Status.Shards) != 3 {
		t.Fatalf("shards %+v, want 3", nightly.Status.Shards)
	}
	sourceSlots := f.leaderSlots(f.name+"-leader-0", password)

	// Two leaders for three shards: refused, Degraded, nothing created.
	small := newCluster("small", 2, nextTestPort())
	if err := c.Create(ctx, small); err != nil {
		t.Fatal(err)
	}
	waitClusterRestoreCondition(small, metav1.ConditionFalse, status.ReasonRestoreMismatch)
	if d := meta.FindStatusCondition(small.Status.Conditions, v1beta2.ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue {
		t.Errorf("small: %s, want Degraded", describeConditions(small.Status.Conditions))
	}

	// Restored into a new cluster of three leaders and three followers, made before the
	// backup: it waits for it, creating nothing, and goes on once the backup completes.
	var leaderSts, followerSts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "the restored cluster's StatefulSets", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored-leader"}, &leaderSts); err != nil {
			return err
		}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored-follower"}, &followerSts)
	})
	inits := leaderSts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "restore" || strings.Count(strings.Join(inits[0].Command, " "), "--ordinal-object") != 3 {
		t.Fatalf("leader init containers %+v; want the restore of three shards", inits)
	}
	if n := len(followerSts.Spec.Template.Spec.InitContainers); n != 0 {
		t.Errorf("follower init containers %+v, want none", followerSts.Spec.Template.Spec.InitContainers)
	}
	g.runPods()
	g.waitReady(120 * time.Second)
	waitClusterRestoreCondition(restored, metav1.ConditionTrue, status.ReasonRestored)
	waitForEvent(t, c, ns, "restored", status.ReasonRestored)

	// Every key, with its value and its TTL, through a cluster client.
	rc := g.passwordClusterClient(password)
	gets := map[string]*goredis.StringCmd{}
	ttls := map[string]*goredis.DurationCmd{}
	if _, err := rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for k := range keys {
			gets[k], ttls[k] = p.Get(ctx, k), p.TTL(ctx, k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for k, ttl := range keys {
		if gets[k].Val() != "v:"+k || ttl != (ttls[k].Val() > 0) {
			if bad++; bad < 5 {
				t.Errorf("%s = %q TTL %v; want v:%s with a TTL %v", k, gets[k].Val(), ttls[k].Val(), k, ttl)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d keys do not read back", bad, len(keys))
	}
	var total int64
	for i := range 3 {
		n, err := g.passwordNode(fmt.Sprintf("restored-leader-%d", i), password).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != int64(len(keys)) {
		t.Errorf("the leaders hold %d keys, want %d", total, len(keys))
	}
	for _, pod := range g.podNames() {
		info, err := g.passwordNode(pod, password).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			t.Errorf("%s: CLUSTER INFO %q, %v", pod, info, err)
		}
	}
	// The backup's slot map, leader by leader, as the source served it.
	checkServedAsBackedUp(t, nightly.Status.Shards, sourceSlots, g.leaderSlots("restored-leader-0", password))
	for i := range 3 {
		follower := fmt.Sprintf("restored-follower-%d", i)
		role, err := g.passwordNode(follower, password).Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "slave" {
			t.Errorf("%s ROLE %v, %v; want a replica", follower, role, err)
		}
	}
	waitUntil(t, 30*time.Second, "the restore state says restored", func() error {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: builder.RestoreStateConfigMapName("restored-leader")}, &cm); err != nil {
			return err
		}
		if cm.Data[builder.RestoreDoneKey] != "nightly" {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})

	// The backup deleted, and its objects with it: a leader recreated without its volume
	// skips the restore (it would fail on the missing object, and its data would be older
	// than its shard's), comes back empty, and the cluster serves every key again.
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
	for i := range 3 {
		dir := g.kubelet.pod(fmt.Sprintf("restored-leader-%d", i)).dataDir
		if markers, err := filepath.Glob(filepath.Join(dir, ".restored-*")); err != nil || len(markers) != 1 {
			t.Fatalf("restored-leader-%d: markers %v (%v), want its shard's", i, markers, err)
		}
	}
	g.kubelet.deletePod(ctx, ns, "restored-leader-1", syscall.SIGKILL)
	waitUntil(t, 60*time.Second, "follower of leader-1 promoted", func() error {
		for i := range 3 {
			role, err := g.passwordNode(fmt.Sprintf("restored-follower-%d", i), password).Do(ctx, "ROLE").Slice()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return nil
			}
		}
		return errors.New("no follower is master yet")
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(&leaderSts), &leaderSts); err != nil {
		t.Fatal(err)
	}
	g.kubelet.startPod(ctx, &leaderSts, 1, "")
	if markers, err := filepath.Glob(filepath.Join(g.kubelet.pod("restored-leader-1").dataDir, ".restored-*")); err != nil || len(markers) != 0 {
		t.Fatalf("leader-1 recreated without its volume restored %v (%v); it should have skipped", markers, err)
	}
	g.waitReady(120 * time.Second)
	if n, err := g.passwordNode("restored-leader-1", password).Do(ctx, "ROLE").Slice(); err != nil || len(n) == 0 {
		t.Fatalf("restored-leader-1 ROLE %v, %v", n, err)
	}
	after := g.passwordClusterClient(password) // at the pods' addresses now, leader-1's new one
	missing := 0
	for k := range keys {
		if v, err := after.Get(ctx, k).Result(); err != nil || v != "v:"+k {
			if missing++; missing < 5 {
				t.Errorf("after leader-1 came back empty: %s = %q, %v", k, v, err)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d keys lost after leader-1 came back empty", missing, len(keys))
	}

	// The running source is never restored into.
	cr := f.get()
	cr.Spec.Restore = &v1beta2.RestoreSpec{BackupName: "nightly"}
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitClusterRestoreCondition(cr, metav1.ConditionFalse, status.ReasonRestoreRefused)
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: f.name + "-leader"}, &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Spec.Template.Spec.InitContainers) != 0 || sts.Annotations[builder.AnnotationRestoredFrom] != "" {
		t.Errorf("the running source got %+v, annotations %v", sts.Spec.Template.Spec.InitContainers, sts.Annotations)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "small-leader"}, &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet small-leader: %v, want none", err)
	}
}

// A RedisCluster's backup on a claim restores into a new RedisCluster through the claim's
// store. The backup's shards are files on the claim, at pvc://<claim>/<subPath>/backups/...;
// the new cluster's leaders restore them from the store's Service (no other endpoint answers
// here), and the cluster is Ready and Restored with every key read back with its value, each
// leader serving the slots of the shard it restored, as the source served them.
func TestRestoreIntoRedisClusterFromAClaim(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	store := newClaimStore(t, ns, "backups")
	startOperator(t, ns, store.stores())
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(90 * time.Second)
	ctx, c := f.ctx, f.c
	const keys = 1000
	f.writeKeys(keys)
	createClaim(t, c, ns, "backups")
	nightly := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedisCluster, Name: f.name},
			Storage: v1alpha1.BackupStorage{PersistentVolumeClaim: &v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "clusters"}}}}
	if err := c.Create(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	store.serve()
	(&backupFixture{t: t, c: c, ns: ns}).waitPhase(nightly, v1alpha1.BackupCompleted)
	want := "pvc://backups/clusters/backups/" + ns + "/nightly/"
	if nightly.Status.Location != want || len(nightly.Status.Shards) != 3 {
		t.Fatalf("RedisBackup nightly at %s, shards %+v; want 3 at %s", nightly.Status.Location, nightly.Status.Shards, want)
	}
	var files []string
	for _, shard := range nightly.Status.Shards {
		if shard.Location != want+shard.Node+".rdb" {
			t.Errorf("shard %s at %s, want %s%s.rdb", shard.Node, shard.Location, want, shard.Node)
		}
		files = append(files, ns+"/nightly/"+shard.Node+".rdb")
	}
	slices.Sort(files)
	if got := store.files(); !slices.Equal(got, files) {
		t.Fatalf("the claim holds %v, want the shards' %v", got, files)
	}
	sourceSlots := f.leaderSlots(f.name+"-leader-0", "")

	g := &clusterFixture{t: t, ctx: ctx, c: c, name: "restored", ns: ns, port: nextTestPort()}
	g.kubelet = newFakeKubelet(t, c, g.port)
	store.reachedBy(g.kubelet)
	leaders, followers, port := int32(3), int32(3), g.port
	restored := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: ns},
		Spec: v1beta2.RedisClusterSpec{Size: &leaders, Port: &port, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Restore: &v1beta2.RestoreSpec{BackupName: "nightly"}}}
	restored.Spec.RedisFollower.Replicas = &followers
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	var leaderSts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "the restored cluster's leader StatefulSet", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored-leader"}, &leaderSts)
	})
	if inits := leaderSts.Spec.Template.Spec.InitContainers; len(inits) != 1 ||
		!strings.Contains(strings.Join(inits[0].Command, " "), "--endpoint http://backups-backup-store:8333 ") {
		t.Fatalf("leader init containers %+v; want the restore from the claim store's Service", inits)
	}
	g.runPods()
	g.waitReady(120 * time.Second)
	waitUntil(t, 30*time.Second, "restored Restored", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(restored), restored); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(restored.Status.Conditions, ConditionRestored) {
			return fmt.Errorf("conditions %s", describeConditions(restored.Status.Conditions))
		}
		return nil
	})
	for i := range 3 {
		dir := g.kubelet.pod(fmt.Sprintf("restored-leader-%d", i)).dataDir
		if markers, err := filepath.Glob(filepath.Join(dir, ".restored-*")); err != nil || len(markers) != 1 {
			t.Errorf("restored-leader-%d: restore markers %v (%v), want its shard's", i, markers, err)
		}
	}

	// Every key with its value, and no other, each leader serving the backup's shard.
	g.readKeys(keys)
	var total int64
	for i := range 3 {
		total += g.dbSize(fmt.Sprintf("restored-leader-%d", i))
	}
	if total != keys {
		t.Errorf("the leaders hold %d keys, want %d", total, keys)
	}
	checkServedAsBackedUp(t, nightly.Status.Shards, sourceSlots, g.leaderSlots("restored-leader-0", ""))
}
