//go:build chaos

package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/writecheck"
)

// outageSeenWithin is how soon after a fault that stops a pod answering the status must
// leave Ready: the operator's liveness reads see it in seconds, whatever Kubernetes says.
const outageSeenWithin = 10 * time.Second

// faultCase is one row of the fault matrix: a fault done to a loaded 3×(1+1) cluster, how long
// it lasts, and what each shard's acknowledged writes may suffer meanwhile.
type faultCase struct {
	name string
	// inject does the fault and returns the pods it hits and how to undo it (nil: nothing to
	// undo). A hit pod hits its shard: its own if a master, its master's if a replica.
	inject func(t *testing.T, c *cluster) (hit []corev1.Pod, undo func())
	// hold is how long the fault lasts before undo.
	hold time.Duration
	// hitPause bounds the longest pause of the shards the fault hits, otherPause the others'.
	hitPause, otherPause time.Duration
	// outage: the fault stops pods answering, so the status must leave Ready within
	// outageSeenWithin and stay off it until undone.
	outage bool
	// acked: the writes count once a replica confirmed them (WAIT 1). A fault that cuts a
	// master off needs it: Redis acknowledges writes on the cut side that the promoted replica
	// never got. Without it the pauses measure what clients see.
	acked bool
}

func cutPod(name string) func(t *testing.T, c *cluster) ([]corev1.Pod, func()) {
	return func(t *testing.T, c *cluster) ([]corev1.Pod, func()) {
		t.Helper()
		victim := *c.pod(c.name + name)
		if err := sb.Fault.Cut(c.ctx, c.ns, victim.Name); err != nil {
			t.Fatal(err)
		}
		return []corev1.Pod{victim}, func() {
			if err := sb.Fault.Heal(context.Background(), c.ns, victim.Name); err != nil {
				t.Errorf("heal %s: %v", victim.Name, err)
			}
		}
	}
}

// stopNodeOfLeader stops the virtual node (its kubelet and every pod on it) of a leader that
// does not share it with the operator: the operator's own node going is another fault (one
// replica, replaced only once the node is evicted).
func stopNodeOfLeader(t *testing.T, c *cluster) ([]corev1.Pod, func()) {
	t.Helper()
	var operators corev1.PodList
	if err := sb.Client.List(c.ctx, &operators, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "redis-operator"}); err != nil || len(operators.Items) == 0 {
		t.Fatalf("the operator's pod: %v (%d pods)", err, len(operators.Items))
	}
	node := ""
	for i := range 3 {
		if n := c.pod(fmt.Sprintf("%s-leader-%d", c.name, i)).Spec.NodeName; n != operators.Items[0].Spec.NodeName {
			node = n
			break
		}
	}
	if node == "" {
		t.Fatal("every leader runs on the operator's node")
	}
	var hit []corev1.Pod
	for _, p := range c.pods(c.ctx) {
		if p.Spec.NodeName == node {
			hit = append(hit, p)
		}
	}
	if err := sb.Fault.StopNode(c.ctx, node); err != nil {
		t.Fatal(err)
	}
	return hit, func() {
		if err := sb.Fault.StartNode(context.Background(), node); err != nil {
			t.Errorf("start node %s: %v", node, err)
		}
	}
}

func rollingUpdate(t *testing.T, c *cluster) ([]corev1.Pod, func()) {
	t.Helper()
	cr := c.get()
	cr.Spec.EnvVars = &[]corev1.EnvVar{{Name: "ROLLOUT", Value: "matrix"}}
	if err := sb.Client.Update(c.ctx, cr); err != nil {
		t.Fatal(err)
	}
	c.waitRolledOut(6)
	return nil, nil
}

// TestFaultMatrix runs the faults a production cluster meets, one fresh cluster each, under
// writers on every shard whose writes count only once a replica confirmed them (WAIT 1):
// every acknowledged write reads back, each shard's longest pause is within its row's bound,
// the status is true at every sample (never Ready while pods do not answer, never Failed for
// a fault that heals by itself), and deleting the cluster leaves nothing behind.
func TestFaultMatrix(t *testing.T) {
	for _, fc := range []faultCase{
		// Plain writes: with one replica per shard, a WAIT 1 write waits while that replica's
		// pod is replaced, which says nothing of the hand-over.
		{name: "rolling update", inject: rollingUpdate, hitPause: handOverPause, otherPause: handOverPause},
		// The cut leader's replica takes over after the node timeout; it has no replica of its
		// own to confirm writes until the old leader is back and resynced.
		{name: "leader cut 40s", inject: cutPod("-leader-1"), hold: 40 * time.Second, hitPause: 90 * time.Second,
			otherPause: handOverPause, outage: true, acked: true},
		// A master whose replica is cut cannot have writes confirmed until it is back.
		{name: "follower cut 40s", inject: cutPod("-follower-1"), hold: 40 * time.Second, hitPause: 90 * time.Second,
			otherPause: handOverPause, outage: true, acked: true},
		{name: "node stopped 80s", inject: stopNodeOfLeader, hold: 80 * time.Second, hitPause: 150 * time.Second,
			otherPause: handOverPause, outage: true, acked: true},
	} {
		t.Run(strings.ReplaceAll(fc.name, " ", "_"), func(t *testing.T) { runFault(t, fc) })
	}
}

