//go:build integration

package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/writecheck"
)

// TestKilledLeaderBackFromItsVolumeLosesNoAcknowledgedWrite is the fault matrix's "node
// stopped" row in the envtest tier: a writer writes without pause to keys of leader-1's
// shard, straight to whichever node masters them, and counts a key only once WAIT 1 said a
// replica has it. Mid-writes the node of leader-1 stops: leader-1 and the follower of another
// shard that shares its node are SIGKILLed together, with the pods' persistence as the
// builders render it (appendfsync everysec). Redis promotes leader-1's follower; some node
// timeouts later both pods start again from their volumes at new IPs and the operator has
// leader-1 take its shard back; the promoted follower sends its data slowly (seconds), so the
// fail-back has to wait for leader-1's full sync. Every acknowledged key then reads back from
// the shard's master; a key missing fails the test with a timeline of every node's own
// CLUSTER NODES line and INFO replication, the writer's moves and the operator's CLUSTER
// FAILOVERs, and the two nodes' Redis logs (KILLED_LEADER_TIMELINE=1 prints them on success too).
//
// KILLED_LEADER_AOF_CUT=<bytes> cuts that much off the end of the stopped leader's AOF, as a machine
// that lost the last second of an appendfsync everysec would.
// KILLED_LEADER_COLLIDE=1 gives the stopped leader, in its nodes.conf, the config epoch of a master of
// a greater node ID: the state the operator no longer leaves a Ready cluster in (see
// clusterplan.distinctEpochs), in which the leader's stale claim can win when it returns.
//
// The environment varies the fault, to hunt for a loss by hand: KILLED_LEADER_HOLD (how long the node
// stays down, 10s), KILLED_LEADER_LEADER_ONLY=1 (the other follower stays up), KILLED_LEADER_KEEP_PODS=1 (the
// pod objects stay while their processes are down, as on a stopped node, instead of being
// deleted and created again), KILLED_LEADER_START_GAP (between the follower's start and the leader's),
// KILLED_LEADER_WRITE_PAUSE (between two writes, 1ms) and KILLED_LEADER_SYNC_DELAY (rdb-key-save-delay of the
// promoted follower in µs, 2000; 0 for none).
func TestKilledLeaderBackFromItsVolumeLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	hold := envDuration(t, "KILLED_LEADER_HOLD", 10*time.Second) // 80 s of a 15 s node timeout, at 2 s
	startGap := envDuration(t, "KILLED_LEADER_START_GAP", 0)
	pause := envDuration(t, "KILLED_LEADER_WRITE_PAUSE", time.Millisecond)
	killFollower := os.Getenv("KILLED_LEADER_LEADER_ONLY") == ""
	keepPods := os.Getenv("KILLED_LEADER_KEEP_PODS") != ""
	op := startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.kubelet.asBuilt = true
	f.runPods()
	f.waitReady(60 * time.Second)
	begin := time.Now()
	since := func(at time.Time) string { return at.Sub(begin).Round(time.Millisecond).String() }

	// Ready means no two masters share a config epoch (clusterplan.distinctEpochs): a leader
	// that stopped sharing one could win its old slots back with a new one when it returns.
	epochs := map[uint64]string{}
	for i := range 3 {
		pod := fmt.Sprintf("shards-leader-%d", i)
		me, _ := f.topology(pod).Myself()
		if other, ok := epochs[me.ConfigEpoch]; ok {
			t.Fatalf("Ready with %s and %s at config epoch %d", other, pod, me.ConfigEpoch)
		}
		epochs[me.ConfigEpoch] = pod
	}
	before := f.topology("shards-leader-1")
	leader, _ := before.NodeByAddr(f.kubelet.pod("shards-leader-1").addr(f.port))
	replicas := before.ReplicasOf(leader.ID)
	if len(replicas) != 1 {
		t.Fatalf("leader-1 has %d replicas, want 1", len(replicas))
	}
	// The follower on leader-1's node (the fake scheduler puts follower i on node i+1).
	other := "shards-follower-0"
	otherNode, _ := before.NodeByAddr(f.kubelet.pod(other).addr(f.port))
	if otherNode.MasterID == leader.ID {
		t.Fatalf("%s replicates leader-1: it should be another shard's follower", other)
	}
	tag, slot := "", 0
	for i := 0; ; i++ {
		tag = "w" + strconv.Itoa(i)
		if slot = writecheck.HashSlot(tag); leader.OwnsSlot(slot) {
			break
		}
	}
	names := newPodNames(f)
	mon := startClusterMonitor(t, f, names, begin)
	w := startAckedWriter(t, f, tag, slot, pause)
	time.Sleep(time.Second)

	// The node stops: both its pods' processes are killed at once.
	crashedLeader := f.kubelet.pod("shards-leader-1")
	crashedFollower := f.kubelet.pod(other)
	killedAt := time.Now()
	var wg sync.WaitGroup
	for _, p := range []*fakePod{crashedLeader, crashedFollower} {
		if p == crashedFollower && !killFollower {
			continue
		}
		wg.Add(1)
		go func(p *fakePod) { defer wg.Done(); p.stop(syscall.SIGKILL) }(p)
	}
	wg.Wait()
	t.Logf("%s: killed leader-1 (%s) and %s (%s) after %d acknowledged writes", since(killedAt), crashedLeader.ip, other, crashedFollower.ip, w.ackedCount())
	if os.Getenv("KILLED_LEADER_COLLIDE") != "" {
		collideConfigEpoch(t, crashedLeader.dataDir, before, leader)
	}
	if cut := os.Getenv("KILLED_LEADER_AOF_CUT"); cut != "" {
		cutAOF(t, crashedLeader.dataDir, cut)
	}
	if !keepPods {
		f.kubelet.deletePod(f.ctx, f.ns, "shards-leader-1", syscall.SIGKILL)
		if killFollower {
			f.kubelet.deletePod(f.ctx, f.ns, other, syscall.SIGKILL)
		}
	}
	waitUntil(t, time.Minute, "the replica of leader-1 promoted by Redis", func() error {
		n, _ := f.topology("shards-leader-0").NodeByID(replicas[0].ID)
		if !n.IsMaster() || n.SlotCount() == 0 {
			return fmt.Errorf("it is %s", n.Flags)
		}
		return nil
	})
	if delay := cmp.Or(os.Getenv("KILLED_LEADER_SYNC_DELAY"), "2000"); delay != "0" {
		// A full sync of seconds (µs per key of the promoted follower's RDB), as with more
		// data: the fail-back must wait for it.
		c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("shards-follower-1").addr(f.port)})
		if err := c.ConfigSet(f.ctx, "rdb-key-save-delay", delay).Err(); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	t.Logf("%s: follower-1 promoted; holding the node down until %s", since(time.Now()), since(killedAt.Add(hold)))
	time.Sleep(time.Until(killedAt.Add(hold)))

	sts := func(name string) *appsv1.StatefulSet {
		var s appsv1.StatefulSet
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	oldLeaderIP := crashedLeader.ip
	start := func(statefulSet string, ordinal int, p *fakePod) {
		if keepPods {
			f.kubelet.startAtNewIP(f.ctx, f.ns, fmt.Sprintf("%s-%d", statefulSet, ordinal))
		} else {
			f.kubelet.startPod(f.ctx, sts(statefulSet), ordinal, p.dataDir)
		}
	}
	if killFollower {
		start("shards-follower", 0, crashedFollower)
		names.note(f, other)
		time.Sleep(startGap)
	}
	start("shards-leader", 1, crashedLeader)
	back := f.kubelet.pod("shards-leader-1")
	if back.ip == oldLeaderIP {
		t.Fatalf("the leader must come back at a new IP, got %s again", back.ip)
	}
	names.note(f, "shards-leader-1")
	startedAt := time.Now()
	t.Logf("%s: leader-1 started again at %s from its volume (%d acknowledged writes so far)", since(startedAt), back.ip, w.ackedCount())
	// As its promoted follower sees it: its own view claims its old slots until it hears better.
	waitUntil(t, 90*time.Second, "leader-1 master again at "+back.ip, func() error {
		me, ok := f.topology("shards-follower-1").NodeByID(leader.ID)
		if !ok || !me.IsMaster() || me.SlotCount() == 0 || me.Addr.IP != back.ip {
			return fmt.Errorf("follower-1 sees it as %s at %s with %d slots", me.Flags, me.Addr.IP, me.SlotCount())
		}
		return nil
	})
	t.Logf("%s: leader-1 is master again, %s after it started", since(time.Now()), time.Since(startedAt).Round(time.Millisecond))
	f.waitReady(90 * time.Second)
	time.Sleep(time.Second) // writes go on a while after the fail-back
	w.stop()
	mon.stop()

	acked := w.acked()
	missing, owner := f.readBackAcked(slot, acked)
	t.Logf("%d writes tried, %d acknowledged (%d before the kill), %d failed; the shard's master at the end is %s",
		w.tried.Load(), len(acked), countBefore(acked, killedAt), w.failed.Load(), names.of(owner))
	// Writes Redis applied without a replica's confirmation may be lost, but those the promoted
	// follower took while leader-1 was down vanish only if leader-1's old data won over its.
	var gone []string
	for _, a := range w.appliedWrites() {
		if a.replicas == 0 && a.at.After(killedAt) && a.at.Before(startedAt) {
			if g, _ := f.readBackAcked(slot, []ackedWrite{a}); len(g) > 0 {
				gone = append(gone, a.key)
			}
		}
	}
	if len(gone) > 0 {
		t.Errorf("%d unacknowledged writes the promoted follower applied while leader-1 was down are gone (%s ... %s): leader-1's old data replaced them",
			len(gone), gone[0], gone[len(gone)-1])
	}
	if len(missing) == 0 && !t.Failed() && os.Getenv("KILLED_LEADER_TIMELINE") == "" {
		return
	}
	for _, a := range missing {
		t.Errorf("acknowledged key %s is missing: written at %s to %s, WAIT said %d replica(s)", a.key, since(a.at), names.of(a.node), a.replicas)
	}
	t.Logf("timeline:\n%s", mon.report())
	t.Logf("the writer's node changes:\n%s", strings.Join(w.moves(since, names), "\n"))
	t.Logf("CLUSTER FAILOVER asked by the operator:\n%s", strings.Join(failoverAsks(op, since, names), "\n"))
	for _, p := range []*fakePod{back, f.kubelet.pod("shards-follower-1")} {
		log, _ := os.ReadFile(filepath.Join(p.dataDir, "redis.log"))
		t.Logf("redis.log of %s:\n%s", names.of(p.addr(f.port)), log)
	}
}

