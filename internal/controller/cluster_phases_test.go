package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// clusterPhaseFixture is a RedisClusterReconciler whose pods' Redis are fake nodes, and the
// scope of a reconcile of RedisCluster rc that listed those pods: what the phases from
// "topology" on see, without a control plane or a redis-server. Leader pod i runs at
// 10.0.5.(i+1), follower pod i at 10.0.6.(i+1).
type clusterPhaseFixture struct {
	r *RedisClusterReconciler
	s *clusterScope
	// pods are the pods' names, leaders first; nodes their Redis, by pod name.
	pods     []string
	nodes    map[string]*fakeNode
	recorder *events.FakeRecorder
}

func newClusterPhaseFixture(t *testing.T, leaders, followers int) clusterPhaseFixture {
	t.Helper()
	cr := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", UID: types.UID("cluster-uid"), Generation: 1},
		Spec: v1beta2.RedisClusterSpec{
			RedisLeader:   v1beta2.RedisLeader{RedisClusterRole: v1beta2.RedisClusterRole{Replicas: ptr.To(int32(leaders))}},
			RedisFollower: v1beta2.RedisFollower{RedisClusterRole: v1beta2.RedisClusterRole{Replicas: ptr.To(int32(followers))}}}}
	f := clusterPhaseFixture{nodes: map[string]*fakeNode{}, recorder: events.NewFakeRecorder(50)}
	dialer := fakeRedis{}
	s := &clusterScope{cr: cr}
	for _, set := range []struct {
		role   string
		count  int
		subnet int
		pods   *[]corev1.Pod
	}{{builder.RoleLeader, leaders, 5, &s.leaders}, {builder.RoleFollower, followers, 6, &s.followers}} {
		for i := range set.count {
			pod := statefulSetPod(builder.ClusterStatefulSetName(cr.Name, set.role), i, fmt.Sprintf("10.0.%d.%d", set.subnet, i+1))
			*set.pods = append(*set.pods, *pod)
			node := &fakeNode{}
			f.pods = append(f.pods, pod.Name)
			f.nodes[pod.Name] = node
			dialer[fmt.Sprintf("%s:%d", pod.Status.PodIP, builder.DefaultRedisPort)] = node
		}
	}
	// The CR is in the API: a phase may annotate it (hand-made masters).
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cr).Build()
	f.r = &RedisClusterReconciler{Dependencies: Dependencies{Client: kube, Scheme: scheme, Recorder: f.recorder, RedisNodes: dialer, Memory: NewMemory()}}
	s.workloadScope = workloadScope{memory: f.r.Memory, spec: workloadSpec{owner: cr, kind: "RedisCluster", port: builder.DefaultRedisPort}}
	s.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
	f.s = s
	return f
}

// ip is the pod's address.
func (f clusterPhaseFixture) ip(pod string) string {
	for _, p := range append(slices.Clone(f.s.leaders), f.s.followers...) {
		if p.Name == pod {
			return p.Status.PodIP
		}
	}
	panic("no pod " + pod)
}

// id is the cluster node ID of the pod's Redis: 40 hex digits told apart by the pod's index.
func (f clusterPhaseFixture) id(pod string) string {
	return fmt.Sprintf("%040x", slices.Index(f.pods, pod)+1)
}

// clusterNode is one node of a scripted view: its pod, the pod of its master ("" for a
// master) and the slots it serves ("0-5460").
type clusterNode struct {
	pod, master string
	slots       []string
}

// view is CLUSTER NODES as pod's Redis writes it when it knows the nodes given, every link up.
func (f clusterPhaseFixture) view(pod string, nodes ...clusterNode) string {
	var lines []string
	for _, n := range nodes {
		// Each master has an epoch of its own, as a settled cluster does; a replica has its
		// master's.
		flags, master, epoch := "master", "-", slices.Index(f.pods, n.pod)+1
		if n.master != "" {
			flags, master, epoch = "slave", f.id(n.master), slices.Index(f.pods, n.master)+1
		}
		if n.pod == pod {
			flags = "myself," + flags
		}
		fields := []string{f.id(n.pod), fmt.Sprintf("%s:6379@16379", f.ip(n.pod)), flags, master, "0", "0", strconv.Itoa(epoch), "connected"}
		lines = append(lines, strings.Join(append(fields, n.slots...), " "))
	}
	return strings.Join(lines, "\n")
}

