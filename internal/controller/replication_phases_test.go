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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// replicationPodIP is the address of pod rr-<ordinal> of the replication tests.
func replicationPodIP(ordinal int) string { return fmt.Sprintf("10.0.3.%d", ordinal+1) }

// replicationPhaseFixture is a RedisReplicationReconciler whose pods' Redis are fake nodes,
// one per ordinal, and the scope of a reconcile of RedisReplication rr sized to them: what
// the phases after "pods" see, without a control plane or a redis-server.
type replicationPhaseFixture struct {
	r        *RedisReplicationReconciler
	s        *replicationScope
	pods     []corev1.Pod
	nodes    []*fakeNode
	kube     client.Client
	recorder *events.FakeRecorder
}

func newReplicationPhaseFixture(t *testing.T, nodes ...*fakeNode) replicationPhaseFixture {
	t.Helper()
	return buildReplicationPhaseFixture(t, nil, nodes)
}

// replicationSentinelIP is the address of the one embedded sentinel of the tests that have it.
const replicationSentinelIP = "10.0.4.1"

// newSentinelWatchedFixture is a replication watched by one embedded sentinel, the node
// sentinel, whose pod runs at replicationSentinelIP.
func newSentinelWatchedFixture(t *testing.T, sentinel *fakeNode, nodes ...*fakeNode) replicationPhaseFixture {
	t.Helper()
	return buildReplicationPhaseFixture(t, sentinel, nodes)
}

func buildReplicationPhaseFixture(t *testing.T, sentinel *fakeNode, nodes []*fakeNode) replicationPhaseFixture {
	t.Helper()
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: types.UID("replication-uid"), Generation: 1},
		Spec: v1beta2.RedisReplicationSpec{Size: ptr.To(int32(len(nodes)))}}
	dialer := fakeRedis{}
	var objects []client.Object
	var pods []corev1.Pod
	for i, node := range nodes {
		pod := statefulSetPod(cr.Name, i, replicationPodIP(i))
		objects = append(objects, pod)
		pods = append(pods, *pod)
		dialer[fmt.Sprintf("%s:%d", replicationPodIP(i), builder.DefaultRedisPort)] = node
	}
	if sentinel != nil {
		cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 1}
		objects = append(objects, statefulSetPod(builder.EmbeddedSentinelStatefulSetName(cr.Name), 0, replicationSentinelIP))
		dialer[fmt.Sprintf("%s:%d", replicationSentinelIP, builder.DefaultSentinelPort)] = sentinel
	}
	// RedisSentinels are listed to find who watches the replication.
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	recorder := events.NewFakeRecorder(20)
	r := &RedisReplicationReconciler{Dependencies: Dependencies{Client: kube, Recorder: recorder, RedisNodes: dialer, Memory: NewMemory()}}
	s := &replicationScope{workloadScope: workloadScope{memory: r.Memory,
		spec: workloadSpec{owner: cr, kind: "RedisReplication", port: builder.DefaultRedisPort}}, cr: cr}
	s.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
	return replicationPhaseFixture{r: r, s: s, pods: pods, nodes: nodes, kube: kube, recorder: recorder}
}

// observe runs the pods phase's ROLE round over the fixture's pods, failing the test on error.
func (f replicationPhaseFixture) observe(t *testing.T) {
	t.Helper()
	if err := f.r.observePodMembers(context.Background(), f.s, f.pods); err != nil {
		t.Fatalf("observe the pods: %v", err)
	}
}

// observeBefore observes as the pods phase does before the phase under test, and forgets
// what that sent (TestObservePodMembersGivesThePlannerWhatEachPodAnswers checks it).
func (f replicationPhaseFixture) observeBefore(t *testing.T) {
	t.Helper()
	f.observe(t)
	f.sentTo()
}

// sentTo lists the commands every pod's Redis received, after the pod's name, and forgets
// them: each step of a test sees what it caused.
func (f replicationPhaseFixture) sentTo() []string {
	var out []string
	for i, n := range f.nodes {
		for _, c := range n.sent {
			out = append(out, fmt.Sprintf("rr-%d: %s", i, c))
		}
		n.sent = nil
	}
	return out
}

