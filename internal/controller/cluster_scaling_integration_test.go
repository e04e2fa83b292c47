//go:build integration

package controller

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
	"github.com/rediskube/redis-operator/internal/writecheck"
)

// followStatefulSets does what the StatefulSet controller would after a resize: it starts the
// pods of new ordinals and stops (SIGTERM) and deletes those beyond the size.
func (f *clusterFixture) followStatefulSets() {
	f.t.Helper()
	for _, role := range []string{builder.RoleLeader, builder.RoleFollower} {
		var sts appsv1.StatefulSet
		name := builder.ClusterStatefulSetName(f.name, role)
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &sts); err != nil {
			continue // none with zero followers
		}
		for i := 0; i < int(*sts.Spec.Replicas); i++ {
			if f.kubelet.pod(fmt.Sprintf("%s-%d", name, i)) == nil {
				f.kubelet.startPod(f.ctx, &sts, i, "")
			}
		}
		for _, pod := range f.kubelet.podNames() {
			if strings.HasPrefix(pod, name+"-") && podOrdinal(pod) >= int(*sts.Spec.Replicas) {
				f.kubelet.deletePod(f.ctx, f.ns, pod, syscall.SIGTERM)
			}
		}
	}
}

// waitReadyFollowing waits for Ready while acting as the StatefulSet controller.
func (f *clusterFixture) waitReadyFollowing(timeout time.Duration) {
	f.t.Helper()
	f.waitReadyFollowingChecking(timeout, nil)
}

// waitReadyFollowingChecking is waitReadyFollowing that also runs check on every round, before
// the pods beyond the StatefulSets' sizes are deleted.
func (f *clusterFixture) waitReadyFollowingChecking(timeout time.Duration, check func()) {
	f.t.Helper()
	waitUntil(f.t, timeout, "RedisCluster Ready after the resize", func() error {
		if check != nil {
			check()
		}
		f.followStatefulSets()
		cr := f.get()
		if cr.Status.State != status.ClusterStateReady || !conditionTrue(cr.Status.Conditions, "Ready", cr.Generation) {
			return fmt.Errorf("state %q reason %q conditions %s", cr.Status.State, cr.Status.Reason, describeConditions(cr.Status.Conditions))
		}
		if got, want := len(f.kubelet.podNames()), len(f.podNames()); got != want {
			return fmt.Errorf("%d pods run, want %d", got, want)
		}
		return nil
	})
}

// slotsPerLeader reads, from leader-0's view, how many slots each leader pod serves.
func (f *clusterFixture) slotsPerLeader() map[string]int {
	f.t.Helper()
	topo := f.topology(f.name + "-leader-0")
	out := map[string]int{}
	for _, pod := range f.kubelet.podNames() {
		if node, ok := topo.NodeByAddr(f.kubelet.pod(pod).addr(f.port)); ok && node.SlotCount() > 0 {
			out[pod] = node.SlotCount()
		}
	}
	return out
}

func (f *clusterFixture) resize(leaders, followers int32) {
	f.t.Helper()
	cr := f.get()
	cr.Spec.Size = &leaders
	cr.Spec.RedisFollower.Replicas = &followers
	if err := f.c.Update(f.ctx, cr); err != nil {
		f.t.Fatal(err)
	}
}