func runFault(t *testing.T, fc faultCase) {
	t.Helper()
	start := faultTime()
	c := newCluster(t, strings.Replace(persistentCluster, "name: durable", "name: matrix", 1))
	c.waitReady(start)
	c.writeKeys("k", 500)
	startWriting := c.startWriting
	if fc.acked {
		startWriting = c.startWritingAcknowledged
	}
	checker := startWriting("m")
	statuses := c.recordStatus()

	masterOf := c.mastersOfPods()
	injected := faultTime()
	hit, undo := fc.inject(t, c)
	time.Sleep(fc.hold)
	undone := time.Now()
	if undo != nil {
		undo()
	}
	c.waitReady(undone)
	c.assertShape()
	seen := statuses()
	report := checker.StopAndRequire(c.ctx, t, c.client(), fc.name)
	c.readKeys("k", 500)

	for _, s := range report.Shards {
		bound := fc.otherPause
		for _, p := range hit {
			if strings.Contains(s.Name, "of "+masterOf[p.Name]+":") {
				bound = fc.hitPause
			}
		}
		t.Logf("%s: %s longest pause %s (bound %s), %d acknowledged", fc.name, s.Name, s.LongestPause.Round(time.Millisecond), bound, s.Acknowledged)
		if s.LongestPause > bound {
			t.Errorf("%s: %s paused %s, over its bound %s", fc.name, s.Name, s.LongestPause.Round(time.Millisecond), bound)
		}
	}
	checkFaultStatus(t, fc, seen, injected, undone)
	if t.Failed() {
		// The pods' logs and views say what Redis did; deleting the cluster would take them.
		for _, p := range c.pods(c.ctx) {
			nodes, err := c.redis(&p).ClusterNodes(c.ctx).Result()
			t.Logf("CLUSTER NODES on %s (%v):\n%s", p.Name, err, nodes)
		}
		t.Log(sb.Dump(c.ns))
	}
	deleteAndRequireNothingLeft(t, c)
}

// mastersOfPods maps each pod to the IP of the master of its shard, as the writers' report
// names shards: its own for a master, the one it replicates for a replica.
func (c *cluster) mastersOfPods() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, p := range c.pods(c.ctx) {
		info, err := c.replicationOf(c.ctx, &p)
		if err != nil {
			c.t.Fatal(err)
		}
		out[p.Name] = p.Status.PodIP
		if info["role"] == "slave" {
			out[p.Name] = info["master_host"]
		}
	}
	return out
}

// checkFaultStatus holds the status samples to the truth: state Ready exactly with Ready=True,
// never Failed, and for an outage not Ready from outageSeenWithin after the fault to its end.
func checkFaultStatus(t *testing.T, fc faultCase, seen []clusterStatus, injected, undone time.Time) {
	t.Helper()
	degraded := false
	for i, st := range seen {
		t.Logf("%s status: %s", fc.name, st)
		if (st.state == "Ready") != (st.ready == metav1.ConditionTrue) {
			t.Errorf("%s: state %q with Ready=%s", fc.name, st.state, st.ready)
		}
		if st.state == "Failed" {
			t.Errorf("%s: a fault that heals by itself showed Failed: %s", fc.name, st)
		}
		if st.degraded == metav1.ConditionTrue {
			degraded = true
		}
		if !fc.outage || st.ready != metav1.ConditionTrue {
			continue
		}
		// This sample holds from st.at until the next one.
		until := undone
		if i+1 < len(seen) {
			until = seen[i+1].at
		}
		if from := injected.Add(outageSeenWithin); st.at.Before(undone) && until.After(from) {
			t.Errorf("%s: Ready during the outage (from %s to %s): %s", fc.name,
				st.at.Format("15:04:05.0"), until.Format("15:04:05.0"), st)
		}
	}
	if fc.outage && !degraded {
		t.Errorf("%s: the outage never showed Degraded", fc.name)
	}
	if !fc.outage && degraded {
		t.Errorf("%s: no pod stopped answering, yet the status said Degraded", fc.name)
	}
}

// deleteAndRequireNothingLeft deletes the cluster and waits until its namespace holds no pod,
// StatefulSet or claim.
func deleteAndRequireNothingLeft(t *testing.T, c *cluster) {
	t.Helper()
	if err := sb.Client.Delete(c.ctx, c.get()); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, c.ns, "nothing left of the deleted cluster", 2*time.Minute, leftoversIn(c.ns))
}

// startWritingAcknowledged starts per-shard writers whose writes count once a replica
// confirmed them (WAIT 1): what a fault may lose is only what Redis never promised.
func (c *cluster) startWritingAcknowledged(prefix string) *writecheck.Checker {
	c.t.Helper()
	opts := c.clientOptions()
	opts.DialerRetries, opts.MaxRedirects = 1, 3
	opts.ReadTimeout = 3 * time.Second
	checker, err := writecheck.Start(c.ctx, c.clientWith(opts), writecheck.Options{Prefix: prefix, Writers: 2, PerShard: true,
		WaitReplicas: 1, WaitTimeout: time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(checker.Stop)
	return checker
}