// formed scripts every pod with the same view of the nodes given, and cluster_state:ok.
func (f clusterPhaseFixture) formed(nodes ...clusterNode) {
	for _, n := range nodes {
		node := f.nodes[n.pod]
		node.clusterNodes = f.view(n.pod, nodes...)
		node.clusterInfo = redis.ClusterInfo{State: redis.ClusterStateOK, SlotsOK: redis.SlotCount, SlotsAssigned: redis.SlotCount}
		if n.master != "" {
			node.becomes(redis.Role{Kind: redis.RoleSlave, MasterIP: f.ip(n.master), MasterPort: 6379, ReplicationState: "connected"})
		}
	}
}

// threeMasters is a cluster of three masters, each with a third of the slots.
var threeMasters = []clusterNode{{pod: "rc-leader-0", slots: []string{"0-5460"}},
	{pod: "rc-leader-1", slots: []string{"5461-10922"}}, {pod: "rc-leader-2", slots: []string{"10923-16383"}}}

// sentTo lists the commands every pod's Redis received, after the pod's name, in the order
// of the pods, and forgets them: each step of a test sees what it caused.
func (f clusterPhaseFixture) sentTo() []string {
	var out []string
	for _, pod := range f.pods {
		for _, c := range f.nodes[pod].sent {
			out = append(out, pod+": "+c)
		}
		f.nodes[pod].sent = nil
	}
	return out
}

// observeBefore observes as the topology phase does before it runs steps, and forgets what
// that sent (TestObserveMembersGivesThePlannerWhatEachPodAnswers checks it).
func (f clusterPhaseFixture) observeBefore() {
	f.s.members = f.r.observeMembers(context.Background(), f.s)
	f.sentTo()
}

// The observation gives the planner, for every pod, what its Redis answered: its view, its
// replication and its version, its CLUSTER INFO for the health check; a pod that does not
// answer CLUSTER NODES has no view (the plan waits for it), and one BUSY in a script is told
// apart, for the stuck-master takeover.
func TestObserveMembersGivesThePlannerWhatEachPodAnswers(t *testing.T) {
	silent := errors.New("i/o timeout")
	busy := fakeServerError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.")
	tests := []struct {
		name string
		// script changes leader-1's Redis from a formed cluster's master.
		script     func(*fakeNode)
		wantView   bool
		wantBusy   bool
		wantInfo   bool
		wantServer string
	}{
		{name: "an answering master", script: func(*fakeNode) {}, wantView: true, wantInfo: true, wantServer: "7.2.4"},
		{name: "a Redis 6.2 says so", script: func(n *fakeNode) { n.serverInfo = "redis_version:6.2.14" }, wantView: true, wantInfo: true, wantServer: "6.2.14"},
		{name: "a silent node has no view", script: func(n *fakeNode) { n.down = silent }},
		{name: "a node busy in a script is busy", script: func(n *fakeNode) { n.refuse = map[string]error{"cluster nodes": busy} }, wantBusy: true},
		{name: "a view without CLUSTER INFO is kept, the info is not", script: func(n *fakeNode) { n.refuse = map[string]error{"cluster info": silent} },
			wantView: true, wantServer: "7.2.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newClusterPhaseFixture(t, 3, 0)
			f.formed(threeMasters...)
			tt.script(f.nodes["rc-leader-1"])
			members := f.r.observeMembers(context.Background(), f.s)
			// Every pod is asked once, in one round trip, whatever it answers.
			if got, want := f.nodes["rc-leader-1"].sent, []string{"cluster nodes", "role", "cluster info", "info server"}; !reflect.DeepEqual(got, want) {
				t.Errorf("leader-1 was sent %q, want %q", got, want)
			}
			if len(members) != 3 {
				t.Fatalf("got %d members, want 3", len(members))
			}
			m := memberByPod(members, "rc-leader-1")
			if m.IP != "10.0.5.2" || m.Port != 6379 || m.BusPort != 16379 || m.Role != clusterplan.Leader || m.Ordinal != 1 {
				t.Errorf("member %+v: want leader 1 at 10.0.5.2:6379 bus 16379", *m)
			}
			if (m.View != nil) != tt.wantView {
				t.Fatalf("view %v, want one: %v", m.View, tt.wantView)
			}
			if tt.wantView {
				me, ok := m.View.Myself()
				if !ok || me.ID != f.id("rc-leader-1") || !me.IsMaster() || len(m.View.Nodes) != 3 {
					t.Errorf("view %s: want leader-1 as myself among 3 masters", m.View)
				}
			}
			if m.Busy != tt.wantBusy {
				t.Errorf("busy %v, want %v", m.Busy, tt.wantBusy)
			}
			if m.Server.Version != tt.wantServer {
				t.Errorf("server version %q, want %q", m.Server.Version, tt.wantServer)
			}
			if _, ok := f.s.infos["rc-leader-1"]; ok != tt.wantInfo {
				t.Errorf("CLUSTER INFO kept: %v, want %v", ok, tt.wantInfo)
			}
			// The other pods are seen whatever leader-1 answers.
			for _, pod := range []string{"rc-leader-0", "rc-leader-2"} {
				if other := memberByPod(members, pod); other.View == nil || f.s.infos[pod].State != redis.ClusterStateOK {
					t.Errorf("pod %s: view %v, info %+v", pod, other.View, f.s.infos[pod])
				}
			}
		})
	}
}

