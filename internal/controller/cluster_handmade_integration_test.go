//go:build integration

package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// TestHandMadeFailoverIsKeptAndAFailureIsFailedBack: a CLUSTER FAILOVER sent by hand to the
// replica of a healthy master leaves that replica master through many reconciles and an
// operator restart, with its pod labelled master, the annotation that records it, the Ready
// reason and the event that tell it. A master frozen (a hung process or a partition: it keeps
// its run_id) and failed over by Redis takes its shard back once it answers again.
func TestHandMadeFailoverIsKeptAndAFailureIsFailedBack(t *testing.T) {
	t.Parallel()
	op := startOperator(t, testNamespace(t))
	started := time.Now()
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(100)
	// An operator tells a hand-made failover only once one it may itself have asked before it
	// started would be over; then it needs one sighting before the failover.
	time.Sleep(time.Until(started.Add(askedSlack + time.Second)))
	f.poke()
	time.Sleep(time.Second)

	leader1 := f.name + "-leader-1"
	replica := f.replicaPodOf(leader1)
	if err := f.nodeClient(replica).Do(f.ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	f.waitServingMaster(replica, 30*time.Second)
	for i := 0; i < 8; i++ { // reconciles, each of which would have failed the shard back before
		f.poke()
		time.Sleep(500 * time.Millisecond)
	}
	f.assertKept(replica, leader1)
	f.assertEvents(ReasonHandMadeFailoverKept)
	if asks := op.failoversAsked(f.kubelet.pod(leader1).addr(f.port)); len(asks) > 0 {
		t.Fatalf("the operator asked %s to take its shard back %d time(s) after a hand-made failover", leader1, len(asks))
	}

	// A new operator finds the record the first one wrote and keeps the master too.
	op.stop()
	op2 := startOperator(t, f.ns)
	for i := 0; i < 8; i++ {
		f.poke()
		time.Sleep(500 * time.Millisecond)
	}
	f.assertKept(replica, leader1)
	if asks := op2.failoversAsked(f.kubelet.pod(leader1).addr(f.port)); len(asks) > 0 {
		t.Fatalf("the restarted operator asked %s to take its shard back %d time(s)", leader1, len(asks))
	}

	// leader-0 frozen: Redis fails its shard over; thawed, it is a replica and takes it back.
	leader0 := f.name + "-leader-0"
	replica0 := f.replicaPodOf(leader0)
	thaw := f.kubelet.pod(leader0).freeze(t)
	f.waitServingMaster(replica0, time.Minute)
	thaw()
	f.waitServingMaster(leader0, 90*time.Second)
	if got := f.get().Annotations[builder.AnnotationHandMadeMasters]; got != replica {
		t.Fatalf("after a failure-caused failover the hand-made masters are %q, want only %s", got, replica)
	}
	f.readKeys(100)
}

// poke makes the operator reconcile the cluster, with an annotation it does not read.
func (f *clusterFixture) poke() {
	f.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"test/poke": strconv.FormatInt(time.Now().UnixNano(), 10)}}})
	if err := f.c.Patch(f.ctx, &v1beta2.RedisCluster{ObjectMeta: f.get().ObjectMeta}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.t.Fatal(err)
	}
}

// replicaPodOf is the pod that replicates the master pod.
func (f *clusterFixture) replicaPodOf(master string) string {
	f.t.Helper()
	topo := f.topology(master)
	me, _ := topo.Myself()
	for _, r := range topo.ReplicasOf(me.ID) {
		for _, pod := range f.podNames() {
			if f.kubelet.pod(pod).addr(f.port) == r.Addr.HostPort() {
				return pod
			}
		}
	}
	f.t.Fatalf("%s has no replica among the pods", master)
	return ""
}

func (f *clusterFixture) waitServingMaster(pod string, timeout time.Duration) {
	f.t.Helper()
	waitUntil(f.t, timeout, pod+" a master serving slots", func() error {
		topo, err := f.tryTopology(pod)
		if err != nil {
			return err
		}
		if me, _ := topo.Myself(); !me.IsMaster() || me.SlotCount() == 0 {
			return fmt.Errorf("it is %s with %d slots", me.Flags, me.SlotCount())
		}
		return nil
	})
}

// assertKept: master serves its shard, leader follows it, the pods' labels say so, and the
// resource records and tells the hand-made master.
func (f *clusterFixture) assertKept(master, leader string) {
	f.t.Helper()
	f.waitServingMaster(master, time.Second)
	waitUntil(f.t, 20*time.Second, master+" kept as a hand-made master", func() error {
		cr := f.get()
		if got := cr.Annotations[builder.AnnotationHandMadeMasters]; got != master {
			return fmt.Errorf("annotation %s = %q", builder.AnnotationHandMadeMasters, got)
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		if ready == nil || ready.Status != "True" || ready.Reason != ReasonHandMadeFailoverKept {
			return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
		}
		for pod, want := range map[string]string{master: builder.RedisRoleMaster, leader: builder.RedisRoleSlave} {
			var p corev1.Pod
			if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: pod}, &p); err != nil {
				return err
			}
			if got := p.Labels[builder.LabelRedisRole]; got != want {
				return fmt.Errorf("pod %s has %s=%q, want %q", pod, builder.LabelRedisRole, got, want)
			}
		}
		return nil
	})
	if me, _ := f.topology(leader).Myself(); !me.IsReplica() {
		f.t.Fatalf("%s is %s, want the replica of %s", leader, me.Flags, master)
	}
}
