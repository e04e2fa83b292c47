package clusterplan

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// node is one line of a fixture cluster: a pod's node as everybody sees it.
type node struct {
	pod    string
	ip     string
	master string // pod name of the master, for replicas
	slots  string // "0-5460" etc.
	flags  string // extra flags such as "fail"
	idSeed string // defaults to pod: a pod recreated empty gets another
	// epoch is the node's config epoch; 0 gives each node its own (its place in the fixture),
	// -1 stands for Redis's epoch 0.
	epoch int
	// migrating and importing: slot → pod on the other side, shown in the node's own line.
	migrating, importing map[int]string
	// port and bus, when set, are node ports the node is known at (its address behind
	// NodePorts, ip being its Kubernetes node's); the operator then dials podIP:6379.
	port, bus int
	podIP     string
}

func (n node) ports() (int, int) {
	if n.port != 0 {
		return n.port, n.bus
	}
	return 6379, 16379
}

func (n node) id() string {
	seed := n.idSeed
	if seed == "" {
		seed = n.pod
	}
	sum := sha1.Sum([]byte(seed))
	return hex.EncodeToString(sum[:])
}

// cluster is a fixture: the nodes as they are known, and the pods that exist now.
type cluster struct {
	known []node
}

func (c cluster) byPod(pod string) node {
	for _, n := range c.known {
		if n.pod == pod {
			return n
		}
	}
	panic("no node for pod " + pod)
}

// epochOf is the node's config epoch: its own, else one past its place among the known nodes.
func (c cluster) epochOf(n node) int {
	switch {
	case n.epoch < 0:
		return 0
	case n.epoch > 0:
		return n.epoch
	}
	for i, k := range c.known {
		if k.pod == n.pod {
			return i + 1
		}
	}
	return 1
}

// viewOf renders CLUSTER NODES as the node me sees the known nodes, and parses it.
func (c cluster) viewOf(me node, known []node) *redis.Topology {
	var lines []string
	for _, n := range known {
		flags := []string{}
		if n.id() == me.id() {
			flags = append(flags, "myself")
		}
		if n.master != "" {
			flags = append(flags, "slave")
		} else {
			flags = append(flags, "master")
		}
		if n.flags != "" {
			flags = append(flags, n.flags)
		}
		master := "-"
		if n.master != "" {
			master = c.byPod(n.master).id()
		}
		port, bus := n.ports()
		line := fmt.Sprintf("%s %s:%d@%d %s %s 0 0 %d connected", n.id(), n.ip, port, bus, strings.Join(flags, ","), master, c.epochOf(n))
		if n.slots != "" {
			line += " " + n.slots
		}
		if n.id() == me.id() {
			for slot, pod := range n.migrating {
				line += fmt.Sprintf(" [%d->-%s]", slot, c.byPod(pod).id())
			}
			for slot, pod := range n.importing {
				line += fmt.Sprintf(" [%d-<-%s]", slot, c.byPod(pod).id())
			}
		}
		lines = append(lines, line)
	}
	topo, err := redis.ParseClusterNodes(strings.Join(lines, "\n") + "\n")
	if err != nil {
		panic(err)
	}
	return &topo
}

// members builds the members for pods at their current addresses; everybody sees all known
// nodes unless alone names pods that know only themselves.
func (c cluster) members(pods []node, alone ...string) []Member {
	var out []Member
	for _, p := range pods {
		role, ordinal := Leader, 0
		name := p.pod
		if strings.Contains(name, "follower") {
			role = Follower
		}
		_, _ = fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &ordinal)
		known := c.known
		for _, a := range alone {
			if a == p.pod {
				known = []node{p}
			}
		}
		// Followers run one node over from their leaders, as the scheduler spreads them.
		nodeIndex := ordinal % 3
		if role == Follower {
			nodeIndex = (ordinal + 1) % 3
		}
		port, bus := p.ports()
		m := Member{Pod: name, Role: role, Ordinal: ordinal, NodeName: fmt.Sprint("node-", nodeIndex), IP: p.ip, Port: port, BusPort: bus,
			View: c.viewOf(p, known)}
		if p.podIP != "" {
			m.DialIP, m.DialPort = p.podIP, 6379
		}
		if p.master != "" {
			masterPort, _ := c.byPod(p.master).ports()
			m.Replication = redis.Role{Kind: redis.RoleSlave, ReplicationState: "connected", MasterIP: c.byPod(p.master).ip, MasterPort: masterPort}
		} else {
			m.Replication = redis.Role{Kind: redis.RoleMaster}
		}
		out = append(out, m)
	}
	return out
}