// A cluster scaled out gets its new leaders a fair share of the slots, moved with their keys;
// scaled back in, the departing leaders hand every slot over before their pods go. A client
// writing the whole time loses no acknowledged write.
func TestScaleOutAndInMoveSlotsWithTheirKeys(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(2000)

	writer := f.clusterClient()
	checker, err := writecheck.Start(f.ctx, writer, writecheck.Options{Prefix: "scale", Writers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Stop()

	f.resize(4, 4)
	f.waitReadyFollowing(120 * time.Second)
	f.assertDesignedShape(4, 1)
	if got := f.slotsPerLeader(); len(got) != 4 || got[f.name+"-leader-3"] != 4096 || got[f.name+"-leader-0"] != 4096 {
		t.Errorf("slots per leader after the scale-out: %v; want 4096 each", got)
	}
	if n := f.dbSize(f.name + "-leader-3"); n == 0 {
		t.Errorf("the new leader holds no keys: the slots moved without them")
	}
	// The replaced operator's metrics: one rebalance, two nodes (at least) met into the
	// established cluster.
	cr := f.get()
	waitCompat(t, cr, map[string]float64{"rediscluster_rebalance_total": 1, "rediscluster_reshard_total": 0,
		"rediscluster_replicas_size_desired": 8, "rediscluster_healthy": 1, "rediscluster_remove_follower_attempt": 0})
	if added, _ := compatSample(t, "rediscluster_adding_node_attempt", cr); added < 2 {
		t.Errorf("rediscluster_adding_node_attempt = %v after two pods joined", added)
	}

	// The scale-in: the departing leader-3 stays a master until its pod goes (it never
	// becomes a replica of a receiver, so no receiver serves it a full sync), and it keeps
	// its replica while it serves slots.
	fullSyncs := f.fullSyncs(3)
	departing := f.name + "-leader-3"
	departingReplica := f.name + "-follower-3"
	f.resize(3, 3)
	f.waitReadyFollowingChecking(120*time.Second, func() {
		if f.kubelet.pod(departing) == nil {
			return
		}
		topo, err := f.tryTopology(departing)
		if err != nil {
			return // stopping
		}
		me, _ := topo.Myself()
		if !me.IsMaster() {
			t.Errorf("the departing %s turned into a replica: %s", departing, me)
		}
		if me.SlotCount() == 0 {
			return
		}
		if f.kubelet.pod(departingReplica) == nil {
			t.Errorf("%s is gone while %s still serves %d slots", departingReplica, departing, me.SlotCount())
		} else if replica, err := f.tryTopology(departingReplica); err == nil {
			if r, _ := replica.Myself(); r.MasterID != me.ID {
				t.Errorf("%s left %s while it serves %d slots: %s", departingReplica, departing, me.SlotCount(), r)
			}
		}
	})
	f.assertDesignedShape(3, 1)
	if after := f.fullSyncs(3); fmt.Sprint(after) != fmt.Sprint(fullSyncs) {
		t.Errorf("full syncs served by the remaining leaders went from %v to %v during the scale-in", fullSyncs, after)
	}
	got := f.slotsPerLeader()
	counts := []int{}
	for _, n := range got {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	if fmt.Sprint(counts) != "[5461 5461 5462]" {
		t.Errorf("slots per leader after the scale-in: %v; want 5462, 5461, 5461", got)
	}

	// One reshard off the departing leader, its follower let go once.
	waitCompat(t, cr, map[string]float64{"rediscluster_rebalance_total": 1, "rediscluster_reshard_total": 1,
		"rediscluster_replicas_size_desired": 6, "rediscluster_healthy": 1, "rediscluster_remove_follower_attempt": 1})

	checker.StopAndRequire(f.ctx, t, f.clusterClient(), "while scaling")
	f.readKeys(2000)
	f.assertMigrateEvents()
	f.assertNoWarnings()
}

// fullSyncs is INFO stats sync_full of leader-0 to leader-(n-1).
func (f *clusterFixture) fullSyncs(n int) []string {
	f.t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		c := f.nodeClient(fmt.Sprintf("%s-leader-%d", f.name, i))
		info, err := c.Info(f.ctx, "stats").Result()
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, redis.ParseInfo(info)["sync_full"])
	}
	return out
}

// tryTopology is topology for a pod that may be stopping.
func (f *clusterFixture) tryTopology(pod string) (redis.Topology, error) {
	p := f.kubelet.pod(pod)
	if p == nil {
		return redis.Topology{}, fmt.Errorf("no pod %s", pod)
	}
	c := goredis.NewClient(&goredis.Options{Addr: p.addr(f.port), MaxRetries: -1})
	defer func() { _ = c.Close() }()
	text, err := c.ClusterNodes(f.ctx).Result()
	if err != nil {
		return redis.Topology{}, err
	}
	return redis.ParseClusterNodes(text)
}

// assertNoWarnings: the operator raised no Warning event on the cluster (the API server's own
// repair loops may warn of other things).
func (f *clusterFixture) assertNoWarnings() {
	f.t.Helper()
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == "Warning" && e.Regarding.Kind == "RedisCluster" {
			f.t.Errorf("Warning event %s: %s", e.Reason, e.Note)
		}
	}
}

