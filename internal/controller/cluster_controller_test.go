//go:build integration

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// clusterFixture is one RedisCluster with its fake pods, in its own namespace.
type clusterFixture struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	kubelet *fakeKubelet
	name    string
	ns      string
	port    int
}

// testPorts hands each cluster test a port of its own, so no address is ever reused across
// tests, parallel ones included.
var testPorts atomic.Int32

func nextTestPort() int { return 7100 + int(testPorts.Add(1)) }

// testNamespace names the namespace of a test after the test, the same name on every call
// within it; a test run again (go test -count=N) gets a fresh one, since the namespace of
// the previous run may still be terminating.
func testNamespace(t *testing.T) string {
	t.Helper()
	namespacesMu.Lock()
	defer namespacesMu.Unlock()
	if ns, ok := namespacesOfTests[t]; ok {
		return ns
	}
	base := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	namespaceRuns[base]++
	ns := base
	if n := namespaceRuns[base]; n > 1 {
		ns = fmt.Sprintf("%s-%d", base, n)
	}
	namespacesOfTests[t] = ns
	return ns
}

var (
	namespacesMu      sync.Mutex
	namespacesOfTests = map[*testing.T]string{}
	namespaceRuns     = map[string]int{}
)

func newClusterFixture(t *testing.T, leaders, followers int32) *clusterFixture {
	t.Helper()
	return newClusterFixtureWithPassword(t, leaders, followers, "")
}

// newClusterFixtureWithPassword: a password other than "" comes from Secret redis-secret.
func newClusterFixtureWithPassword(t *testing.T, leaders, followers int32, password string) *clusterFixture {
	t.Helper()
	f := &clusterFixture{t: t, ctx: context.Background(), c: newClient(t), name: "shards", ns: testNamespace(t), port: nextTestPort()}
	f.kubelet = newFakeKubelet(t, f.c, f.port)
	if err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	port := f.port
	size := leaders
	cr := &v1beta2.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: f.ns},
		Spec: v1beta2.RedisClusterSpec{
			Size:             &size,
			Port:             &port,
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
		},
	}
	cr.Spec.RedisFollower.Replicas = &followers
	if password != "" {
		f.kubelet.password = password
		if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-secret", Namespace: f.ns},
			Data: map[string][]byte{"password": []byte(password)}}); err != nil {
			t.Fatal(err)
		}
		secretName, secretKey := "redis-secret", "password"
		cr.Spec.KubernetesConfig.ExistingPasswordSecret = &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}
	}
	if err := f.c.Create(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *clusterFixture) runPods() {
	f.kubelet.runStatefulSet(f.ctx, f.ns, f.name+"-leader")
	if n := f.get().Spec.RedisFollower.Replicas; n != nil && *n > 0 {
		f.kubelet.runStatefulSet(f.ctx, f.ns, f.name+"-follower")
	}
}

func (f *clusterFixture) get() *v1beta2.RedisCluster {
	f.t.Helper()
	cr := &v1beta2.RedisCluster{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, cr); err != nil {
		f.t.Fatal(err)
	}
	return cr
}

// waitReady waits for the status to say Ready, for the current generation.
func (f *clusterFixture) waitReady(timeout time.Duration) *v1beta2.RedisCluster {
	f.t.Helper()
	var cr *v1beta2.RedisCluster
	waitUntil(f.t, timeout, "RedisCluster Ready", func() error {
		cr = f.get()
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		if cr.Status.State == status.ClusterStateReady && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cr.Generation {
			return nil
		}
		return fmt.Errorf("state %q reason %q conditions %s", cr.Status.State, cr.Status.Reason, describeConditions(cr.Status.Conditions))
	})
	return cr
}

func describeConditions(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " ")
}

func (f *clusterFixture) addrs() []string {
	var out []string
	for _, name := range f.podNames() {
		out = append(out, f.kubelet.pod(name).addr(f.port))
	}
	return out
}

func (f *clusterFixture) podNames() []string {
	cr := f.get()
	var out []string
	for i := 0; i < int(builder.LeaderReplicas(cr)); i++ {
		out = append(out, fmt.Sprintf("%s-leader-%d", f.name, i))
	}
	for i := 0; i < int(builder.FollowerReplicas(cr)); i++ {
		out = append(out, fmt.Sprintf("%s-follower-%d", f.name, i))
	}
	return out
}

