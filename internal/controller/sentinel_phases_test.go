package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// The monitored replication of the sentinel tests: its master and its replica's pods.
const (
	sentinelTestMaster  = "10.0.1.1"
	sentinelTestReplica = "10.0.1.2"
)

// sentinelFixture is a RedisSentinelReconciler whose three sentinels are fake nodes, and the
// scope of a reconcile that found them Ready and the replication's master at
// sentinelTestMaster: what the health phase sees.
type sentinelFixture struct {
	r         *RedisSentinelReconciler
	s         *sentinelScope
	sentinels []*fakeNode
	kube      client.Client
	recorder  *events.FakeRecorder
}

// statefulSetPod is a pod the StatefulSet named controls, as podsOf lists them.
func statefulSetPod(statefulSet string, ordinal int, ip string) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", statefulSet, ordinal)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
			Labels:          map[string]string{builder.LabelApp: statefulSet},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: statefulSet, UID: "sts", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning},
	}
}

// newSentinelFixture builds sentinels that monitor replicationName, or nothing when it is "".
// Each sentinel monitors the master and answers CKQUORUM until the test says otherwise.
func newSentinelFixture(t *testing.T, replicationName string) sentinelFixture {
	t.Helper()
	cr := &v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Name: "watch", Namespace: "ns", UID: types.UID("sentinel-uid"), Generation: 1}}
	if replicationName != "" {
		cr.Spec.RedisSentinelConfig = &v1beta2.RedisSentinelConfig{RedisReplicationName: replicationName}
	}
	var objects []client.Object
	if replicationName != "" {
		objects = append(objects, statefulSetPod(replicationName, 0, sentinelTestMaster), statefulSetPod(replicationName, 1, sentinelTestReplica))
	}
	nodes := fakeRedis{}
	var sentinelPods []corev1.Pod
	var sentinels []*fakeNode
	for i := range 3 {
		pod := statefulSetPod(builder.SentinelStatefulSetName(cr.Name), i, fmt.Sprintf("10.0.2.%d", i+1))
		objects = append(objects, pod)
		sentinelPods = append(sentinelPods, *pod)
		node := &fakeNode{masters: map[string]string{builder.DefaultMasterGroupName: sentinelTestMaster + ":6379"}}
		nodes[fmt.Sprintf("%s:%d", pod.Status.PodIP, builder.DefaultSentinelPort)] = node
		sentinels = append(sentinels, node)
	}
	kube := fake.NewClientBuilder().WithObjects(objects...).Build()
	recorder := events.NewFakeRecorder(10)
	r := &RedisSentinelReconciler{Dependencies: Dependencies{Client: kube, Recorder: recorder, RedisNodes: nodes, Memory: NewMemory()}}
	s := &sentinelScope{workloadScope: workloadScope{memory: r.Memory,
		spec: workloadSpec{owner: cr, kind: "RedisSentinel", port: builder.DefaultSentinelPort}},
		cr: cr, masterHost: sentinelTestMaster, pods: sentinelPods}
	s.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
	return sentinelFixture{r: r, s: s, sentinels: sentinels, kube: kube, recorder: recorder}
}

// sentTo lists the commands every sentinel received, prefixed with its index.
func (f sentinelFixture) sentTo() []string {
	var out []string
	for i, n := range f.sentinels {
		for _, c := range n.sent {
			out = append(out, fmt.Sprintf("%d: %s", i, c))
		}
	}
	return out
}

