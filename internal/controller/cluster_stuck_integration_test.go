//go:build integration

package controller

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestClusterMasterStuckInAScriptIsTakenOverByItsReplica: a master running a Lua busy loop
// answers BUSY while its cluster bus answers the other nodes, so Redis never fails it over.
// Past the grace (15 s of BUSY) the operator asks its replica to take over with CLUSTER
// FAILOVER FORCE, tells it with a Warning event, and asks nothing of the stuck master; the
// keys written before read back from the new master. Restarted from its volume (as its
// liveness probe would have it), the old master comes back as a replica and takes its shard
// back, and the cluster is Ready in its designed shape.
func TestClusterMasterStuckInAScriptIsTakenOverByItsReplica(t *testing.T) {
	t.Parallel()
	op := startOperator(t, testNamespace(t), withLiveness) // as main: a pod answering BUSY brings the cluster back at once
	f := newClusterFixture(t, 3, 3)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(200)

	counted := func() float64 { return testutil.ToFloat64(failovers.With(resourceLabelValues(f.get()))) }
	before := counted()
	leader1 := f.name + "-leader-1"
	replica := f.replicaPodOf(leader1)
	stuckAddr := f.kubelet.pod(leader1).addr(f.port)
	// BUSY after 100 ms of script rather than Redis's 5 s: the grace counts from the first BUSY.
	if err := f.nodeClient(leader1).ConfigSet(f.ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	script := goredis.NewClient(&goredis.Options{Addr: stuckAddr, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { _ = script.Close() })
	go func() { _ = script.Eval(context.Background(), "while true do end", nil).Err() }()
	busySince := time.Now()

	f.waitServingMaster(replica, 90*time.Second)
	t.Logf("%s master %s after the script started", replica, time.Since(busySince).Round(time.Second))
	switch took := time.Since(busySince); {
	case took < DefaultMasterPromotionGrace:
		t.Errorf("%s took the shard over %s after the script started, before the %s grace", replica, took, DefaultMasterPromotionGrace)
	case took > DefaultMasterPromotionGrace+15*time.Second:
		t.Errorf("%s took the shard over only %s after the script started: the liveness watcher should have brought the cluster back within seconds", replica, took)
	}
	if err := f.nodeClient(leader1).Ping(f.ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
		t.Fatalf("the stuck master answers PING with %v, want BUSY: the test no longer shows a stuck master", err)
	}
	f.assertEvents(ReasonStuckMasterFailover)
	if asks := op.failoversAsked(f.kubelet.pod(replica).addr(f.port)); len(asks) != 1 {
		t.Errorf("CLUSTER FAILOVER asked of %s %d times, want once", replica, len(asks))
	}
	if got := counted() - before; got != 1 {
		t.Errorf("the failover metric counted %v failovers, want 1", got)
	}
	// Every key through the cluster once the other nodes know the new master: a client whose
	// slot map still names the stuck one is answered BUSY, not MOVED, until they do.
	waitUntil(t, 10*time.Second, "every key read through the cluster", func() error { return f.tryReadKeys(200) })
	// A few reconciles while the old master is still busy: nothing is asked of it.
	for range 6 {
		f.poke()
		time.Sleep(500 * time.Millisecond)
	}
	if asks := op.failoversAsked(stuckAddr); len(asks) > 0 {
		t.Fatalf("the operator asked the busy %s to take its shard back %d time(s)", leader1, len(asks))
	}

	// Its probe restarts it: the process is killed, and the pod runs again from its volume.
	crashed := f.kubelet.deletePod(f.ctx, f.ns, leader1, syscall.SIGKILL)
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: f.name + "-leader"}, &sts); err != nil {
		t.Fatal(err)
	}
	f.kubelet.startPod(f.ctx, &sts, 1, crashed.dataDir)
	f.waitServingMaster(leader1, 90*time.Second)
	f.waitReady(90 * time.Second)
	f.assertDesignedShape(3, 1)
	f.readKeys(200)
}