func countBefore(acked []ackedWrite, at time.Time) int {
	n := 0
	for _, a := range acked {
		if a.at.Before(at) {
			n++
		}
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// podNames names the address of each pod, of the incarnations that are gone too.
type podNames struct {
	mu     sync.Mutex
	byAddr map[string]string
}

func newPodNames(f *clusterFixture) *podNames {
	n := &podNames{byAddr: map[string]string{}}
	for _, name := range f.kubelet.podNames() {
		n.note(f, name)
	}
	return n
}

func (n *podNames) note(f *clusterFixture, pod string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.byAddr[f.kubelet.pod(pod).addr(f.port)] = pod
}

func (n *podNames) of(addr string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if name, ok := n.byAddr[addr]; ok {
		return name + "@" + addr
	}
	return addr
}

// ackedWrite is one key the writer wrote and a replica confirmed.
type ackedWrite struct {
	key      string
	at       time.Time
	node     string
	replicas int64
}

// ackedWriter writes keys {tag}:n, each once, to the node it takes for the master of their slot.
type ackedWriter struct {
	t       *testing.T
	f       *clusterFixture
	tag     string
	slot    int
	cancel  context.CancelFunc
	done    chan struct{}
	tried   atomic.Int64
	failed  atomic.Int64
	mu      sync.Mutex
	ok      []ackedWrite
	applied []ackedWrite // every SET Redis answered OK, acknowledged or not
	changes []string
	changed []time.Time
	clients map[string]*goredis.Client
}

func startAckedWriter(t *testing.T, f *clusterFixture, tag string, slot int, pause time.Duration) *ackedWriter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &ackedWriter{t: t, f: f, tag: tag, slot: slot, cancel: cancel, done: make(chan struct{}), clients: map[string]*goredis.Client{}}
	t.Cleanup(w.stop)
	go w.run(ctx, pause)
	return w
}

func (w *ackedWriter) stop() {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		_ = c.Close()
	}
	w.clients = map[string]*goredis.Client{}
}