func (f *clusterFixture) dbSize(pod string) int64 {
	f.t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(pod).addr(f.port)})
	defer func() { _ = c.Close() }()
	n, err := c.DBSize(f.ctx).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *clusterFixture) assertMigrateEvents() {
	f.t.Helper()
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "ClusterMigrate" && strings.Contains(e.Note, "keys)") {
			return
		}
	}
	f.t.Errorf("no ClusterMigrate event says what was moved")
}

// A slot move left halfway (as an operator stopped between two commands leaves it: the slot
// importing on one master, migrating on another, some keys moved) is finished forward: the
// slot ends on the destination with every key.
func TestInterruptedSlotMoveIsFinished(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 0)
	f.runPods()
	f.waitReady(60 * time.Second)

	// Keys of one slot: a hash tag that CLUSTER KEYSLOT puts in it.
	c := f.clusterClient()
	const slot = 100
	tag := ""
	for i := 0; tag == ""; i++ {
		if s, err := c.ClusterKeySlot(f.ctx, fmt.Sprint("t", i)).Result(); err != nil {
			t.Fatal(err)
		} else if s == slot {
			tag = fmt.Sprint("t", i)
		}
	}
	var keys []string
	for i := 0; i < 20; i++ {
		keys = append(keys, fmt.Sprintf("{%s}%d", tag, i))
	}
	for i, k := range keys {
		if err := c.Set(f.ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f.setSkip(true)
	time.Sleep(500 * time.Millisecond) // let a reconcile in flight finish
	source, target := f.nodeClient(f.name+"-leader-0"), f.nodeClient(f.name+"-leader-1")
	sourceID, targetID := f.nodeID(f.name+"-leader-0"), f.nodeID(f.name+"-leader-1")
	mustDo := func(c *goredis.Client, args ...any) {
		t.Helper()
		if err := c.Do(f.ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	mustDo(target, "cluster", "setslot", slot, "importing", sourceID)
	mustDo(source, "cluster", "setslot", slot, "migrating", targetID)
	targetPod := f.kubelet.pod(f.name + "-leader-1")
	mustDo(source, append([]any{"migrate", targetPod.ip, f.port, "", 0, 5000, "keys"}, toAny(keys[:5])...)...)
	f.setSkip(false)

	waitUntil(t, 30*time.Second, "slot 100 on leader-1 with no move left", func() error {
		topo := f.topology(f.name + "-leader-1")
		me, _ := topo.Myself()
		if !me.OwnsSlot(slot) || len(me.Importing) > 0 {
			return fmt.Errorf("leader-1: %s", me)
		}
		src := f.topology(f.name + "-leader-0")
		if me, _ := src.Myself(); me.OwnsSlot(slot) || len(me.Migrating) > 0 {
			return fmt.Errorf("leader-0: %s", me)
		}
		return nil
	})
	if n, err := target.ClusterCountKeysInSlot(f.ctx, slot).Result(); err != nil || n != int64(len(keys)) {
		t.Errorf("leader-1 holds %d keys of slot %d (%v), want %d", n, slot, err, len(keys))
	}
	for i, k := range keys {
		if got, err := f.clusterClient().Get(f.ctx, k).Int(); err != nil || got != i {
			t.Errorf("GET %s = %d, %v; want %d", k, got, err, i)
		}
	}
	f.waitReady(30 * time.Second)
}

func (f *clusterFixture) nodeClient(pod string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(pod).addr(f.port)})
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (f *clusterFixture) nodeID(pod string) string {
	f.t.Helper()
	topo := f.topology(pod)
	me, ok := topo.Myself()
	if !ok {
		f.t.Fatalf("%s has no myself line", pod)
	}
	return me.ID
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// setSkip sets or removes the skip-reconcile annotation, to act on Redis behind the
// operator's back.
func (f *clusterFixture) setSkip(skip bool) {
	f.t.Helper()
	cr := f.get()
	if skip {
		if cr.Annotations == nil {
			cr.Annotations = map[string]string{}
		}
		cr.Annotations[SkipReconcileClusterAnnotation] = "true"
	} else {
		delete(cr.Annotations, SkipReconcileClusterAnnotation)
	}
	if err := f.c.Update(f.ctx, cr); err != nil {
		f.t.Fatal(err)
	}
}

func conditionTrue(conds []metav1.Condition, typ string, generation int64) bool {
	c := meta.FindStatusCondition(conds, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}