// redisPod is a pod's Redis that answers ROLE with role and INFO replication with the offset
// it holds and, for a replica, since when its link is down ("0" while up, "-1" never up).
func redisPod(role redis.Role, offset int64, linkDownSince string) *fakeNode {
	info := map[string]string{"master_repl_offset": strconv.FormatInt(offset, 10)}
	if role.Kind == redis.RoleSlave {
		info["master_link_down_since_seconds"] = linkDownSince
	}
	return &fakeNode{roles: []redis.Role{role}, replicationInfo: info}
}

func masterRole(offset int64) redis.Role {
	return redis.Role{Kind: redis.RoleMaster, ReplicationOffset: offset}
}

// replicaRole is a replica of host:6379 whose link is in state ("connected": up); ROLE says
// -1 for the offset of a replica whose link is down.
func replicaRole(host, state string, offset int64) redis.Role {
	return redis.Role{Kind: redis.RoleSlave, MasterIP: host, MasterPort: builder.DefaultRedisPort, ReplicationState: state, ReplicationOffset: offset}
}

// waitingRole is how every replication pod starts: a replica of no master, until told one.
var waitingRole = redis.Role{Kind: redis.RoleSlave, MasterIP: redis.NoMasterHost, MasterPort: redis.NoMasterPort, ReplicationState: "connect", ReplicationOffset: -1}

// The pods phase asks each running pod for ROLE and INFO replication and hands the planner
// what it answered: the role, with the offset the pod holds from INFO (ROLE says -1 for a
// replica whose link is down, exactly when the planner compares offsets), how long a
// replica's link has been down, and the master by IP even when the replica follows its DNS
// name. A pod that does not answer, or answers what cannot be read, is a member without a
// role (down, to the planner); a pod that does not run is not asked.
func TestObservePodMembersGivesThePlannerWhatEachPodAnswers(t *testing.T) {
	master := replicationPodIP(1)
	masterFQDN := builder.ReplicationPodFQDN("rr-1", "rr", "ns", "")
	for _, tc := range []struct {
		name      string
		node      *fakeNode
		hostnames bool
		phase     corev1.PodPhase
		want      *redis.Role // nil: rr-0 has no role
		linkDown  time.Duration
		asked     bool
	}{
		{name: "a master, at the offset INFO gives", node: redisPod(masterRole(1000), 1000, ""),
			want: ptr.To(masterRole(1000)), asked: true},
		{name: "a replica with its link up", node: redisPod(replicaRole(master, "connected", 990), 990, "0"),
			want: ptr.To(replicaRole(master, "connected", 990)), asked: true},
		{name: "a replica whose link is down, at the offset it keeps", node: redisPod(replicaRole(master, "connect", -1), 950, "30"),
			want: ptr.To(replicaRole(master, "connect", 950)), linkDown: 30 * time.Second, asked: true},
		{name: "a replica that waits for its master, never linked", node: redisPod(waitingRole, 0, "-1"),
			want: &redis.Role{Kind: redis.RoleSlave, MasterIP: redis.NoMasterHost, MasterPort: redis.NoMasterPort, ReplicationState: "connect"}, asked: true},
		{name: "a replica following the master's DNS name follows its IP", node: redisPod(replicaRole(masterFQDN, "connected", 990), 990, "0"),
			hostnames: true, want: ptr.To(replicaRole(master, "connected", 990)), asked: true},
		{name: "a pod whose Redis does not answer", node: &fakeNode{down: errConnectionRefused}, asked: true},
		{name: "a pod whose offset cannot be read", node: &fakeNode{roles: []redis.Role{masterRole(5)}, replicationInfo: map[string]string{}}, asked: true},
		{name: "a pod that does not run yet", node: redisPod(masterRole(1000), 1000, ""), phase: corev1.PodPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newReplicationPhaseFixture(t, tc.node, redisPod(masterRole(1000), 1000, ""))
			f.s.hostnames = tc.hostnames
			if tc.phase != "" {
				f.pods[0].Status.Phase = tc.phase
			}
			f.observe(t)
			if len(f.s.members) != 2 {
				t.Fatalf("members %+v, want one per pod", f.s.members)
			}
			m := f.s.members[0]
			if m.Pod != "rr-0" || m.IP != replicationPodIP(0) || m.Port != builder.DefaultRedisPort || m.Ordinal != 0 {
				t.Errorf("member %+v, want rr-0 at %s:%d", m, replicationPodIP(0), builder.DefaultRedisPort)
			}
			if !reflect.DeepEqual(m.Role, tc.want) {
				t.Errorf("role %+v, want %+v", m.Role, tc.want)
			}
			if m.LinkDown != tc.linkDown {
				t.Errorf("link down for %s, want %s", m.LinkDown, tc.linkDown)
			}
			// ROLE first: INFO is asked only of a pod that answered it.
			var want []string
			if tc.asked {
				want = []string{"role"}
				if tc.node.down == nil {
					want = append(want, "info replication")
				}
			}
			if !slices.Equal(tc.node.sent, want) {
				t.Errorf("rr-0 received %q, want %q", tc.node.sent, want)
			}
		})
	}
}