var threeByThree = Design{Leaders: 3, Followers: 3}

func healthy() []node {
	return []node{
		{pod: "c-leader-0", ip: "10.0.0.1", slots: "0-5461"},
		{pod: "c-leader-1", ip: "10.0.0.2", slots: "5462-10922"},
		{pod: "c-leader-2", ip: "10.0.0.3", slots: "10923-16383"},
		{pod: "c-follower-0", ip: "10.0.0.4", master: "c-leader-0"},
		{pod: "c-follower-1", ip: "10.0.0.5", master: "c-leader-1"},
		{pod: "c-follower-2", ip: "10.0.0.6", master: "c-leader-2"},
	}
}

func empty(nodes []node) []node {
	out := make([]node, len(nodes))
	for i, n := range nodes {
		out[i] = node{pod: n.pod, ip: n.ip}
	}
	return out
}

func TestFreshClusterIsMetThenGivenSlotsThenReplicas(t *testing.T) {
	pods := empty(healthy())
	c := cluster{known: pods}
	all := []string{}
	for _, p := range pods {
		all = append(all, p.pod)
	}

	plan := Compute(threeByThree, c.members(pods, all...))
	assertSteps(t, plan, StepMeet, 5)
	for _, s := range plan.Steps {
		if s.On != "c-leader-0" {
			t.Errorf("a new node is met by the seed only, got %v", s)
		}
	}

	plan = Compute(threeByThree, c.members(pods))
	assertSteps(t, plan, StepAddSlots, 3)
	want := map[string]string{"c-leader-0": "0-5461", "c-leader-1": "5462-10922", "c-leader-2": "10923-16383"}
	for _, s := range plan.Steps {
		if got := formatRanges(s.Slots); got != want[s.On] {
			t.Errorf("%s takes %s, want %s", s.On, got, want[s.On])
		}
	}

	withSlots := healthy()
	for i := 3; i < 6; i++ {
		withSlots[i].master = ""
	}
	c = cluster{known: withSlots}
	plan = Compute(threeByThree, c.members(withSlots))
	assertSteps(t, plan, StepReplicate, 3)
	for _, s := range plan.Steps {
		ordinal := s.On[len(s.On)-1:]
		if wantMaster := c.byPod("c-leader-" + ordinal).id(); s.NodeID != wantMaster {
			t.Errorf("%s replicates %s, want leader %s", s.On, s.NodeID, ordinal)
		}
	}
}

func TestHealthyClusterIsConverged(t *testing.T) {
	c := cluster{known: healthy()}
	if plan := Compute(threeByThree, c.members(healthy())); !plan.Converged() {
		t.Fatalf("want converged, got %+v", plan)
	}
}

func TestReplicaStillSyncingIsWaitedFor(t *testing.T) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	members[4].Replication.ReplicationState = "sync"
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "c-follower-1 is syncing") {
		t.Fatalf("want a wait for the syncing replica, got %+v", plan)
	}
}

// A replica whose link is down and still points at its master's old address, while its own
// node table has the master's new one, is pointed at it again; a link down at the right
// address is only waited for.
func TestReplicaLinkAtAStaleAddressIsRepointed(t *testing.T) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	members[4].Replication.ReplicationState = "connect"
	members[4].Replication.MasterIP = "10.0.9.9"
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-follower-1" || s.NodeID != c.byPod("c-leader-1").id() || !strings.Contains(s.Reason, "10.0.9.9:6379") {
		t.Errorf("want c-follower-1 to replicate c-leader-1 again, got %+v", s)
	}

	members[4].Replication.MasterIP = c.byPod("c-leader-1").ip
	plan = Compute(threeByThree, members)
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "c-follower-1 is syncing") {
		t.Errorf("a link down at the right address is waited for, got %+v", plan)
	}
}