func (w *ackedWriter) client(addr string) *goredis.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.clients[addr]
	if !ok {
		c = goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second,
			WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
		w.clients[addr] = c
	}
	return c
}

func (w *ackedWriter) run(ctx context.Context, pause time.Duration) {
	defer close(w.done)
	addr := ""
	for n := 0; ctx.Err() == nil; n++ {
		if addr == "" {
			if addr = w.f.slotMaster(ctx, w.slot); addr == "" {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.note(addr)
		}
		key := fmt.Sprintf("{%s}:%d", w.tag, n)
		w.tried.Add(1)
		var set *goredis.StatusCmd
		var wait *goredis.Cmd
		_, _ = w.client(addr).Pipelined(ctx, func(p goredis.Pipeliner) error {
			set = p.Set(ctx, key, "v"+strconv.Itoa(n), 0)
			wait = p.Do(ctx, "WAIT", 1, 1000)
			return nil
		})
		switch err := set.Err(); {
		case err == nil:
			replicas, _ := wait.Int64()
			a := ackedWrite{key: key, at: time.Now(), node: addr, replicas: replicas}
			w.mu.Lock()
			w.applied = append(w.applied, a)
			if replicas >= 1 {
				w.ok = append(w.ok, a)
			}
			w.mu.Unlock()
		case strings.HasPrefix(err.Error(), "MOVED "):
			w.failed.Add(1)
			fields := strings.Fields(err.Error())
			addr = fields[len(fields)-1]
			w.note(addr)
			continue
		default:
			w.failed.Add(1)
			addr = "" // ask the cluster again
			time.Sleep(20 * time.Millisecond)
			continue
		}
		time.Sleep(pause)
	}
}

func (w *ackedWriter) note(addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 || w.changes[len(w.changes)-1] != addr {
		w.changes = append(w.changes, addr)
		w.changed = append(w.changed, time.Now())
	}
}

func (w *ackedWriter) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ok)
}