func (f *clusterFixture) clusterClient() *goredis.ClusterClient {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: f.addrs(), MaxRedirects: 8})
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (f *clusterFixture) writeKeys(n int) {
	f.t.Helper()
	c := f.clusterClient()
	for i := 0; i < n; i++ {
		if err := c.Set(f.ctx, fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i), 0).Err(); err != nil {
			f.t.Fatalf("SET key-%d: %v", i, err)
		}
	}
	// Wait until every replica has the writes, so a failover loses none of them.
	for _, addr := range f.addrs() {
		node := goredis.NewClient(&goredis.Options{Addr: addr})
		_ = node.Do(f.ctx, "WAIT", 1, 2000).Err()
		_ = node.Close()
	}
}

func (f *clusterFixture) readKeys(n int) {
	f.t.Helper()
	if err := f.tryReadKeys(n); err != nil {
		f.t.Fatal(err)
	}
}

// tryReadKeys reads the keys writeKeys wrote through a new cluster client and returns the
// first that does not read back.
func (f *clusterFixture) tryReadKeys(n int) error {
	c := f.clusterClient()
	for i := 0; i < n; i++ {
		got, err := c.Get(f.ctx, fmt.Sprintf("key-%d", i)).Result()
		if err != nil {
			return fmt.Errorf("GET key-%d: %w", i, err)
		}
		if got != fmt.Sprintf("value-%d", i) {
			return fmt.Errorf("GET key-%d = %q, want value-%d", i, got, i)
		}
	}
	return nil
}

// topology reads CLUSTER NODES from the pod.
func (f *clusterFixture) topology(pod string) redis.Topology {
	f.t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(pod).addr(f.port)})
	defer func() { _ = c.Close() }()
	text, err := c.ClusterNodes(f.ctx).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		f.t.Fatal(err)
	}
	return topo
}

func (f *clusterFixture) clusterInfo(pod string) map[string]string {
	f.t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(pod).addr(f.port)})
	defer func() { _ = c.Close() }()
	text, err := c.ClusterInfo(f.ctx).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// assertDesignedShape checks, from every pod's view, that leader pods are the masters, each
// with its follower, and that every slot is served.
func (f *clusterFixture) assertDesignedShape(leaders, followersPerLeader int) {
	f.t.Helper()
	for _, pod := range f.podNames() {
		info := f.clusterInfo(pod)
		want := map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384",
			"cluster_known_nodes": strconv.Itoa(leaders * (1 + followersPerLeader)), "cluster_size": strconv.Itoa(leaders)}
		for k, v := range want {
			if info[k] != v {
				f.t.Errorf("pod %s: %s = %s, want %s", pod, k, info[k], v)
			}
		}
	}
	seed := f.topology(f.name + "-leader-0")
	for i := 0; i < leaders; i++ {
		leaderIP := f.kubelet.pod(fmt.Sprintf("%s-leader-%d", f.name, i)).ip
		// Every pod sees the leader as a master with slots; the leader itself lists its
		// replicas (which master a replica follows reaches third pods by gossip later).
		if seen, ok := seed.NodeByAddr(fmt.Sprintf("%s:%d", leaderIP, f.port)); !ok || !seen.IsMaster() || seen.SlotCount() == 0 {
			f.t.Errorf("leader-0 should see leader-%d (%s) as a master with slots: %+v", i, leaderIP, seen)
		}
		topo := f.topology(fmt.Sprintf("%s-leader-%d", f.name, i))
		leader, ok := topo.NodeByAddr(fmt.Sprintf("%s:%d", leaderIP, f.port))
		if !ok || !leader.IsMaster() || leader.SlotCount() == 0 {
			f.t.Errorf("leader-%d (%s) should be a master with slots: %+v", i, leaderIP, leader)
			continue
		}
		if got := len(topo.ReplicasOf(leader.ID)); got != followersPerLeader {
			f.t.Errorf("leader-%d has %d replicas, want %d", i, got, followersPerLeader)
		}
	}
	// Pods carry the role Redis gives them.
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	for _, p := range pods.Items {
		want := builder.RedisRoleMaster
		if strings.Contains(p.Name, "follower") {
			want = builder.RedisRoleSlave
		}
		if got := p.Labels[builder.LabelRedisRole]; got != want {
			f.t.Errorf("pod %s has redis-role=%q, want %q", p.Name, got, want)
		}
	}
}