func TestPodsBackWithNewAddressesAreMetByNodeID(t *testing.T) {
	old := healthy()
	moved := healthy()
	for i := range moved {
		moved[i].ip = fmt.Sprintf("10.0.1.%d", i+1)
	}
	// Every pod kept its nodes.conf (same IDs) but all came back with new IPs: each announces
	// its own new one and still knows the others at the old addresses.
	c := cluster{known: old}
	var members []Member
	for i, p := range moved {
		m := c.members([]node{p})[0]
		known := slices.Clone(old)
		known[i] = p
		m.View = c.viewOf(p, known)
		members = append(members, m)
	}
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepMeet, 30)
	for _, s := range plan.Steps {
		if !strings.HasPrefix(s.IP, "10.0.1.") {
			t.Errorf("meet must use the new address, got %v", s)
		}
	}
}

func TestLeaderThatFailedOverTakesItsShardBack(t *testing.T) {
	nodes := healthy()
	nodes[1].master, nodes[1].slots = "c-follower-1", ""
	nodes[4].master, nodes[4].slots = "", "5462-10922"
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepFailover, 1)
	if plan.Steps[0].On != "c-leader-1" {
		t.Errorf("failover must run on the leader pod, got %v", plan.Steps[0])
	}

	members := c.members(nodes)
	members[1].Replication.ReplicationState = "sync"
	if plan := Compute(threeByThree, members); len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "c-leader-1 is syncing") {
		t.Errorf("no failover before the leader is in sync; got %+v", plan)
	}
}

func TestReplacedFollowerIsForgottenThenReattached(t *testing.T) {
	nodes := healthy()
	gone := nodes[5]
	gone.flags = "fail"
	gone.ip = "10.0.0.66"
	fresh := node{pod: "c-follower-2", ip: "10.0.0.7", idSeed: "c-follower-2-new"}
	known := append(append([]node{}, nodes[:5]...), gone, fresh)
	c := cluster{known: known}
	pods := append(append([]node{}, nodes[:5]...), fresh)

	plan := Compute(threeByThree, c.members(pods))
	assertSteps(t, plan, StepForget, 6)
	for _, s := range plan.Steps {
		if s.NodeID != gone.id() {
			t.Errorf("forget must name the gone node, got %v", s)
		}
	}

	c = cluster{known: pods}
	plan = Compute(threeByThree, c.members(pods))
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-follower-2" || s.NodeID != c.byPod("c-leader-2").id() {
		t.Errorf("the new follower must replicate leader 2, got %v", s)
	}
}

func TestLeaderBackEmptyJoinsTheShardItsFollowerTookOver(t *testing.T) {
	nodes := healthy()
	nodes[3].master, nodes[3].slots = "", "0-5461" // follower-0 was promoted
	nodes[0] = node{pod: "c-leader-0", ip: "10.0.0.9", idSeed: "c-leader-0-new"}
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-leader-0" || s.NodeID != c.byPod("c-follower-0").id() {
		t.Errorf("the empty leader must replicate follower-0, got %v", s)
	}
}

func TestGoneMasterWithSlots(t *testing.T) {
	nodes := healthy()
	gone := nodes[1]
	gone.flags = "fail"
	gone.ip = "10.0.0.99"
	fresh := node{pod: "c-leader-1", ip: "10.0.0.8", idSeed: "c-leader-1-new"}
	known := []node{nodes[0], gone, nodes[2], nodes[3], nodes[4], nodes[5], fresh}
	pods := []node{nodes[0], fresh, nodes[2], nodes[3], nodes[4], nodes[5]}
	c := cluster{known: known}
	plan := Compute(threeByThree, c.members(pods))
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "waiting for its replica to take over") {
		t.Errorf("want a wait for the replica's failover, got %+v", plan)
	}

	known[4].master = "" // follower-1 is no replica of it any more: nobody can take over
	c = cluster{known: known}
	pods[4].master = ""
	plan = Compute(threeByThree, c.members(pods))
	if len(plan.Problems) == 0 || !strings.Contains(plan.Problems[0], "no replica left") {
		t.Errorf("want a problem naming the lost shard, got %+v", plan)
	}
}

func TestInterruptedBootstrapAssignsOnlyTheMissingSlots(t *testing.T) {
	nodes := empty(healthy())
	nodes[0].slots = "0-5461"
	nodes[1].slots = "5462-6000"
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepAddSlots, 2)
	got := map[string]string{}
	for _, s := range plan.Steps {
		got[s.On] = formatRanges(s.Slots)
	}
	if got["c-leader-1"] != "6001-10922" || got["c-leader-2"] != "10923-16383" {
		t.Errorf("want only the missing slots assigned, got %v", got)
	}
}