// What the pods phase observes is what the planner decides on: pods that all wait for their
// master are led by one of them (REPLICAOF NO ONE) with no failover, and the others are
// pointed at it once it answers as master.
func TestFreshPodsAreLedByOneAndTheOthersFollowIt(t *testing.T) {
	ctx := context.Background()
	f := newReplicationPhaseFixture(t, redisPod(waitingRole, 0, "-1"), redisPod(waitingRole, 0, "-1"), redisPod(waitingRole, 0, "-1"))
	f.observeBefore(t)
	if stop, err := f.r.reconcileReplication(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v, want a stop while the steps take effect", stop, err)
	}
	lead := f.s.cr.Status.MasterNode
	if lead == "" {
		t.Fatalf("no master chosen among pods that all wait: plan %+v", f.s.plan)
	}
	leadIP := f.s.member(lead).IP
	if got, want := f.sentTo(), []string{lead + ": replicaof no one"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}

	f.observeBefore(t)
	if _, err := f.r.reconcileReplication(ctx, f.s); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range f.nodes {
		if pod := fmt.Sprintf("rr-%d", i); pod != lead {
			want = append(want, fmt.Sprintf("%s: replicaof %s %d", pod, leadIP, builder.DefaultRedisPort))
		}
	}
	if got := f.sentTo(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// A master that stays silent past its grace is replaced by the replica that holds the most
// of its stream: REPLICAOF NO ONE to that replica alone, one Promote event, the status names
// it; once it answers as master, the other replica is pointed at it (REPLICAOF <its IP>
// 6379) and the silent master is sent nothing.
func TestPromotionOfTheReplicaHoldingTheMostThenTheOthersFollowIt(t *testing.T) {
	ctx := context.Background()
	oldMaster := replicationPodIP(0)
	f := newReplicationPhaseFixture(t,
		&fakeNode{down: errConnectionRefused},
		redisPod(replicaRole(oldMaster, "connect", -1), 900, "20"),
		redisPod(replicaRole(oldMaster, "connect", -1), 1000, "20"))
	f.s.cr.Status.MasterNode = "rr-0"
	// The master has been silent for longer than the promotion grace.
	f.r.masterDownSince.Store(f.s.cr.UID, time.Now().Add(-DefaultMasterPromotionGrace-time.Second))

	f.observeBefore(t)
	if stop, err := f.r.reconcileReplication(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v, want a stop while the promotion takes effect", stop, err)
	}
	if got, want := f.sentTo(), []string{"rr-2: replicaof no one"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if f.s.cr.Status.MasterNode != "rr-2" {
		t.Errorf("status names master %q, want rr-2", f.s.cr.Status.MasterNode)
	}
	events := drainEvents(f.recorder)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal Promote") }) {
		t.Errorf("events %q, want a Promote", events)
	}

	f.observeBefore(t)
	if _, err := f.r.reconcileReplication(ctx, f.s); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("rr-1: replicaof %s %d", replicationPodIP(2), builder.DefaultRedisPort)}
	if got := f.sentTo(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// A promotion Redis refuses fails the phase with Redis's error and a Warning event naming
// the step; the status still names the chosen replica, which the next reconcile promotes.
func TestPromotionRefusedIsAWarning(t *testing.T) {
	refused := fakeServerError("READONLY You can't write against a read only replica.")
	oldMaster := replicationPodIP(0)
	promoted := redisPod(replicaRole(oldMaster, "connect", -1), 1000, "20")
	promoted.refuse = map[string]error{"replicaof": refused}
	f := newReplicationPhaseFixture(t, &fakeNode{down: errConnectionRefused}, promoted)
	f.s.cr.Status.MasterNode = "rr-0"
	f.r.masterDownSince.Store(f.s.cr.UID, time.Now().Add(-DefaultMasterPromotionGrace-time.Second))
	f.observeBefore(t)

	_, err := f.r.reconcileReplication(context.Background(), f.s)
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), "Promote rr-1") {
		t.Fatalf("error %v, want Redis's refusal of Promote rr-1", err)
	}
	events := drainEvents(f.recorder)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning PromoteFailed") }) {
		t.Errorf("events %q, want a PromoteFailed warning", events)
	}
}