// assertEvents checks that the operator recorded an Event with each reason on the cluster.
func (f *clusterFixture) assertEvents(reasons ...string) {
	f.t.Helper()
	waitUntil(f.t, 10*time.Second, fmt.Sprintf("events %v", reasons), func() error {
		var events eventsv1.EventList
		if err := f.c.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range events.Items {
			if e.Regarding.Kind == "RedisCluster" && e.Regarding.Name == f.name {
				seen[e.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return fmt.Errorf("no %s event; seen %v", r, seen)
			}
		}
		return nil
	})
}

func TestClusterBootstrapsAndComesBackAfterEveryPodMoves(t *testing.T) {
	t.Parallel()
	op := startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	cr := f.waitReady(60 * time.Second)
	wantSpecUnwritten(t, f.c, cr)
	if cr.Status.ReadyLeaderReplicas != 3 || cr.Status.ReadyFollowerReplicas != 3 {
		t.Errorf("ready counts %d/%d, want 3/3", cr.Status.ReadyLeaderReplicas, cr.Status.ReadyFollowerReplicas)
	}
	f.assertDesignedShape(3, 1)
	f.assertEvents("ClusterMeet", "ClusterAddSlots", "ClusterReplicate", "ClusterReady")
	assertTimeline(t, f.c, f.ns)
	// One event per pod acted on: the events API must not fold them into one.
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	perReason := map[string]int{}
	for _, e := range events.Items {
		perReason[e.Reason]++
	}
	if perReason["ClusterAddSlots"] != 3 || perReason["ClusterReplicate"] < 3 || perReason["ClusterMeet"] < 5 {
		t.Errorf("want an event per pod acted on, got %v", perReason)
	}
	f.writeKeys(300)
	f.readKeys(300)
	for _, kind := range []string{"StatefulSet/shards-leader", "StatefulSet/shards-follower", "Service/shards-leader-headless", "Service/shards-master"} {
		name := strings.Split(kind, "/")[1]
		var obj client.Object = &appsv1.StatefulSet{}
		if strings.HasPrefix(kind, "Service") {
			obj = &corev1.Service{}
		}
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, obj); err != nil {
			t.Errorf("%s: %v", kind, err)
		} else if !metav1.IsControlledBy(obj, cr) {
			t.Errorf("%s is not controlled by the RedisCluster", kind)
		}
	}

	// Steady state: several reconciles (forced by an annotation) write nothing.
	time.Sleep(2 * time.Second)
	apiBefore, redisBefore := op.apiWrites.Load(), op.redisWrites.Load()
	for i := 0; i < 3; i++ {
		cr := f.get()
		if cr.Annotations == nil {
			cr.Annotations = map[string]string{}
		}
		cr.Annotations["test/poke"] = strconv.Itoa(i)
		if err := f.c.Update(f.ctx, cr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if d := op.apiWrites.Load() - apiBefore; d != 0 {
		t.Errorf("steady-state reconciles made %d API writes, want 0: %v", d, op.writesSince(apiBefore))
	}
	if d := op.redisWrites.Load() - redisBefore; d != 0 {
		t.Errorf("steady-state reconciles sent %d Redis commands that write, want 0", d)
	}

	// Every pod goes away at once and comes back with a new IP and its volume.
	var dirs []string
	names := f.podNames()
	for _, name := range names {
		dirs = append(dirs, f.kubelet.deletePod(f.ctx, f.ns, name, syscall.SIGTERM).dataDir)
	}
	for i, name := range names {
		var sts appsv1.StatefulSet
		stsName := name[:strings.LastIndex(name, "-")]
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: stsName}, &sts); err != nil {
			t.Fatal(err)
		}
		f.kubelet.startPod(f.ctx, &sts, podOrdinal(name), dirs[i])
	}
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1)
	f.readKeys(300)
}