// A pod not yet given an address is not dialled: it is a member without a view.
func TestObserveMembersDialsNoPodWithoutAnAddress(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 0)
	f.formed(threeMasters...)
	f.s.leaders[2].Status.PodIP = ""
	members := f.r.observeMembers(context.Background(), f.s)
	if m := memberByPod(members, "rc-leader-2"); m == nil || m.View != nil {
		t.Fatalf("leader-2: %+v, want a member without a view", m)
	}
	if sent := f.nodes["rc-leader-2"].sent; len(sent) != 0 {
		t.Errorf("leader-2 was sent %q, want nothing", sent)
	}
}

// What the planner makes of the observation: a formed cluster has nothing to do, and a silent
// master is waited for (its shard's slots are not moved elsewhere on a guess).
func TestPlanOfTheObservedCluster(t *testing.T) {
	design := clusterplan.Design{Leaders: 3}
	tests := []struct {
		name      string
		script    func(clusterPhaseFixture)
		wantSteps int
		wantWait  string
	}{
		{name: "a formed cluster has nothing to do", script: func(clusterPhaseFixture) {}},
		{name: "a silent master is waited for", script: func(f clusterPhaseFixture) { f.nodes["rc-leader-2"].down = errors.New("i/o timeout") },
			wantWait: "rc-leader-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newClusterPhaseFixture(t, 3, 0)
			f.formed(threeMasters...)
			tt.script(f)
			plan := clusterplan.Compute(design, f.r.observeMembers(context.Background(), f.s))
			if len(plan.Steps) != tt.wantSteps || len(plan.Problems) > 0 {
				t.Errorf("plan %+v: want %d steps, no problem", plan, tt.wantSteps)
			}
			if (tt.wantWait == "" && plan.Wait != "") || !strings.Contains(plan.Wait, tt.wantWait) {
				t.Errorf("plan waits %q, want one naming %q", plan.Wait, tt.wantWait)
			}
		})
	}
}