// Before the sentinels are asked to fail over, every replica must hold each write the
// paused master took: waitCaughtUp compares each replica's ROLE offset with the master's,
// polling until sentinelCatchUpWait, and names the first that did not catch up. A replica
// that does not answer is waited for like one behind; the master's offset unreadable, or the
// reconcile cancelled, is an error.
func TestWaitCaughtUpUntilTheReplicasHoldThePausedMastersOffset(t *testing.T) {
	masterIP := replicationPodIP(0)
	for _, tc := range []struct {
		name    string
		master  *fakeNode
		replica []redis.Role // rr-2's ROLE answers in turn; rr-1 holds the master's offset
		down    bool         // rr-2 does not answer
		cancel  bool
		lagging string
		wantErr error
		polls   bool // rr-2 is asked more than once
		atBound bool // the answer comes at sentinelCatchUpWait
	}{
		{name: "replicas that hold the offset already", master: &fakeNode{roles: []redis.Role{masterRole(100)}},
			replica: []redis.Role{replicaRole(masterIP, "connected", 100)}},
		{name: "a replica that catches up after a few polls", master: &fakeNode{roles: []redis.Role{masterRole(100)}},
			replica: []redis.Role{replicaRole(masterIP, "connected", 90), replicaRole(masterIP, "connected", 95), replicaRole(masterIP, "connected", 100)},
			polls:   true},
		{name: "a replica that stays behind is named at the bound", master: &fakeNode{roles: []redis.Role{masterRole(100)}},
			replica: []redis.Role{replicaRole(masterIP, "connected", 90)}, lagging: "rr-2", polls: true, atBound: true},
		{name: "a replica that does not answer is named at the bound", master: &fakeNode{roles: []redis.Role{masterRole(100)}},
			down: true, lagging: "rr-2", polls: true, atBound: true},
		{name: "the paused master's offset cannot be read", master: &fakeNode{down: errConnectionRefused},
			replica: []redis.Role{replicaRole(masterIP, "connected", 100)}, wantErr: errConnectionRefused},
		{name: "the reconcile is cancelled while a replica is behind", master: &fakeNode{roles: []redis.Role{masterRole(100)}},
			replica: []redis.Role{replicaRole(masterIP, "connected", 90)}, cancel: true, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // two cases wait out the bound
			behind := &fakeNode{roles: tc.replica}
			if tc.down {
				behind.down = errConnectionRefused
			}
			f := newReplicationPhaseFixture(t, tc.master, redisPod(replicaRole(masterIP, "connected", 100), 100, "0"), behind)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			master, err := f.r.node(f.s, masterIP)
			if err != nil {
				t.Fatal(err)
			}
			var replicas []replicationplan.Member
			for i := 1; i < len(f.nodes); i++ {
				replicas = append(replicas, replicationplan.Member{Pod: fmt.Sprintf("rr-%d", i), Ordinal: i, IP: replicationPodIP(i), Port: builder.DefaultRedisPort})
			}

			start := time.Now()
			lagging, err := f.r.waitCaughtUp(ctx, f.s, master, replicas)
			took := time.Since(start)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if lagging != tc.lagging {
				t.Errorf("lagging %q, want %q", lagging, tc.lagging)
			}
			if tc.atBound && took < sentinelCatchUpWait {
				t.Errorf("named a lagging replica after %s, before the bound %s", took, sentinelCatchUpWait)
			}
			if !tc.atBound && took >= sentinelCatchUpWait {
				t.Errorf("took %s, the whole bound", took)
			}
			if tc.wantErr != nil {
				return
			}
			if got := f.nodes[0].sent; !slices.Equal(got, []string{"role"}) {
				t.Errorf("the master received %q, want one ROLE for its offset", got)
			}
			if polls := len(behind.sent); (polls > 1) != tc.polls {
				t.Errorf("rr-2 was asked %d time(s) (%q), polled: want %v", polls, behind.sent, tc.polls)
			}
		})
	}
}