func TestLeaderCrashFailsOverAndBack(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(200)

	// leader-1's own view lists its replicas (Ready does not wait for third pods to hear).
	before := f.topology("shards-leader-1")
	leader, _ := before.NodeByAddr(f.kubelet.pod("shards-leader-1").addr(f.port))
	replicas := before.ReplicasOf(leader.ID)
	if len(replicas) != 1 {
		t.Fatalf("leader-1 has %d replicas, want 1", len(replicas))
	}
	if want := f.kubelet.pod("shards-follower-1").ip; replicas[0].Addr.IP != want {
		t.Errorf("leader-1 is replicated by %s, want follower-1 (%s)", replicas[0].Addr.IP, want)
	}
	crashed := f.kubelet.deletePod(f.ctx, f.ns, "shards-leader-1", syscall.SIGKILL)
	// Redis promotes within seconds; a loaded machine can miss an election's votes, and the
	// next election waits four node timeouts: a generous minute.
	waitUntil(t, time.Minute, "the replica of leader-1 promoted by Redis", func() error {
		n, _ := f.topology("shards-leader-0").NodeByID(replicas[0].ID)
		if !n.IsMaster() || n.SlotCount() == 0 {
			return fmt.Errorf("it is %s", n.Flags)
		}
		return nil
	})
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-leader"}, &sts); err != nil {
		t.Fatal(err)
	}
	f.kubelet.startPod(f.ctx, &sts, 1, crashed.dataDir)
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1)
	f.assertEvents("ClusterFailover")
	f.readKeys(200)
}

func TestReplacedFollowerIsReattachedAndItsOldNodeForgotten(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(100)

	f.kubelet.deletePod(f.ctx, f.ns, "shards-follower-2", syscall.SIGKILL)
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-follower"}, &sts); err != nil {
		t.Fatal(err)
	}
	f.kubelet.startPod(f.ctx, &sts, 2, "") // an empty volume: a new node ID
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1) // known nodes is 6 on every pod: the old ID is forgotten
	f.assertEvents("ClusterForget")
	f.readKeys(100)
}

func TestOperatorKilledDuringBootstrapIsFinishedByTheNext(t *testing.T) {
	t.Parallel()
	first := startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	waitUntil(t, 60*time.Second, "bootstrap under way", func() error {
		if first.redisWrites.Load() > 0 {
			return nil
		}
		return fmt.Errorf("no Redis command sent yet")
	})
	first.stop()
	startOperator(t, testNamespace(t))
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1)
	f.writeKeys(100)
	f.readKeys(100)
}

func TestSmallClusterShapes(t *testing.T) {
	t.Parallel()
	t.Run("one shard", func(t *testing.T) {
		startOperator(t, testNamespace(t))
		f := newClusterFixture(t, 1, 1)
		f.runPods()
		f.waitReady(60 * time.Second)
		f.assertDesignedShape(1, 1)
		f.writeKeys(50)
		f.readKeys(50)
	})
	t.Run("no followers", func(t *testing.T) {
		startOperator(t, testNamespace(t))
		f := newClusterFixture(t, 3, 0)
		f.runPods()
		f.waitReady(60 * time.Second)
		f.assertDesignedShape(3, 0)
		// The follower StatefulSet exists all the same, with 0 replicas: scripts expect both.
		var sts appsv1.StatefulSet
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-follower"}, &sts); err != nil {
			t.Errorf("a cluster without followers has no follower StatefulSet: %v", err)
		} else if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 {
			t.Errorf("follower StatefulSet replicas %v, want 0", sts.Spec.Replicas)
		}
	})
}