func TestMissingOrSilentPodsAreWaitedFor(t *testing.T) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	if plan := Compute(threeByThree, members[:5]); !strings.Contains(plan.Wait, "5 of 6") {
		t.Errorf("want a wait for the missing pod, got %+v", plan)
	}
	members[2].View = nil
	if plan := Compute(threeByThree, members); !strings.Contains(plan.Wait, "c-leader-2") {
		t.Errorf("want a wait naming the silent pod, got %+v", plan)
	}
}

func TestFollowerIsKeptOffItsMastersNode(t *testing.T) {
	nodes := healthy()
	nodes[3].master = ""
	nodes[4].master = ""
	c := cluster{known: nodes}
	members := c.members(nodes)
	// follower-0 runs on the node of leader-0; follower-1 on the node of leader-1's neighbour.
	members[0].NodeName, members[1].NodeName = "a", "b"
	members[3].NodeName, members[4].NodeName = "a", "c"
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepReplicate, 2)
	got := map[string]string{}
	for _, s := range plan.Steps {
		got[s.On] = s.NodeID
	}
	if got["c-follower-0"] == c.byPod("c-leader-0").id() {
		t.Errorf("follower-0 must not replicate the master on its own node while leader-1 needs a replica on another: %v", plan.Steps)
	}
}

func TestSmallShapes(t *testing.T) {
	t.Run("one shard", func(t *testing.T) {
		nodes := []node{{pod: "c-leader-0", ip: "10.0.0.1"}, {pod: "c-follower-0", ip: "10.0.0.2"}}
		c := cluster{known: nodes}
		plan := Compute(Design{Leaders: 1, Followers: 1}, c.members(nodes))
		assertSteps(t, plan, StepAddSlots, 1)
		if got := formatRanges(plan.Steps[0].Slots); got != "0-16383" {
			t.Errorf("one shard takes every slot, got %s", got)
		}
	})
	t.Run("no followers", func(t *testing.T) {
		nodes := healthy()[:3]
		c := cluster{known: nodes}
		if plan := Compute(Design{Leaders: 3}, c.members(nodes)); !plan.Converged() {
			t.Errorf("three leaders without followers are converged, got %+v", plan)
		}
	})
}

func assertSteps(t *testing.T, plan Plan, kind StepKind, n int) {
	t.Helper()
	if len(plan.Steps) != n {
		t.Fatalf("want %d %s steps, got %d: %+v", n, kind, len(plan.Steps), plan)
	}
	for _, s := range plan.Steps {
		if s.Kind != kind {
			t.Fatalf("want only %s steps, got %v", kind, s)
		}
	}
}

func TestWhatANodeSaysOfItselfWinsOverLaggingGossip(t *testing.T) {
	nodes := empty(healthy())
	nodes[1].slots = "5462-10922" // leader-1 took its slots; the seed has not heard yet
	c := cluster{known: nodes}
	members := c.members(nodes)
	members[0].View = c.viewOf(nodes[0], empty(healthy()))
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepAddSlots, 2)
	for _, s := range plan.Steps {
		if s.On == "c-leader-1" {
			t.Errorf("leader-1 already serves its slots: %v", s)
		}
	}

	// A follower that already replicates, as it says itself, is not told again; that the seed
	// has not heard which master it follows routes no client anywhere else, so it is not
	// waited for.
	withSlots := healthy()
	c = cluster{known: withSlots}
	members = c.members(withSlots)
	lagging := healthy()
	lagging[3].master = ""
	members[1].View = c.viewOf(withSlots[1], lagging)
	if plan := Compute(threeByThree, members); !plan.Converged() {
		t.Errorf("a replica's master not yet gossiped to a third node is no reason to wait, got %+v", plan)
	}
	// Its own master must list it, though (CLUSTER REPLICAS there): the replica tells it at
	// once with a MEET rather than wait for its next ping.
	members[0].View = c.viewOf(withSlots[0], lagging)
	if plan := Compute(threeByThree, members); len(plan.Steps) != 1 || plan.Steps[0].Kind != StepMeet ||
		plan.Steps[0].On != "c-follower-0" || plan.Steps[0].IP != withSlots[0].ip {
		t.Errorf("want follower-0 to tell leader-0 it is its replica, got %+v", plan)
	}

	// A promoted follower that the seed still sees as a replica is: the seed would send
	// clients for its slots elsewhere.
	promoted := healthy()
	promoted[0].master, promoted[0].slots = "c-follower-0", ""
	promoted[3].master, promoted[3].slots = "", "0-5461"
	c = cluster{known: promoted}
	members = c.members(promoted)
	members[1].View = c.viewOf(promoted[1], healthy())
	members[0].Outdated = true // no fail-back: leader-0 waits to be replaced
	// The new master tells it its slots at once.
	if plan := Compute(threeByThree, members); len(plan.Steps) != 1 || plan.Steps[0].On != "c-follower-0" || plan.Steps[0].IP != promoted[1].ip {
		t.Errorf("want the new master to tell the seed its slots, got %+v", plan)
	}

	// A replica whose link goes elsewhere than the master it says it follows is waited for.
	c = cluster{known: withSlots}
	members = c.members(withSlots)
	members[4].Replication.MasterIP = "10.0.0.1"
	if plan := Compute(threeByThree, members); !strings.Contains(plan.Wait, "c-follower-1's link") {
		t.Errorf("want a wait for follower-1's link, got %+v", plan)
	}
}