func (w *ackedWriter) acked() []ackedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ok)
}

func (w *ackedWriter) appliedWrites() []ackedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.applied)
}

func (w *ackedWriter) moves(since func(time.Time) string, names *podNames) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for i, addr := range w.changes {
		out = append(out, fmt.Sprintf("  %s: writing to %s", since(w.changed[i]), names.of(addr)))
	}
	return out
}

// slotMaster is the address of the master of slot by the claim of the greatest config epoch
// among the views of the pods that answer, "" when none does.
func (f *clusterFixture) slotMaster(ctx context.Context, slot int) string {
	best, epoch := "", uint64(0)
	for _, name := range f.kubelet.podNames() {
		p := f.kubelet.pod(name)
		if p == nil {
			continue
		}
		topo, err := clusterNodesOf(ctx, p.addr(f.port))
		if err != nil {
			continue
		}
		if owner, ok := topo.SlotOwner(slot); ok && owner.HasAddr() && (best == "" || owner.ConfigEpoch > epoch) {
			best, epoch = owner.Addr.HostPort(), owner.ConfigEpoch
		}
	}
	return best
}

func clusterNodesOf(ctx context.Context, addr string) (redis.Topology, error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return redis.Topology{}, err
	}
	return redis.ParseClusterNodes(text)
}

// readBackAcked reads every acknowledged key from the master of slot and returns those missing
// or wrong, and the master's address.
func (f *clusterFixture) readBackAcked(slot int, acked []ackedWrite) ([]ackedWrite, string) {
	f.t.Helper()
	owner := f.slotMaster(f.ctx, slot)
	if owner == "" {
		f.t.Fatal("no node answers for the writer's slot")
	}
	c := goredis.NewClient(&goredis.Options{Addr: owner})
	defer func() { _ = c.Close() }()
	var missing []ackedWrite
	for _, a := range acked {
		got, err := c.Get(f.ctx, a.key).Result()
		if errors.Is(err, goredis.Nil) || (err == nil && got != "v"+a.key[strings.LastIndexByte(a.key, ':')+1:]) {
			missing = append(missing, a)
			continue
		}
		if err != nil {
			f.t.Fatalf("GET %s from %s: %v", a.key, owner, err)
		}
	}
	return missing, owner
}