// A shard without a master (here a master without replicas whose Redis stopped) stops only its
// own slots: the other shards keep taking writes, and the status says which slots are not
// served, and by which shard, until the master is back.
func TestShardWithoutMasterStopsOnlyItsSlots(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 0)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(100)
	cluster := f.clusterClient()
	seed := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("shards-leader-0").addr(f.port)})
	t.Cleanup(func() { _ = seed.Close() })
	victim := f.kubelet.pod("shards-leader-1")
	owned, _ := f.topology("shards-leader-0").NodeByAddr(victim.addr(f.port))
	var lost []string // slots of the stopped shard, as the status must write them
	for _, r := range owned.Slots {
		lost = append(lost, r.String())
	}
	victim.stop(syscall.SIGKILL)

	want := fmt.Sprintf("%d of 16384 slots are not served: slots %s (shard of master shards-leader-1); the other shards keep serving theirs",
		owned.SlotCount(), strings.Join(lost, ","))
	waitUntil(t, 30*time.Second, "Degraded naming the unserved slots", func() error {
		cr := f.get()
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		r := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		if d != nil && d.Status == metav1.ConditionTrue && d.Reason == status.ReasonOutage && strings.HasPrefix(d.Message, want) &&
			r != nil && r.Status == metav1.ConditionFalse && strings.HasPrefix(r.Message, want) {
			return nil
		}
		return fmt.Errorf("conditions: %s", describeConditions(cr.Status.Conditions))
	})
	// Once the cluster agrees the master failed (full coverage required, every node would then
	// refuse every key), keys of the other shards are still written; those of the stopped one
	// are not.
	waitUntil(t, 30*time.Second, "the cluster to flag the stopped master failing", func() error {
		if n, _ := f.topology("shards-leader-0").NodeByID(owned.ID); !n.Is(redis.FlagFail) {
			return fmt.Errorf("it is %s", n.Flags)
		}
		return nil
	})
	served, refused := 0, 0
	for i := 0; i < 100; i++ {
		key := fmt.Sprintf("key-%d", i)
		slot, err := seed.ClusterKeySlot(f.ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if owned.OwnsSlot(int(slot)) {
			if err := seed.Set(f.ctx, key, "x", 0).Err(); err == nil {
				t.Errorf("SET %s (slot %d, of the stopped shard) succeeded", key, slot)
			}
			refused++
			continue
		}
		if err := cluster.Set(f.ctx, key, fmt.Sprintf("value-%d", i), 0).Err(); err != nil {
			t.Errorf("SET %s (slot %d, of a serving shard): %v", key, slot, err)
		}
		served++
	}
	if served == 0 || refused == 0 {
		t.Fatalf("%d keys on serving shards, %d on the stopped one: the test needs both", served, refused)
	}

	victim.start(t, f.port, f.kubelet.config(victim))
	f.waitReady(60 * time.Second)
	f.readKeys(100)
}

func TestSkipReconcileStopsAllAction(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 1, 0)
	f.runPods()
	cr := f.waitReady(60 * time.Second)
	waitCompat(t, cr, map[string]float64{"rediscluster_healthy": 1, "rediscluster_skipreconcile": 0, "rediscluster_replicas_size_desired": 1})

	f.setSkip(true)
	waitUntil(t, 10*time.Second, "skip condition", func() error {
		c := meta.FindStatusCondition(f.get().Status.Conditions, v1beta2.ConditionProgressing)
		if c != nil && c.Reason == status.ReasonSkipReconcile {
			return nil
		}
		return fmt.Errorf("progressing is %+v", c)
	})
	waitCompat(t, cr, map[string]float64{"rediscluster_skipreconcile": 1})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shards-master"}}
	if err := f.c.Delete(f.ctx, svc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(svc), svc); err == nil {
		t.Fatal("the Service was recreated although reconciling is skipped")
	}

	f.setSkip(false)
	waitUntil(t, 10*time.Second, "Service recreated", func() error {
		return f.c.Get(f.ctx, client.ObjectKeyFromObject(svc), svc)
	})
	waitCompat(t, cr, map[string]float64{"rediscluster_skipreconcile": 0})
}

func TestMissingPasswordSecretIsReported(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	startOperator(t, ns)
	c := newClient(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	size := int32(3)
	name, key := "redis-password", "password"
	cr := &v1beta2.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "locked", Namespace: ns},
		Spec: v1beta2.RedisClusterSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{
			Image: "redis:7.0.15", ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &name, Key: &key}}},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "Degraded condition naming the Secret", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d != nil && d.Status == metav1.ConditionTrue && d.Reason == status.ReasonSecretMissing && strings.Contains(d.Message, name) {
			return nil
		}
		return fmt.Errorf("conditions: %s", describeConditions(cr.Status.Conditions))
	})
	// The Secret appearing is seen without a timer: the StatefulSets follow.
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{key: []byte("s3cret")}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "StatefulSet after the Secret appears", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "locked-leader"}, &appsv1.StatefulSet{})
	})
}