func TestEarlySlotsGoOnlyToLoneEmptyLeaders(t *testing.T) {
	alone := []node{{pod: "c-leader-0", ip: "10.0.0.1"}, {pod: "c-leader-1", ip: "10.0.0.2"}, {pod: "c-follower-0", ip: "10.0.0.4"}}
	c := cluster{known: alone}
	members := c.members(alone, "c-leader-0", "c-leader-1", "c-follower-0")
	steps := EarlySlots(threeByThree, members)
	if len(steps) != 2 || steps[0].On != "c-leader-0" || formatRanges(steps[0].Slots) != "0-5461" || formatRanges(steps[1].Slots) != "5462-10922" {
		t.Errorf("want each lone leader its designed range, got %v", steps)
	}
	// A leader that knows others, or already serves slots, is left to the plan.
	withSlots := []node{{pod: "c-leader-0", ip: "10.0.0.1", slots: "0-5461"}, {pod: "c-leader-1", ip: "10.0.0.2"}}
	c = cluster{known: withSlots}
	if steps := EarlySlots(threeByThree, c.members(withSlots[:1], "c-leader-0")); len(steps) != 0 {
		t.Errorf("a leader with slots takes none early: %v", steps)
	}
	if steps := EarlySlots(threeByThree, c.members(withSlots[1:])); len(steps) != 0 {
		t.Errorf("a leader that knows other nodes takes none early: %v", steps)
	}
	// A scale-out 3 -> 6: the new leader runs alone and empty beside leaders that met long ago;
	// the designed ranges of six leaders would overlap slots the others serve.
	established := slices.Concat(healthy()[:3], []node{{pod: "c-leader-3", ip: "10.0.0.7"}})
	c = cluster{known: established}
	if steps := EarlySlots(Design{Leaders: 6, Followers: 6}, c.members(established, "c-leader-3")); len(steps) != 0 {
		t.Errorf("a scale-out's new leader takes slots early: %v", steps)
	}
	// A member that does not answer yet holds no lone leader back.
	c = cluster{known: alone}
	members = c.members(alone, "c-leader-0", "c-leader-1", "c-follower-0")
	members[2].View = nil
	if steps := EarlySlots(threeByThree, members); len(steps) != 2 {
		t.Errorf("want both lone leaders their ranges while a follower does not answer, got %v", steps)
	}
	// The last leader starts alone while the others have met: it takes its range before it is
	// met, as long as no member's view shows any of it served.
	met := []node{{pod: "c-leader-0", ip: "10.0.0.1", slots: "0-5461"}, {pod: "c-leader-1", ip: "10.0.0.2", slots: "5462-10922"},
		{pod: "c-follower-0", ip: "10.0.0.4"}}
	last := node{pod: "c-leader-2", ip: "10.0.0.3"}
	c = cluster{known: met}
	members = append(c.members(met), c.members([]node{last}, "c-leader-2")...)
	steps = EarlySlots(threeByThree, members)
	if len(steps) != 1 || steps[0].On != "c-leader-2" || formatRanges(steps[0].Slots) != "10923-16383" {
		t.Errorf("want the last lone leader its range before it is met, got %v", steps)
	}
	// ... but not when an earlier node of that pod still serves some of it.
	gone := node{pod: "c-leader-9", ip: "10.0.0.9", slots: "10923-16383"}
	c = cluster{known: append(slices.Clone(met), gone)}
	members = append(c.members(met), c.members([]node{last}, "c-leader-2")...)
	if steps := EarlySlots(threeByThree, members); len(steps) != 0 {
		t.Errorf("early slots a known node serves: %v", steps)
	}
}