// A hand-over (scale-in, rolling update, requested failover, terminating master) is FAILOVER
// TO on the master, naming the replica as the master lists it in INFO replication (by IP, or
// by the DNS name it announces), or as the sentinels would when the master cannot say. A
// FAILOVER already in progress is waited for, not an error; any other refusal is a Warning
// and fails the phase.
func TestHandOverNamesTheReplicaAsTheMasterListsIt(t *testing.T) {
	masterIP, replicaIP := replicationPodIP(0), replicationPodIP(1)
	replicaFQDN := builder.ReplicationPodFQDN("rr-1", "rr", "ns", "")
	for _, tc := range []struct {
		name      string
		listed    string // the host the master lists its replica by; "": INFO fails
		hostnames bool
		refusal   error
		target    string
		wantErr   bool
		event     string // the prefix of the one event, "" for none
	}{
		{name: "listed by IP", listed: replicaIP, target: replicaIP, event: "Normal HandOver"},
		{name: "listed by DNS name", listed: replicaFQDN, hostnames: true, target: replicaFQDN, event: "Normal HandOver"},
		{name: "the master cannot list its replicas: the IP without DNS names", target: replicaIP, event: "Normal HandOver"},
		{name: "a FAILOVER already in progress is waited for", listed: replicaIP, target: replicaIP,
			refusal: fakeServerError("ERR FAILOVER already in progress.")},
		{name: "a refusal is a Warning", listed: replicaIP, target: replicaIP, wantErr: true, event: "Warning HandOverFailed",
			refusal: fakeServerError("ERR FAILOVER target HOST and PORT is not a replica.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master := redisPod(masterRole(100), 100, "")
			if tc.listed != "" {
				master.replicationInfo["slave0"] = fmt.Sprintf("ip=%s,port=%d,state=online,offset=100,lag=0", tc.listed, builder.DefaultRedisPort)
			}
			master.refuse = map[string]error{"failover": tc.refusal}
			f := newReplicationPhaseFixture(t, master, redisPod(replicaRole(masterIP, "connected", 100), 100, "0"))
			f.s.hostnames = tc.hostnames
			f.observeBefore(t)
			if tc.listed == "" {
				master.refuse["info"] = errConnectionRefused // once observed as master
			}

			err := f.r.handOver(context.Background(), f.s, "rr-0", "rr-1", status.ReasonRollingUpdate, "for a test")
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, tc.refusal)) {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			want := []string{"rr-0: info replication", fmt.Sprintf("rr-0: failover to %s %d timeout 5000", tc.target, builder.DefaultRedisPort)}
			if got := f.sentTo(); !slices.Equal(got, want) {
				t.Errorf("sent %q, want %q", got, want)
			}
			events := drainEvents(f.recorder)
			if tc.event == "" && len(events) > 0 || tc.event != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.event)) {
				t.Errorf("events %q, want %q", events, tc.event)
			}
		})
	}
}