// Each kind of step sends its commands to the pod it runs on, and only to it.
func TestRunStepSendsEachStepsCommandsToItsPod(t *testing.T) {
	leader1 := "0000000000000000000000000000000000000002"
	tests := []struct {
		name string
		step clusterplan.Step
		// newCluster: the cluster never served, so free slots are claimed with ADDSLOTS.
		newCluster bool
		version    string
		want       []string
	}{
		{name: "meet introduces the address with its bus port",
			step: clusterplan.Step{Kind: clusterplan.StepMeet, On: "rc-leader-0", IP: "10.0.5.2", Port: 6379, BusPort: 16379},
			want: []string{"rc-leader-0: cluster meet 10.0.5.2 6379 16379"}},
		{name: "replicate follows the master's node ID",
			step: clusterplan.Step{Kind: clusterplan.StepReplicate, On: "rc-follower-0", NodeID: leader1},
			want: []string{"rc-follower-0: cluster replicate " + leader1}},
		{name: "forget drops the node ID",
			step: clusterplan.Step{Kind: clusterplan.StepForget, On: "rc-leader-0", NodeID: leader1},
			want: []string{"rc-leader-0: cluster forget " + leader1}},
		{name: "a Redis 7 claims free slots in ranges", newCluster: true,
			step: clusterplan.Step{Kind: clusterplan.StepAddSlots, On: "rc-leader-0", Slots: []redis.SlotRange{{Start: 0, End: 5460}}},
			want: []string{"rc-leader-0: cluster addslotsrange 0-5460"}},
		{name: "a Redis 6.2 claims them slot by slot", newCluster: true, version: "redis_version:6.2.14",
			step: clusterplan.Step{Kind: clusterplan.StepAddSlots, On: "rc-leader-0", Slots: []redis.SlotRange{{Start: 0, End: 5460}}},
			want: []string{"rc-leader-0: cluster addslots 0-5460"}},
		{name: "bump epoch",
			step: clusterplan.Step{Kind: clusterplan.StepBumpEpoch, On: "rc-leader-1"},
			want: []string{"rc-leader-1: cluster bumpepoch"}},
		{name: "set slot node tells each slot's owner",
			step: clusterplan.Step{Kind: clusterplan.StepSetSlotNode, On: "rc-leader-2", NodeID: leader1, Slots: []redis.SlotRange{{Start: 7, End: 8}}},
			want: []string{"rc-leader-2: cluster setslot 7 node " + leader1, "rc-leader-2: cluster setslot 8 node " + leader1}},
		{name: "announce sets the ports before the IP, one setting at a time",
			step: clusterplan.Step{Kind: clusterplan.StepAnnounce, On: "rc-leader-0", IP: "192.168.1.9", Port: 30001, BusPort: 30002},
			want: []string{"rc-leader-0: config set cluster-announce-port 30001", "rc-leader-0: config set cluster-announce-bus-port 30002",
				"rc-leader-0: config set cluster-announce-ip 192.168.1.9"}},
		{name: "failover reads the node timeout, then asks the replica",
			step: clusterplan.Step{Kind: clusterplan.StepFailover, On: "rc-follower-0"},
			want: []string{"rc-follower-0: config get cluster-node-timeout", "rc-follower-0: cluster failover"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newClusterPhaseFixture(t, 3, 1)
			f.formed(append(slices.Clone(threeMasters), clusterNode{pod: "rc-follower-0", master: "rc-leader-0"})...)
			for _, n := range f.nodes {
				n.serverInfo = tt.version
			}
			if !tt.newCluster {
				f.s.cr.Status.State = status.ClusterStateReady
			}
			f.observeBefore()
			if err := f.r.runStep(context.Background(), f.s, tt.step); err != nil {
				t.Fatalf("run %s: %v", tt.step.Kind, err)
			}
			if got := f.sentTo(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// movedView scripts the destination's CLUSTER NODES as it reads once it took the slots of a
// move: what the move reads back to confirm gossip did not take them away at once.
func (f clusterPhaseFixture) movedView(to string, nodes ...clusterNode) {
	f.nodes[to].clusterNodes = f.view(to, nodes...)
}

// A slot move goes in the order that loses no key and refuses no write: both ends must be
// cluster_state:ok; the destination imports before the source migrates; the keys go to the
// destination's pod address; the destination, then the source, then every other master is
// told the new owner; last, the destination's view confirms it kept the slots.
func TestSlotMoveSequence(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 0)
	f.formed(threeMasters...)
	f.nodes["rc-leader-0"].keys = map[int]int64{5459: 3, 5460: 4}
	f.s.cr.Status.State = status.ClusterStateReady
	f.observeBefore()
	f.movedView("rc-leader-1", clusterNode{pod: "rc-leader-0", slots: []string{"0-5458"}},
		clusterNode{pod: "rc-leader-1", slots: []string{"5459-10922"}}, threeMasters[2])
	to := f.id("rc-leader-1")
	step := clusterplan.Step{Kind: clusterplan.StepMigrate, On: "rc-leader-0", To: "rc-leader-1", NodeID: to,
		Slots: []redis.SlotRange{{Start: 5459, End: 5460}}, Reason: "rebalance"}
	if err := f.r.runStep(context.Background(), f.s, step); err != nil {
		t.Fatalf("move: %v", err)
	}
	from := f.id("rc-leader-0")
	want := []string{
		"rc-leader-0: cluster info",
		"rc-leader-0: cluster setslot 5459 migrating " + to,
		"rc-leader-0: cluster setslot 5460 migrating " + to,
		"rc-leader-0: migrate 10.0.5.2:6379 5459 5460",
		"rc-leader-0: cluster setslot 5459 node " + to,
		"rc-leader-0: cluster setslot 5460 node " + to,
		"rc-leader-1: cluster info",
		"rc-leader-1: cluster setslot 5459 importing " + from,
		"rc-leader-1: cluster setslot 5460 importing " + from,
		"rc-leader-1: cluster setslot 5459 node " + to,
		"rc-leader-1: cluster setslot 5460 node " + to,
		"rc-leader-1: cluster nodes",
		"rc-leader-2: cluster setslot 5459 node " + to,
		"rc-leader-2: cluster setslot 5460 node " + to,
	}
	if got := f.sentTo(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if left := f.nodes["rc-leader-0"].keys; len(left) != 0 {
		t.Errorf("the source still holds keys in %v", left)
	}
	// The event says how many keys went over.
	if events := drainEvents(f.recorder); len(events) != 1 || !strings.Contains(events[0], "(7 keys)") {
		t.Errorf("events %q, want one that counts 7 keys", events)
	}
}

// The order across nodes of TestSlotMoveSequence, which sentTo lists pod by pod: the
// destination imports before the source migrates, and owns the slots before the source is
// told.
func TestSlotMoveOrderAcrossNodes(t *testing.T) {
	f := newClusterPhaseFixture(t, 2, 0)
	f.formed(threeMasters[:2]...)
	f.s.cr.Status.State = status.ClusterStateReady
	f.observeBefore()
	f.movedView("rc-leader-1", clusterNode{pod: "rc-leader-0", slots: []string{"0-8", "10-5460"}},
		clusterNode{pod: "rc-leader-1", slots: []string{"9", "5461-10922"}})
	var journal []string
	for _, n := range f.nodes {
		n.journal = &journal
	}
	to := f.id("rc-leader-1")
	step := clusterplan.Step{Kind: clusterplan.StepMigrate, On: "rc-leader-0", To: "rc-leader-1", NodeID: to, Slots: []redis.SlotRange{{Start: 9, End: 9}}}
	if err := f.r.runStep(context.Background(), f.s, step); err != nil {
		t.Fatalf("move: %v", err)
	}
	from := f.id("rc-leader-0")
	want := []string{
		"10.0.5.1:6379 cluster info",
		"10.0.5.2:6379 cluster info",
		"10.0.5.2:6379 cluster setslot 9 importing " + from,
		"10.0.5.1:6379 cluster setslot 9 migrating " + to,
		"10.0.5.1:6379 migrate 10.0.5.2:6379 9",
		"10.0.5.2:6379 cluster setslot 9 node " + to,
		"10.0.5.1:6379 cluster setslot 9 node " + to,
		"10.0.5.2:6379 cluster nodes",
	}
	if !reflect.DeepEqual(journal, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(journal, "\n"), strings.Join(want, "\n"))
	}
}

// A destination whose view no longer claims the slots it just took lost them to gossip, and
// their keys with them: the move fails with a Warning that names the slots.
func TestSlotMoveTakenAwayByGossipIsAWarning(t *testing.T) {
	f := newClusterPhaseFixture(t, 2, 0)
	f.formed(threeMasters[:2]...)
	f.s.cr.Status.State = status.ClusterStateReady
	f.observeBefore()
	// The destination's view still maps slot 9 to the source after the move.
	step := clusterplan.Step{Kind: clusterplan.StepMigrate, On: "rc-leader-0", To: "rc-leader-1", NodeID: f.id("rc-leader-1"), Slots: []redis.SlotRange{{Start: 9, End: 9}}}
	err := f.r.runStep(context.Background(), f.s, step)
	if err == nil || !strings.Contains(err.Error(), "no longer claims 1 of the slots it just took (slot 9 first") {
		t.Fatalf("error %v, want one saying the destination lost slot 9", err)
	}
	if events := drainEvents(f.recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning ClusterMigrateFailed") {
		t.Errorf("events %q, want one Warning ClusterMigrateFailed", events)
	}
}

// A step Redis refuses is a Warning event on the pod that acts, named after the step, and an
// error that wraps the refusal.
func TestRefusedStepIsAWarning(t *testing.T) {
	refusal := fakeServerError("ERR Invalid node address specified")
	tests := []struct {
		name    string
		step    clusterplan.Step
		refuse  string
		wantKey string
	}{
		{name: "meet", step: clusterplan.Step{Kind: clusterplan.StepMeet, On: "rc-leader-0", IP: "10.0.5.2", Port: 6379, BusPort: 16379},
			refuse: "cluster meet", wantKey: "Warning ClusterMeetFailed Meet on rc-leader-0 failed"},
		{name: "replicate", step: clusterplan.Step{Kind: clusterplan.StepReplicate, On: "rc-leader-0", NodeID: "0000000000000000000000000000000000000002"},
			refuse: "cluster replicate", wantKey: "Warning ClusterReplicateFailed Replicate on rc-leader-0 failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newClusterPhaseFixture(t, 3, 0)
			f.formed(threeMasters...)
			f.observeBefore()
			f.nodes[tt.step.On].refuse = map[string]error{tt.refuse: refusal}
			err := f.r.runStep(context.Background(), f.s, tt.step)
			if !errors.Is(err, refusal) {
				t.Fatalf("error %v, want the refusal wrapped", err)
			}
			events := drainEvents(f.recorder)
			if len(events) != 1 || !strings.HasPrefix(events[0], tt.wantKey) || !strings.Contains(events[0], string(refusal)) {
				t.Errorf("events %q, want one %q with the refusal", events, tt.wantKey)
			}
		})
	}
}

// A FORGET of a node gossip removed meanwhile is no failure: nothing to warn of.
func TestForgetOfAnUnknownNodeIsNoFailure(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 0)
	f.formed(threeMasters...)
	f.observeBefore()
	f.nodes["rc-leader-0"].refuse = map[string]error{"cluster forget": fakeServerError("ERR Unknown node 0000000000000000000000000000000000000009")}
	step := clusterplan.Step{Kind: clusterplan.StepForget, On: "rc-leader-0", NodeID: "0000000000000000000000000000000000000009"}
	if err := f.r.runStep(context.Background(), f.s, step); err != nil {
		t.Fatalf("forget: %v", err)
	}
	for _, e := range drainEvents(f.recorder) {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			t.Errorf("warning %q", e)
		}
	}
}

// sentOnly lists of sent the lines that begin with one of the commands given.
func sentOnly(sent []string, commands ...string) []string {
	var out []string
	for _, line := range sent {
		_, command, _ := strings.Cut(line, ": ")
		for _, c := range commands {
			if strings.HasPrefix(command, c) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// Slots no master claims go where their keys are: every master counts its keys in them, the
// one holding a slot's keys takes it (else the step's pod), bumps its epoch so that its claim
// wins, and the other masters are told the owner.
func TestAdoptSlotsStepGivesOrphansToTheMasterHoldingTheirKeys(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 0)
	// leader-2 lost its claim of 16000-16001 (a Redis 7.2 unmaps a slot whose owner stopped
	// claiming it) but still holds the keys of 16000.
	f.formed(threeMasters[0], threeMasters[1], clusterNode{pod: "rc-leader-2", slots: []string{"10923-15999", "16002-16383"}})
	f.nodes["rc-leader-2"].keys = map[int]int64{16000: 5}
	f.s.cr.Status.State = status.ClusterStateReady
	f.observeBefore()
	step := clusterplan.Step{Kind: clusterplan.StepAdoptSlots, On: "rc-leader-0", Slots: []redis.SlotRange{{Start: 16000, End: 16001}}, Reason: "orphaned"}
	if err := f.r.runStep(context.Background(), f.s, step); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	id0, id2 := f.id("rc-leader-0"), f.id("rc-leader-2")
	want := []string{
		"rc-leader-0: cluster countkeysinslot 16000",
		"rc-leader-0: cluster countkeysinslot 16001",
		"rc-leader-0: cluster setslot 16001 node " + id0,
		"rc-leader-0: cluster bumpepoch",
		"rc-leader-0: cluster setslot 16000 node " + id2,
		"rc-leader-1: cluster countkeysinslot 16000",
		"rc-leader-1: cluster countkeysinslot 16001",
		"rc-leader-1: cluster setslot 16001 node " + id0,
		"rc-leader-1: cluster setslot 16000 node " + id2,
		"rc-leader-2: cluster countkeysinslot 16000",
		"rc-leader-2: cluster countkeysinslot 16001",
		"rc-leader-2: cluster setslot 16001 node " + id0,
		"rc-leader-2: cluster setslot 16000 node " + id2,
		"rc-leader-2: cluster bumpepoch",
	}
	if got := sentOnly(f.sentTo(), "cluster countkeysinslot", "cluster setslot", "cluster bumpepoch"); !reflect.DeepEqual(got, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Slots no node claimed are a fault Redis does not mend: their adoption is a warning.
	if events := drainEvents(f.recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning ClusterAdoptSlots") {
		t.Errorf("events %q, want one Warning ClusterAdoptSlots", events)
	}
}

// Before a departing master's slots leave, replica migration is turned off on it and on its
// replicas, not on the other nodes: none of them is to copy the destination's data just
// before its pod goes.
func TestDepartingMasterIsKeptAloneBeforeItsSlotsMove(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 3)
	f.formed(append(slices.Clone(threeMasters), clusterNode{pod: "rc-follower-0", master: "rc-leader-0"},
		clusterNode{pod: "rc-follower-1", master: "rc-leader-1"}, clusterNode{pod: "rc-follower-2", master: "rc-leader-2"})...)
	// A scale-in to two leaders: leader-2 departs.
	f.s.cr.Spec.RedisLeader.Replicas = ptr.To(int32(2))
	f.s.cr.Status.State = status.ClusterStateReady
	f.observeBefore()
	f.movedView("rc-leader-0", clusterNode{pod: "rc-leader-0", slots: []string{"0-5460", "10923"}}, threeMasters[1],
		clusterNode{pod: "rc-leader-2", slots: []string{"10924-16383"}})
	step := clusterplan.Step{Kind: clusterplan.StepMigrate, On: "rc-leader-2", To: "rc-leader-0", NodeID: f.id("rc-leader-0"),
		Slots: []redis.SlotRange{{Start: 10923, End: 10923}}}
	if err := f.r.runStep(context.Background(), f.s, step); err != nil {
		t.Fatalf("move: %v", err)
	}
	want := []string{"rc-leader-2: config set cluster-allow-replica-migration no", "rc-follower-2: config set cluster-allow-replica-migration no"}
	if got := sentOnly(f.sentTo(), "config set"); !reflect.DeepEqual(got, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A new cluster of lone leaders, each knowing only itself: the topology phase gives each its
// third of the slots before they meet (clusterplan.EarlySlots), then the first meets the
// others; nothing else is sent but the observations.
func TestNewClusterLeadersTakeTheirSlotsThenMeet(t *testing.T) {
	f := newClusterPhaseFixture(t, 3, 0)
	for _, pod := range f.pods {
		f.nodes[pod].clusterNodes = f.view(pod, clusterNode{pod: pod})
		f.nodes[pod].clusterInfo = redis.ClusterInfo{State: redis.ClusterStateFail}
	}
	requeued, err := f.r.reconcileTopology(context.Background(), f.s)
	if err != nil || !requeued {
		t.Fatalf("topology: requeued %v, error %v; want a requeue while Redis acts", requeued, err)
	}
	thirds := redis.SplitSlots(3)
	want := []string{
		"rc-leader-0: cluster addslotsrange " + thirds[0].String(),
		"rc-leader-0: cluster meet 10.0.5.2 6379 16379",
		"rc-leader-0: cluster meet 10.0.5.3 6379 16379",
		"rc-leader-1: cluster addslotsrange " + thirds[1].String(),
		"rc-leader-2: cluster addslotsrange " + thirds[2].String(),
	}
	if got := sentOnly(f.sentTo(), "cluster addslots", "cluster meet", "cluster replicate", "cluster setslot", "config set", "migrate"); !reflect.DeepEqual(got, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A pod its address gate holds does not run, like any pod still starting: the status names it
// and what it waits for, rather than only counting the pods that run.
func TestStatusNamesThePodsTheAddressGateHolds(t *testing.T) {
	for _, tc := range []struct {
		held []string
		want string
	}{
		{nil, "2 of 3 leader pods are running"},
		{[]string{"rc-leader-1"}, "2 of 3 leader pods are running; pod rc-leader-1 cannot start until the replica of the master its address belonged to takes over that master's slots (address gate)"},
		{[]string{"rc-leader-1", "rc-leader-2"}, "2 of 3 leader pods are running; pods rc-leader-1, rc-leader-2 cannot start until the replicas of the masters their addresses belonged to take over those masters' slots (address gate)"},
	} {
		f := newClusterPhaseFixture(t, 3, 3)
		f.s.gateHeld = tc.held
		f.r.podsNotRunning(context.Background(), f.s, status.ClusterReasonInitializingLeaders, "2 of 3 leader pods are running")
		p := meta.FindStatusCondition(f.s.cr.Status.Conditions, v1beta2.ConditionProgressing)
		if p == nil || p.Message != tc.want {
			t.Errorf("held %v: Progressing %+v, want the message %q", tc.held, p, tc.want)
		}
	}
}
