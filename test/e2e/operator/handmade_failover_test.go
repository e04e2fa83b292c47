package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

// A CLUSTER FAILOVER sent by hand to the replica of a healthy leader sticks: through the
// reconciles of more than a health check, the replica stays the shard's master, its pod is labelled redis-role=master, the resource records it in
// redis.opstreelabs.in/hand-made-masters and says so in the Ready reason HandMadeFailoverKept
// with an event. Removing it from the annotation lets the leader pod take its shard back.
// (A leader cut off the network, or its pod deleted, is still failed back: see
// TestClusterOutageIsDegradedAndItsRecoveryIsNot and the leader pod tests. That the record
// outlives a restart of the operator is the envtest TestHandMadeFailoverIsKeptAndAFailureIsFailedBack's:
// a test run in parallel here does not stop the operator under the others.)
func TestHandMadeClusterFailoverSticks(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, strings.Replace(sample(t, "redis_v1beta2_rediscluster_minimal.yaml"), "name: redis-cluster", "name: by-hand", 1))
	c.waitReady(start)
	c.writeKeys("h", 200)
	time.Sleep(35 * time.Second) // a health check sees the designed shape first

	leader := c.name + "-leader-1"
	leaderIP := c.pod(leader).Status.PodIP
	replica := ""
	for _, p := range c.pods(c.ctx) {
		role, err := c.redis(&p).Do(c.ctx, "ROLE").Slice()
		if err == nil && role[0] == "slave" && role[1] == leaderIP {
			replica = p.Name
		}
	}
	if !strings.Contains(replica, "-follower-") {
		t.Fatalf("no follower pod replicates %s (%s)", leader, leaderIP)
	}
	if err := c.redis(c.pod(replica)).Do(c.ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	role := func(pod string) string {
		r, err := c.redis(c.pod(pod)).Do(c.ctx, "ROLE").Slice()
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(r[0])
	}
	kept := func(what string) {
		t.Helper()
		sb.WaitFor(t, c.ns, replica+" kept master "+what, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
			cr := c.get()
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			seen := fmt.Sprintf("annotation %q, ready %+v, %s %s, %s %s, labels %s %s", cr.Annotations["redis.opstreelabs.in/hand-made-masters"], ready,
				replica, role(replica), leader, role(leader), c.pod(replica).Labels["redis-role"], c.pod(leader).Labels["redis-role"])
			ok := cr.Annotations["redis.opstreelabs.in/hand-made-masters"] == replica && ready != nil && ready.Status == metav1.ConditionTrue &&
				ready.Reason == "HandMadeFailoverKept" && role(replica) == "master" && role(leader) == "slave" &&
				c.pod(replica).Labels["redis-role"] == "master" && c.pod(leader).Labels["redis-role"] == "slave"
			return ok, seen, nil
		})
	}
	kept("after the failover")
	time.Sleep(40 * time.Second) // a health check and its reconcile
	kept("after a health check")
	if !hasEvent(t, c.ns, "HandMadeFailoverKept") {
		t.Error("no HandMadeFailoverKept event")
	}
	c.readKeys("h", 200)

	// Dropping the record lets the leader pod take its shard back.
	patch := []byte(`{"metadata":{"annotations":{"redis.opstreelabs.in/hand-made-masters":null}}}`)
	if err := sb.Client.Patch(c.ctx, c.get(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	// The resource is still Ready (HandMadeFailoverKept) until the operator acts on the patch:
	// wait for the hand-back itself, and for every node to know only the six pods again (a
	// MEET of the hand-back leaves a handshake entry for a moment), before the shape is checked.
	sb.WaitFor(t, c.ns, leader+" master again, the cluster Ready without the record", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := c.get()
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason == "HandMadeFailoverKept" || role(leader) != "master" || role(replica) != "slave" {
			return false, fmt.Sprintf("ready %+v, %s %s, %s %s", ready, leader, role(leader), replica, role(replica)), nil
		}
		for _, p := range c.pods(ctx) {
			text, err := c.redis(&p).ClusterInfo(ctx).Result()
			if err != nil {
				return false, "", err
			}
			if info, err := redis.ParseClusterInfo(text); err != nil || info.KnownNodes != 6 {
				return false, fmt.Sprintf("%s knows %d nodes (%v)", p.Name, info.KnownNodes, err), nil
			}
		}
		return true, "", nil
	})
	c.assertShape()
	c.readKeys("h", 200)
}

func hasEvent(t *testing.T, ns, reason string) bool {
	t.Helper()
	for _, e := range operatorEvents(t, ns) {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