// A sentinel-watched master is handed over through the sentinels: its writes paused, the
// replicas caught up, one sentinel that names it asked to fail over, and once a replica
// answers as master the old master made its replica before its pause ends; the pause is
// lifted whatever happens. When the sentinel's failover ends without a promotion, or a
// replica does not catch up, nothing is re-pointed and the status keeps the master.
func TestHandOverThroughSentinels(t *testing.T) {
	masterIP, replicaIP := replicationPodIP(0), replicationPodIP(1)
	group := builder.EmbeddedMasterGroupName
	caughtUp := replicaRole(masterIP, "connected", 100)
	for _, tc := range []struct {
		name string
		// replica is rr-1's ROLE answers after the observation's: the catch-up check's, then
		// the promotion wait's.
		replica    []redis.Role
		toMaster   []string
		toSentinel []string
		master     string // the status's master after
		event      string
	}{
		{name: "a replica promoted by the sentinels", replica: []redis.Role{caughtUp, masterRole(100)},
			toMaster:   []string{"client pause 10000 write", "role", fmt.Sprintf("replicaof %s %d", replicaIP, builder.DefaultRedisPort), "client unpause"},
			toSentinel: []string{"sentinel master " + group, "sentinel failover " + group, "sentinel master " + group},
			master:     "rr-1", event: "Normal " + ReasonSentinelHandOver},
		{name: "a failover that ends without a promotion", replica: []redis.Role{caughtUp, caughtUp},
			toMaster:   []string{"client pause 10000 write", "role", "client unpause"},
			toSentinel: []string{"sentinel master " + group, "sentinel failover " + group, "sentinel master " + group},
			master:     "rr-0", event: "Warning " + ReasonSentinelHandOver},
		{name: "a replica that does not catch up", replica: []redis.Role{replicaRole(masterIP, "connected", 90)},
			toMaster:   []string{"client pause 10000 write", "role", "client unpause"},
			toSentinel: []string{"sentinel master " + group},
			master:     "rr-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the replica that does not catch up waits out its bound
			sentinel := &fakeNode{masterState: map[string]map[string]string{group: {"ip": masterIP, "flags": "master"}}}
			replica := redisPod(caughtUp, 100, "0")
			replica.roles = append([]redis.Role{caughtUp}, tc.replica...) // the observation's first
			f := newSentinelWatchedFixture(t, sentinel, redisPod(masterRole(100), 100, ""), replica)
			f.s.cr.Status.MasterNode = "rr-0"
			f.observeBefore(t)

			asked, err := f.r.handOverThroughSentinels(context.Background(), f.s, "rr-0", "for a test")
			if !asked || err != nil {
				t.Fatalf("asked=%v err=%v, want the sentinels asked", asked, err)
			}
			if got := f.nodes[0].sent; !slices.Equal(got, tc.toMaster) {
				t.Errorf("the master received %q, want %q", got, tc.toMaster)
			}
			if got := sentinel.sent; !slices.Equal(got, tc.toSentinel) {
				t.Errorf("the sentinel received %q, want %q", got, tc.toSentinel)
			}
			if f.s.cr.Status.MasterNode != tc.master {
				t.Errorf("status names master %q, want %q", f.s.cr.Status.MasterNode, tc.master)
			}
			events := drainEvents(f.recorder)
			if tc.event == "" && len(events) > 0 || tc.event != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.event)) {
				t.Errorf("events %q, want %q", events, tc.event)
			}
		})
	}
}

// An embedded sentinel whose pod runs but does not answer is on the replication's status at
// the reconcile that asks it: the replication, which served, is Degraded naming that pod; one
// that answers again takes it off. Without this a frozen sentinel (which the others need for
// their quorum, and which would miss the next failover) stayed unseen until its readiness
// probe failed.
func TestSilentEmbeddedSentinelDegradesTheReplication(t *testing.T) {
	masterIP := replicationPodIP(0)
	group := builder.EmbeddedMasterGroupName
	sentinel := &fakeNode{down: errors.New("i/o timeout"), masters: map[string]string{group: masterIP + ":6379"}}
	f := newSentinelWatchedFixture(t, sentinel, redisPod(masterRole(100), 100, ""), redisPod(replicaRole(masterIP, "connected", 100), 100, "0"))
	f.s.cr.Status.MasterNode = "rr-0"
	f.r.served.Store(f.s.cr.UID, struct{}{})
	f.observeBefore(t)
	sentinelPod := builder.EmbeddedSentinelStatefulSetName("rr") + "-0"

	if _, err := f.r.observeSentinels(context.Background(), f.s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.s.silentSentinels, []string{sentinelPod}) {
		t.Fatalf("silent sentinels %v, want [%s]", f.s.silentSentinels, sentinelPod)
	}
	if _, watched := f.s.watched[sentinelPod]; !watched {
		t.Errorf("the liveness watcher is not told of sentinel pod %s: %v", sentinelPod, f.s.watched)
	}
	f.r.degradeWhileSilent(context.Background(), f.s)
	degraded := meta.FindStatusCondition(f.s.cr.Status.Conditions, v1beta2.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || !strings.Contains(degraded.Message, sentinelPod) {
		t.Fatalf("Degraded = %+v, want True naming %s", degraded, sentinelPod)
	}

	sentinel.down = nil // it answers again
	f.s.silentSentinels = nil
	if _, err := f.r.observeSentinels(context.Background(), f.s); err != nil {
		t.Fatal(err)
	}
	if len(f.s.silentSentinels) != 0 || f.s.monitored != masterIP {
		t.Errorf("after it answers: silent %v, monitored %q, want none and %s", f.s.silentSentinels, f.s.monitored, masterIP)
	}
}
