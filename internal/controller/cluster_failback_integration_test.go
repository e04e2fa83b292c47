//go:build integration

package controller

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLeaderBackAtANewIPFailsBackOnceEveryMasterKnowsIt: a leader pod killed and started again
// from its volume at a new IP takes its shard back from the follower Redis promoted. The
// operator asks the fail-back only once every master knows the leader there, and never again
// within Redis's election retry window (4 × the pods' 2 s node timeout): every CLUSTER FAILOVER
// asked of the leader is that far from the one before. Then every slot is served, leader pods
// are the masters and the keys read back.
func TestLeaderBackAtANewIPFailsBackOnceEveryMasterKnowsIt(t *testing.T) {
	t.Parallel()
	op := startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(200)

	before := f.topology("shards-leader-1")
	leader, _ := before.NodeByAddr(f.kubelet.pod("shards-leader-1").addr(f.port))
	replicas := before.ReplicasOf(leader.ID)
	if len(replicas) != 1 {
		t.Fatalf("leader-1 has %d replicas, want 1", len(replicas))
	}
	crashed := f.kubelet.deletePod(f.ctx, f.ns, "shards-leader-1", syscall.SIGKILL)
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
	back := f.kubelet.pod("shards-leader-1")
	if back.ip == crashed.ip {
		t.Fatalf("the leader must come back at a new IP, got %s again", back.ip)
	}
	waitUntil(t, 90*time.Second, "leader-1 master again at "+back.ip, func() error {
		me, ok := f.topology("shards-leader-1").Myself()
		if !ok || !me.IsMaster() || me.SlotCount() == 0 {
			return fmt.Errorf("it is %s with %d slots", me.Flags, me.SlotCount())
		}
		return nil
	})
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1)
	f.readKeys(200)

	asks := op.failoversAsked(back.addr(f.port))
	if len(asks) == 0 {
		t.Fatal("no CLUSTER FAILOVER was asked of the leader, yet it took its shard back")
	}
	window := electionRetry(2 * time.Second)
	for i := 1; i < len(asks); i++ {
		if gap := asks[i].Sub(asks[i-1]); gap < window {
			t.Errorf("CLUSTER FAILOVER asked of leader-1 again after %s, within Redis's retry window of %s (asks at %v)", gap, window, asks)
		}
	}
	t.Logf("CLUSTER FAILOVER asked of the returning leader %d time(s)", len(asks))
}

// failoversAsked returns when the operator sent CLUSTER FAILOVER to the node at addr.
func (op *operator) failoversAsked(addr string) []time.Time {
	op.askMu.Lock()
	defer op.askMu.Unlock()
	return slices.Clone(op.failoverAsks[addr])
}