// trueCondition is the condition of type typ when it is True, nil otherwise.
func trueCondition(cr *v1beta2.RedisSentinel, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(cr.Status.Conditions, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// Sentinels that all monitor the replication's master and can authorize a failover are
// Ready: each is asked where the master is, only the first is asked for the quorum, and one
// event says they are ready.
func TestSentinelHealthReadyWhenAllMonitorTheMasterWithQuorum(t *testing.T) {
	f := newSentinelFixture(t, "rr")
	if stop, err := f.r.checkHealth(context.Background(), f.s); stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	if trueCondition(f.s.cr, v1beta2.ConditionReady) == nil {
		t.Fatalf("conditions %+v, want Ready", f.s.cr.Status.Conditions)
	}
	group := builder.DefaultMasterGroupName
	want := []string{"0: sentinel get-master-addr-by-name " + group, "0: sentinel ckquorum " + group,
		"1: sentinel get-master-addr-by-name " + group, "2: sentinel get-master-addr-by-name " + group}
	slices.Sort(want)
	if got := f.sentTo(); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("sentinels received %q, want %q", got, want)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Normal SentinelsReady") {
		t.Errorf("events %q, want one SentinelsReady", got)
	}
	if f.s.Result.RequeueAfter != healthCheckInterval {
		t.Errorf("requeue after %s, want the periodic health check", f.s.Result.RequeueAfter)
	}
}

// A sentinel that still monitors the old master, a pod of the replication that runs, is
// waited for (a failover completes) and no quorum is asked; one that monitors an address
// where nothing runs and knows no live replica is blind, and the message says its pod starts
// again from the seed.
func TestSentinelHealthWaitsForASentinelThatMonitorsAnotherHost(t *testing.T) {
	ctx := context.Background()
	group := builder.DefaultMasterGroupName

	f := newSentinelFixture(t, "rr")
	f.sentinels[2].masters[group] = sentinelTestReplica + ":6379"
	if stop, err := f.r.checkHealth(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing := trueCondition(f.s.cr, v1beta2.ConditionProgressing)
	wantMessage := fmt.Sprintf("sentinel watch-sentinel-2 monitors %q, the master is at %s", sentinelTestReplica, sentinelTestMaster)
	if progressing == nil || progressing.Reason != status.ReasonConverging || progressing.Message != wantMessage {
		t.Errorf("Progressing %+v, want %s: %s", progressing, status.ReasonConverging, wantMessage)
	}
	if slices.ContainsFunc(f.sentTo(), func(c string) bool { return strings.Contains(c, "ckquorum") }) {
		t.Errorf("quorum asked while the sentinels disagree: %q", f.sentTo())
	}
	if !slices.Contains(f.sentinels[2].sent, "sentinel replicas "+group) {
		t.Errorf("the disagreeing sentinel was not asked which replicas it knows: %q", f.sentinels[2].sent)
	}

	f = newSentinelFixture(t, "rr")
	f.sentinels[2].masters[group] = "10.0.9.9:6379"
	f.sentinels[2].replicas = map[string][]map[string]string{group: {{"ip": "10.0.9.8"}}}
	if stop, err := f.r.checkHealth(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing = trueCondition(f.s.cr, v1beta2.ConditionProgressing)
	if progressing == nil || !strings.Contains(progressing.Message, "it cannot learn the master: its pod starts again from the seed once") {
		t.Errorf("Progressing %+v, want the blind sentinel's grace in the message", progressing)
	}
	var pod corev1.Pod
	if err := f.kube.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "watch-sentinel-2"}, &pod); err != nil {
		t.Fatalf("the blind sentinel's pod went within its grace: %v", err)
	}

	// Past its grace, the blind sentinel's pod alone goes, said in an event.
	f.s.memory.waits.Stopped(f.s.cr.UID, reseedKey("watch-sentinel-2"))
	f.s.memory.waits.Started(f.s.cr.UID, reseedKey("watch-sentinel-2"), time.Now().Add(-sentinelReseedGrace-time.Second))
	if stop, err := f.r.checkHealth(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	if err := f.kube.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "watch-sentinel-2"}, &pod); !apierrors.IsNotFound(err) {
		t.Errorf("the blind sentinel's pod is still there past its grace: %v", err)
	}
	if err := f.kube.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "watch-sentinel-1"}, &pod); err != nil {
		t.Errorf("a sentinel that sees the master lost its pod: %v", err)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+ReasonSentinelReseeded) {
		t.Errorf("events %q, want one %s", got, ReasonSentinelReseeded)
	}
}

