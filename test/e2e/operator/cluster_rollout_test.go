package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A change of the pod template is rolled by the operator: followers first, then each leader
// once its follower has taken the shard over with CLUSTER FAILOVER, the new leader pod taking
// it back. A client writing the whole time loses no acknowledged write, and Redis never has
// to fail a master over by itself.
// waitRolledOut waits until the cluster's pods, want of them, run their StatefulSet's update
// revision.
func (c *cluster) waitRolledOut(want int) {
	c.t.Helper()
	sb.WaitFor(c.t, c.ns, "every pod on the new revision", 6*time.Minute, func(ctx context.Context) (bool, string, error) {
		updated, total := 0, 0
		for _, role := range []string{"leader", "follower"} {
			var sts appsv1.StatefulSet
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name + "-" + role}, &sts); err != nil {
				return false, "", err
			}
			for _, p := range c.pods(ctx) {
				if strings.HasPrefix(p.Name, sts.Name+"-") {
					total++
					if p.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision {
						updated++
					}
				}
			}
		}
		return updated == want && total == want, fmt.Sprintf("%d of %d pods updated", updated, total), nil
	})
}

// rollingUpdateShardPause bounds the longest pause of any one shard's writes during a rolling
// update of a loaded cluster. A hand-over pauses a shard for a manual failover: 75 to 140 ms
// measured here alone, since a handed-over master keeps answering MOVED for 5 s before its pod
// goes (before that, 2 to 7.5 s whenever the writers' slot maps still named a pod already
// gone). Inside the full suite a fail-back once ran into Redis's 5 s manual-failover timeout
// (5.09 s, README known limits), which this bound still lets through: the gap to a manual
// failover's pause in every run is that election, not yet closed.
const rollingUpdateShardPause = 5500 * time.Millisecond

func TestClusterRollingUpdateLosesNoWrite(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, sample(t, "redis_v1beta2_rediscluster_minimal.yaml"))
	c.waitReady(start)
	c.writeKeys("r", 500)

	checker := c.startWriting("roll")

	since := faultTime()
	cr := c.get()
	cr.Spec.EnvVars = &[]corev1.EnvVar{{Name: "ROLLOUT", Value: "1"}}
	if err := sb.Client.Update(c.ctx, cr); err != nil {
		t.Fatal(err)
	}
	c.waitRolledOut(6)
	c.waitReady(since)
	c.assertShape()

	// No shard may wait out the election retry window (a minute) that a failover asked too
	// early used to cost.
	c.requireWrites(checker, "during the rolling update", rollingUpdateShardPause)
	c.readKeys("r", 500)

	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	perReason := map[string]int{}
	for _, e := range events.Items {
		perReason[e.Reason]++
	}
	if perReason["RollingUpdate"] < 6 || perReason["ClusterFailover"] < 3 {
		t.Errorf("want 6 pods replaced and 3 hand-overs (plus fail-backs), got events %v", perReason)
	}
}