func TestReplicaIsIntroducedToItsMasterDirectly(t *testing.T) {
	nodes := healthy()
	nodes[5].master = ""
	c := cluster{known: nodes}
	members := c.members(nodes)
	// follower-2 knows only the seed and itself so far: rather than wait for gossip, it meets
	// the master it is to replicate.
	members[5].View = c.viewOf(nodes[5], []node{nodes[0], nodes[5]})
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepMeet, 1)
	if s := plan.Steps[0]; s.On != "c-follower-2" || s.IP != nodes[2].ip {
		t.Errorf("want follower-2 to meet leader-2 at %s, got %v", nodes[2].ip, s)
	}
}

// A node that met a leader before the leader got its slots shows it without them until the
// leader next pings it; the leader tells it at once with a MEET.
func TestLeaderTellsANodeThatMissedItsSlots(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := c.members(nodes)
	stale := healthy()
	stale[2].slots = ""
	members[5].View = c.viewOf(nodes[5], stale)
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 1 || plan.Steps[0].Kind != StepMeet || plan.Steps[0].On != "c-leader-2" || plan.Steps[0].IP != nodes[5].ip {
		t.Errorf("want leader-2 to tell follower-2 its slots, got %+v", plan)
	}
	if plan := Compute(threeByThree, c.members(nodes)); !plan.Converged() {
		t.Errorf("views that agree need nothing told, got %+v", plan)
	}
}

// A node that announces its hostname is redirected to as "?" by a node that has not heard
// the hostname yet: the cluster is not converged (nor Ready) until every view has it.
func TestAgreeWaitsForEveryAnnouncedHostname(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := c.members(nodes)
	hostname := func(pod string) string { return pod + ".c-headless.ns.svc.cluster.local" }
	for i := range members {
		for j := range members[i].View.Nodes {
			n := &members[i].View.Nodes[j]
			for _, m := range members {
				if n.ID == (node{pod: m.Pod}).id() {
					n.Addr.Hostname = hostname(m.Pod)
				}
			}
		}
	}
	if p := Compute(threeByThree, members); p.Wait != "" || len(p.Steps) != 0 {
		t.Fatalf("every view knows every hostname: want converged, got %+v", p)
	}
	editView(t, members, "c-leader-2", "c-follower-0", func(n *redis.Node) { n.Addr.Hostname = "" })
	p := Compute(threeByThree, members)
	if len(p.Steps) != 0 || !strings.Contains(p.Wait, "c-leader-2 does not know c-follower-0's hostname") {
		t.Fatalf("want a wait for c-leader-2 to learn c-follower-0's hostname, got %+v", p)
	}
}

// A follower that a scale-out moved to the new leader stays a replica of it after the
// scale-in: every other node forgot the departed leader, a replica cannot forget its own
// master, and its link is down for good. It is attached to the shard that lacks a replica,
// not waited for as if still syncing (found by the NodePort scale-in e2e test).
func TestReplicaOfAForgottenMasterIsReattached(t *testing.T) {
	nodes := healthy()
	gone := node{pod: "c-leader-3", ip: "10.0.0.9"}
	nodes[3].master = "c-leader-3" // c-follower-0
	c := cluster{known: append(append([]node{}, nodes...), gone)}
	members := c.members(nodes)
	for i := range members {
		if members[i].Pod != "c-follower-0" {
			members[i].View = c.viewOf(c.byPod(members[i].Pod), nodes)
		}
	}
	members[3].Replication.ReplicationState = "connect"
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-follower-0" || s.NodeID != c.byPod("c-leader-0").id() {
		t.Errorf("want c-follower-0 to replicate c-leader-0, the shard without a replica, got %+v", s)
	}

	// While another node still knows the departed leader, it is forgotten there first; the
	// follower is not moved yet.
	members[0].View = c.viewOf(c.byPod("c-leader-0"), c.known)
	plan = Compute(threeByThree, members)
	for _, s := range plan.Steps {
		if s.Kind != StepForget || s.NodeID != gone.id() {
			t.Errorf("want only the departed leader forgotten first, got %+v", plan)
		}
	}
}