func TestImmutableChangeWaitsForTheRecreateAnnotation(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 1, 0)
	f.runPods()
	f.waitReady(60 * time.Second)
	var before appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-leader"}, &before); err != nil {
		t.Fatal(err)
	}

	cr := f.get()
	cr.Spec.PodManagementPolicy = string(appsv1.ParallelPodManagement)
	if err := f.c.Update(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	// The cluster keeps serving as it runs: Ready, state Ready, the pending change and how to
	// apply it said in UpdatePending (and a Warning event), not Failed.
	waitUntil(t, 10*time.Second, "UpdatePending for an immutable change, still Ready", func() error {
		got := f.get()
		p := meta.FindStatusCondition(got.Status.Conditions, ConditionUpdatePending)
		ready := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionReady)
		if p != nil && p.Status == metav1.ConditionTrue && p.Reason == status.ReasonImmutable && strings.Contains(p.Message, apply.RecreateStatefulSetAnnotation) &&
			strings.Contains(p.Message, "shards-leader") && ready != nil && ready.Status == metav1.ConditionTrue && got.Status.State == "Ready" &&
			got.Status.ObservedGeneration == got.Generation {
			return nil
		}
		return fmt.Errorf("state %s: %s", got.Status.State, describeConditions(got.Status.Conditions))
	})
	waitUntil(t, 10*time.Second, "a Warning event for the pending change", func() error {
		var events eventsv1.EventList
		if err := f.c.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == status.ReasonImmutable && strings.Contains(e.Note, apply.RecreateStatefulSetAnnotation) {
				return nil
			}
		}
		return errors.New("no Warning event with the recreate annotation")
	})

	cr = f.get()
	cr.Annotations = map[string]string{apply.RecreateStatefulSetAnnotation: "true"}
	if err := f.c.Update(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	// The operator deletes it leaving the pods (orphan); the garbage collector, which this test
	// runs without, then releases the pods and drops the orphan finalizer: the test does that.
	waitUntil(t, 10*time.Second, "StatefulSet deleted with orphaned pods", func() error {
		var old appsv1.StatefulSet
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-leader"}, &old); err != nil {
			return err
		}
		if old.DeletionTimestamp == nil || !slices.Contains(old.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("deletion %v, finalizers %v", old.DeletionTimestamp, old.Finalizers)
		}
		old.Finalizers = nil
		return f.c.Update(f.ctx, &old)
	})
	waitUntil(t, 10*time.Second, "StatefulSet recreated with the new policy", func() error {
		var after appsv1.StatefulSet
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shards-leader"}, &after); err != nil {
			return err
		}
		if after.UID == before.UID || after.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			return fmt.Errorf("uid changed %v, policy %s", after.UID != before.UID, after.Spec.PodManagementPolicy)
		}
		return nil
	})
	f.waitReady(30 * time.Second)
	f.assertEvents("RecreateStatefulSet")
	waitUntil(t, 10*time.Second, "UpdatePending gone once the change is applied", func() error {
		if p := meta.FindStatusCondition(f.get().Status.Conditions, ConditionUpdatePending); p != nil {
			return fmt.Errorf("still %+v", p)
		}
		return nil
	})
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(f.ns)); err != nil || len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp != nil {
		t.Errorf("the pod must survive the recreation: %d pods, %v", len(pods.Items), err)
	}
}

// The -master Service selects on cluster=<name>, as the replaced operator's does: it reaches
// the masters, and a pod made from a template without that label (an operator upgrade, before
// the rolling update) is given it, so that the Service does not lose its endpoints meanwhile.
func TestMasterServiceSelectsTheClusterLabel(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 1, 0)
	f.runPods()
	f.waitReady(60 * time.Second)
	var svc corev1.Service
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: builder.MasterServiceName(f.name)}, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Labels[builder.LabelCluster] != f.name || svc.Spec.Selector[builder.LabelCluster] != f.name {
		t.Fatalf("-master Service labels %v selector %v, want %s=%s in both", svc.Labels, svc.Spec.Selector, builder.LabelCluster, f.name)
	}
	selected := func() []string {
		var pods corev1.PodList
		if err := f.c.List(f.ctx, &pods, client.InNamespace(f.ns), client.MatchingLabels(svc.Spec.Selector)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names
	}
	waitUntil(t, 10*time.Second, "the master selected", func() error {
		if got := selected(); !slices.Equal(got, []string{f.name + "-leader-0"}) {
			return fmt.Errorf("selected %v", got)
		}
		return nil
	})

	// An older pod without the label.
	var pod corev1.Pod
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: f.name + "-leader-0"}, &pod); err != nil {
		t.Fatal(err)
	}
	original := pod.DeepCopy()
	delete(pod.Labels, builder.LabelCluster)
	if err := f.c.Patch(f.ctx, &pod, client.MergeFrom(original)); err != nil {
		t.Fatal(err)
	}
	cr := f.get()
	cr.Annotations = map[string]string{"test/poke": "1"}
	if err := f.c.Update(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the label back on the pod, the master selected", func() error {
		if got := selected(); !slices.Equal(got, []string{f.name + "-leader-0"}) {
			return fmt.Errorf("selected %v", got)
		}
		return nil
	})
}