// failoverAsks lists the CLUSTER FAILOVERs the operator sent, in time order.
func failoverAsks(op *operator, since func(time.Time) string, names *podNames) []string {
	op.askMu.Lock()
	defer op.askMu.Unlock()
	type ask struct {
		at   time.Time
		addr string
	}
	var all []ask
	for addr, times := range op.failoverAsks {
		for _, at := range times {
			all = append(all, ask{at, addr})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := []string{}
	for _, a := range all {
		out = append(out, fmt.Sprintf("  %s: CLUSTER FAILOVER on %s", since(a.at), names.of(a.addr)))
	}
	return out
}

// clusterMonitor samples every pod's ROLE, replication state and own CLUSTER NODES line and
// keeps each change, with when it was seen.
type clusterMonitor struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	lines  []string
}

func startClusterMonitor(t *testing.T, f *clusterFixture, names *podNames, begin time.Time) *clusterMonitor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &clusterMonitor{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(m.stop)
	go func() {
		defer close(m.done)
		last := map[string]string{}
		for ctx.Err() == nil {
			for _, name := range f.kubelet.podNames() {
				p := f.kubelet.pod(name)
				if p == nil {
					continue
				}
				addr := p.addr(f.port)
				state := sampleNode(ctx, addr)
				if last[addr] != state {
					last[addr] = state
					m.mu.Lock()
					m.lines = append(m.lines, fmt.Sprintf("  %s %s: %s", time.Since(begin).Round(time.Millisecond), names.of(addr), state))
					m.mu.Unlock()
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return m
}

func (m *clusterMonitor) stop() {
	m.cancel()
	<-m.done
}

func (m *clusterMonitor) report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.lines, "\n")
}

// sampleNode says in one line what the node says of itself: its CLUSTER NODES line's flags,
// epoch, master and slots, and its INFO replication.
func sampleNode(ctx context.Context, addr string) string {
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return "no answer"
	}
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		return err.Error()
	}
	me, _ := topo.Myself()
	info, _ := c.Info(ctx, "replication").Result()
	keep := []string{"role", "master_host", "master_link_status", "master_sync_in_progress", "connected_slaves", "slave0"}
	var repl []string
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(keep, k) {
			continue
		}
		if k == "slave0" { // without its offset and lag, which change with every write
			var parts []string
			for _, kv := range strings.Split(v, ",") {
				if !strings.HasPrefix(kv, "offset=") && !strings.HasPrefix(kv, "lag=") {
					parts = append(parts, kv)
				}
			}
			v = strings.Join(parts, ",")
		}
		repl = append(repl, k+"="+v)
	}
	slots := ""
	for _, r := range me.Slots {
		slots += " " + r.String()
	}
	master := ""
	if me.MasterID != "" {
		master = " of " + me.MasterID[:8]
	}
	return fmt.Sprintf("%s %s%s epoch %d slots[%s ] | %s", me.ID[:8], me.Flags, master, me.ConfigEpoch, slots, strings.Join(repl, " "))
}

// collideConfigEpoch gives the stopped leader, in its nodes.conf, the config epoch of another
// master whose node ID is greater than its own: the state of a cluster whose masters still
// resolve the equal config epochs of their bootstrap, in which the node of the smaller ID is
// the one that takes a new epoch once it hears the other.
func collideConfigEpoch(t *testing.T, dataDir string, before redis.Topology, leader redis.Node) {
	t.Helper()
	var other redis.Node
	for _, n := range before.Masters() {
		if n.ID != leader.ID && n.ID > leader.ID && (other.ID == "" || n.ConfigEpoch < other.ConfigEpoch) {
			other = n
		}
	}
	if other.ID == "" {
		t.Skipf("leader-1's node ID %s is the greatest of the masters: no master it would yield to in a collision", leader.ID)
	}
	path := filepath.Join(dataDir, "nodes.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		fields := strings.Fields(line)
		if len(fields) >= 8 && strings.Contains(fields[2], "myself") {
			t.Logf("leader-1 (node %s, epoch %s) gets the config epoch %d of %s", leader.ID[:8], fields[6], other.ConfigEpoch, other.ID[:8])
			fields[6] = strconv.FormatUint(other.ConfigEpoch, 10)
			lines[i] = strings.Join(fields, " ")
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cutAOF removes the last bytes of the newest incremental AOF in dataDir.
func cutAOF(t *testing.T, dataDir, bytes string) {
	t.Helper()
	n, err := strconv.ParseInt(bytes, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dataDir, "appendonlydir", "*.incr.aof"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no incremental AOF in %s: %v", dataDir, err)
	}
	slices.Sort(files)
	last := files[len(files)-1]
	info, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	size := max(info.Size()-n, 0)
	if err := os.Truncate(last, size); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut %s from %d to %d bytes", filepath.Base(last), info.Size(), size)
}