// Sentinels that agree but cannot authorize a failover yet (an error reply to CKQUORUM) are
// waited for; a quorum question that does not reach the sentinel fails the phase.
func TestSentinelHealthWaitsForQuorum(t *testing.T) {
	ctx := context.Background()
	f := newSentinelFixture(t, "rr")
	f.sentinels[0].quorum = fakeServerError("NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum")
	if stop, err := f.r.checkHealth(ctx, f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing := trueCondition(f.s.cr, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Reason != status.ReasonConverging || !strings.Contains(progressing.Message, "cannot authorize a failover yet: NOQUORUM") {
		t.Errorf("Progressing %+v, want %s with the sentinel's answer", progressing, status.ReasonConverging)
	}
	if f.s.Result.RequeueAfter != whileBroken {
		t.Errorf("requeue after %s, want %s", f.s.Result.RequeueAfter, whileBroken)
	}

	f = newSentinelFixture(t, "rr")
	lost := errors.New("read: connection reset by peer")
	f.sentinels[0].quorum = lost
	if _, err := f.r.checkHealth(ctx, f.s); !errors.Is(err, lost) {
		t.Errorf("phase error %v, want the broken connection", err)
	}
}

// A sentinel that does not answer leaves the sentinels not Ready, naming it; sentinels that
// never served are on their way (Progressing), not Degraded.
func TestSentinelHealthOfASentinelThatDoesNotAnswer(t *testing.T) {
	f := newSentinelFixture(t, "rr")
	f.sentinels[1].down = errors.New("i/o timeout")
	if stop, err := f.r.checkHealth(context.Background(), f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing := trueCondition(f.s.cr, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Reason != status.ReasonRedisUnreachable ||
		progressing.Message != "sentinel pod watch-sentinel-1 does not answer: i/o timeout" {
		t.Errorf("Progressing %+v, want %s naming the pod", progressing, status.ReasonRedisUnreachable)
	}
	if len(f.sentinels[2].sent) != 0 {
		t.Errorf("the sentinel after the silent one was asked %q", f.sentinels[2].sent)
	}
}

// Sentinels told to monitor nothing are PINGed, and once they all answer they are Idle with
// what to set, said in one event however many reconciles follow.
func TestSentinelHealthOfSentinelsThatMonitorNothing(t *testing.T) {
	ctx := context.Background()
	f := newSentinelFixture(t, "")
	for range 2 {
		if stop, err := f.r.checkHealth(ctx, f.s); stop || err != nil {
			t.Fatalf("stop=%v err=%v", stop, err)
		}
	}
	ready := meta.FindStatusCondition(f.s.cr.Status.Conditions, v1beta2.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonNoMasterToMonitor ||
		!strings.Contains(ready.Message, "set spec.redisSentinelConfig.redisReplicationName") {
		t.Errorf("Ready %+v, want False %s saying what to set", ready, ReasonNoMasterToMonitor)
	}
	if trueCondition(f.s.cr, v1beta2.ConditionProgressing) != nil || trueCondition(f.s.cr, v1beta2.ConditionDegraded) != nil {
		t.Errorf("conditions %+v: idle sentinels are neither progressing nor degraded", f.s.cr.Status.Conditions)
	}
	if want := []string{"0: ping", "0: ping", "1: ping", "1: ping", "2: ping", "2: ping"}; !slices.Equal(f.sentTo(), want) {
		t.Errorf("sentinels received %q, want %q", f.sentTo(), want)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+ReasonNoMasterToMonitor) {
		t.Errorf("events %q, want one %s", got, ReasonNoMasterToMonitor)
	}
}

// What a sentinel says of a group becomes the view the stuck-failover rule decides on: the
// replicas are read only of a master held objectively down and not failing over, and a replica
// the sentinel holds down, cannot reach or may not promote (priority 0) is not usable.
func TestFailoverViewOfReadsTheSentinelsState(t *testing.T) {
	const group = "mymaster"
	replicas := []map[string]string{
		{"ip": "10.0.1.2", "flags": "slave", "master-link-down-time": "65000", "slave-priority": "100"},
		{"ip": "10.0.1.3", "flags": "slave,s_down", "master-link-down-time": "0", "slave-priority": "100"},
		{"ip": "10.0.1.4", "flags": "slave,disconnected", "slave-priority": "100"},
		{"ip": "10.0.1.5", "flags": "slave", "master-link-down-time": "x", "slave-priority": "0"},
	}
	cases := []struct {
		name         string
		flags        string
		wantDown     bool
		wantFailing  bool
		wantReplicas []replicationplan.SentinelReplicaView
		wantAsked    []string
	}{
		{name: "master up", flags: "master", wantAsked: []string{"sentinel master " + group}},
		{name: "held objectively down", flags: "master,s_down,o_down", wantDown: true,
			wantReplicas: []replicationplan.SentinelReplicaView{
				{Host: "10.0.1.2", Usable: true, LinkDownFor: 65 * time.Second},
				{Host: "10.0.1.3"}, {Host: "10.0.1.4"}, {Host: "10.0.1.5"},
			},
			wantAsked: []string{"sentinel master " + group, "sentinel replicas " + group}},
		{name: "failing over already", flags: "master,o_down,failover_in_progress", wantDown: true, wantFailing: true,
			wantAsked: []string{"sentinel master " + group}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &fakeNode{
				masterState: map[string]map[string]string{group: {"flags": tc.flags, "s-down-time": "1500", "down-after-milliseconds": "5000"}},
				replicas:    map[string][]map[string]string{group: replicas}}
			view, err := failoverViewOf(context.Background(), &fakeConn{node: node}, "s-0", group)
			if err != nil {
				t.Fatal(err)
			}
			if view.Pod != "s-0" || view.ObjectivelyDown != tc.wantDown || view.FailingOver != tc.wantFailing ||
				view.DownFor != 1500*time.Millisecond || view.DownAfter != 5*time.Second {
				t.Errorf("view %+v", view)
			}
			if !slices.Equal(view.Replicas, tc.wantReplicas) {
				t.Errorf("replicas %+v, want %+v", view.Replicas, tc.wantReplicas)
			}
			if !slices.Equal(node.sent, tc.wantAsked) {
				t.Errorf("sentinel asked %q, want %q", node.sent, tc.wantAsked)
			}
		})
	}

	// A sentinel that does not monitor the group answers with an error, which is the view's.
	_, err := failoverViewOf(context.Background(), &fakeConn{node: &fakeNode{}}, "s-0", group)
	if !errors.Is(err, errNoSuchMaster) {
		t.Errorf("error %v, want the sentinel's", err)
	}
}

// A disagreement that outlasts StuckAfter turns the sentinels Degraded Stuck, saying since
// when, with one Warning however many reconciles find it; once they agree and are Ready the
// wait's clock starts afresh.
func TestSentinelHealthDisagreementPastItsBoundIsStuck(t *testing.T) {
	ctx := context.Background()
	f := newSentinelFixture(t, "rr")
	f.r.StuckAfter = time.Millisecond
	f.sentinels[2].masters[builder.DefaultMasterGroupName] = sentinelTestReplica + ":6379"
	if stop, _ := f.r.checkHealth(ctx, f.s); !stop {
		t.Fatal("a disagreement must stop the reconcile")
	}
	if trueCondition(f.s.cr, v1beta2.ConditionDegraded) != nil {
		t.Fatal("Degraded within the bound")
	}
	time.Sleep(2 * time.Millisecond)
	for range 3 {
		if stop, _ := f.r.checkHealth(ctx, f.s); !stop {
			t.Fatal("a disagreement must stop the reconcile")
		}
	}
	degraded := trueCondition(f.s.cr, v1beta2.ConditionDegraded)
	if degraded == nil || degraded.Reason != ReasonStuck || !strings.Contains(degraded.Message, "monitors \""+sentinelTestReplica+"\"") ||
		!strings.Contains(degraded.Message, "; unchanged since ") {
		t.Errorf("Degraded %+v, want %s with what and since when", degraded, ReasonStuck)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+ReasonStuck+" waited 1ms: sentinel watch-sentinel-2") {
		t.Errorf("events %q, want one Stuck warning", got)
	}

	f.sentinels[2].masters[builder.DefaultMasterGroupName] = sentinelTestMaster + ":6379"
	if stop, err := f.r.checkHealth(ctx, f.s); stop || err != nil {
		t.Fatalf("agreeing: stop=%v err=%v", stop, err)
	}
	f.sentinels[2].masters[builder.DefaultMasterGroupName] = sentinelTestReplica + ":6379"
	f.r.StuckAfter = time.Hour
	if _, err := f.r.checkHealth(ctx, f.s); err != nil {
		t.Fatal(err)
	}
	// Degraded now (they served), but Converging: the new wait's clock started afresh.
	if degraded := trueCondition(f.s.cr, v1beta2.ConditionDegraded); degraded == nil || degraded.Reason != status.ReasonConverging {
		t.Errorf("a new disagreement after Ready: Degraded %+v, want %s", degraded, status.ReasonConverging)
	}
}
