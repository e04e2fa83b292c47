package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A leader pod deleted gracefully (as a drain or an eviction does) hands its shard to its
// follower before its process stops: the operator sees the pod terminate and asks the follower
// to take over with CLUSTER FAILOVER, the pod's preStop hook holds Redis up until it is a
// replica. The old leader's process, while it still answers, answers as a replica; the
// follower started a manual failover (no election after the node timeout); no acknowledged
// write is lost, and no shard's writes pause longer than a hand-over's bound.
func TestPlannedLeaderDeletionHandsTheShardOver(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, strings.Replace(sample(t, "redis_v1beta2_rediscluster_minimal.yaml"), "name: redis-cluster", "name: handover", 1))
	c.waitReady(start)
	plannedLeaderDeletion(t, c)
}

// The same on a cluster that serves TLS only and requires a password: the preStop hook's
// redis-cli reaches its Redis with the TLS files and the password from the user's Secret.
func TestPlannedLeaderDeletionHandsOverWithTLSAndPassword(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t, "redis-ca")
	issued := ca.Issue(t, "handover-leader", "handover-follower")
	ns := sb.Namespace(t, "handover")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("hand-over")}}
	if err := sb.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, ctx: context.Background(), ns: ns, name: "handover", password: "hand-over"}
	c.tls = tlsSecret(t, ns, ca.CertPEM, issued)
	start := time.Now()
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: handover
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: redis-auth
      key: password
  TLS:
    secret:
      secretName: redis-tls
`)
	c.waitReady(start)
	plannedLeaderDeletion(t, c)
}

// plannedLeaderDeletion deletes leader-1 of a Ready cluster under writes and checks that its
// shard was handed over before its process stopped.
func plannedLeaderDeletion(t *testing.T, c *cluster) {
	t.Helper()
	c.writeKeys("h", 300)

	leader := c.pod(c.name + "-leader-1")
	old := c.redis(leader)
	oldID, err := old.Do(c.ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	// The pod's own preStop hook, run on the live leader (a master with its replica), waits:
	// its redis-cli reached this Redis (TLS, password) and found nothing handed over yet.
	hook := leader.Spec.Containers[0].Lifecycle.PreStop.Exec.Command
	_, stderr, err := sb.Exec(c.ctx, c.ns, leader.Name, leader.Spec.Containers[0].Name, append([]string{"timeout", "2"}, hook...)...)
	var exit interface{ ExitStatus() int }
	if !errors.As(err, &exit) || exit.ExitStatus() != 124 {
		t.Errorf("the preStop hook on the live leader did not wait (want it stopped by timeout, exit 124): %v %s", err, stderr)
	}
	checker := c.startWriting("handover")

	fault := faultTime()
	if err := sb.Client.Delete(c.ctx, leader); err != nil {
		t.Fatal(err)
	}
	// Ask the old leader's process what it is until it stops answering.
	last, seen := rolesUntilStopped(c.ctx, old, fault)
	t.Logf("the deleted leader's process answered: %s", seen)
	if last != "slave" {
		t.Errorf("the deleted leader's process last answered ROLE %q before it stopped, want slave: its shard was not handed over", last)
	}
	c.waitReady(fault)
	c.assertShape()
	c.requireWrites(checker, "during the planned deletion", handOverPause)
	c.readKeys("h", 300)

	// The follower that took over started a manual failover; nobody had to elect one.
	manual := 0
	for _, p := range c.pods(c.ctx) {
		info, err := c.redis(&p).ClusterInfo(c.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.Name, "-follower-") {
			manual += clusterStat(info, "cluster_stats_messages_mfstart_sent")
		}
	}
	if manual == 0 {
		t.Errorf("no follower started a manual failover (cluster_stats_messages_mfstart_sent): the shard of %s (%s) was not handed over", leader.Name, oldID)
	}
	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	handOvers := 0
	for _, e := range events.Items {
		if e.Reason == "HandOver" && strings.Contains(e.Note, leader.Name) {
			handOvers++
		}
		if e.Type == corev1.EventTypeWarning && e.Reason == "FailedPreStopHook" {
			t.Errorf("preStop hook failed: %s", e.Note)
		}
	}
	if handOvers == 0 {
		t.Errorf("no HandOver event names %s", leader.Name)
	}
}

// clusterStat reads one counter of CLUSTER INFO, 0 when absent.
func clusterStat(info, name string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			var n int
			_, _ = fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// The master pod of a RedisReplication deleted gracefully hands its role over with FAILOVER TO
// before its process stops: that process, while it still answers, answers as a replica; no
// replica is promoted as for a lost master; every write a replica acknowledged is on the new
// master.
func TestPlannedReplicationMasterDeletionHandsTheRoleOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "handover")
	const name = "redis-replication"
	sb.Apply(t, ns, sample(t, "redis_v1beta2_redisreplication_minimal.yaml"))
	key := client.ObjectKey{Namespace: ns, Name: name}
	cr := &v1beta2.RedisReplication{}
	waitReady := func(since time.Time, notMaster string) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, key, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			ok := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cr.Generation &&
				!ready.LastTransitionTime.Time.Before(since.Truncate(time.Second)) && cr.Status.ReadyReplicas == 3 && cr.Status.MasterNode != notMaster
			return ok, fmt.Sprintf("%s master %q: %s", cr.Status.State, cr.Status.MasterNode, cr.Status.Reason), nil
		})
	}
	waitReady(time.Now().Add(-time.Hour), "")
	oldMaster := getPod(t, ns, cr.Status.MasterNode)
	old := sb.Redis(t, oldMaster)

	writes := startAcknowledgedWriter(t, ns, name+"-master", "")
	time.Sleep(time.Second)
	fault := faultTime()
	if err := sb.Client.Delete(ctx, oldMaster); err != nil {
		t.Fatal(err)
	}
	if last, seen := rolesUntilStopped(ctx, old, fault); last != "slave" {
		t.Errorf("the deleted master's process last answered ROLE %q before it stopped (%s), want slave", last, seen)
	} else {
		t.Logf("the deleted master's process answered: %s", seen)
	}
	waitReady(fault, oldMaster.Name)
	time.Sleep(time.Second)
	acknowledged, failures := writes()
	master := getPod(t, ns, cr.Status.MasterNode)
	rdb := sb.Redis(t, master)
	for _, k := range acknowledged {
		if err := rdb.Get(ctx, k).Err(); err != nil {
			t.Errorf("acknowledged key %s is missing on the master %s: %v", k, master.Name, err)
		}
	}
	t.Logf("%d writes acknowledged, %d refused while roles changed; master %s -> %s", len(acknowledged), failures, oldMaster.Name, master.Name)
	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	handedOver := false
	for _, e := range events.Items {
		switch e.Reason {
		case "Promote":
			t.Errorf("a replica was promoted as if the master were lost: %s", e.Note)
		case "HandOver":
			handedOver = handedOver || strings.Contains(e.Note, "before its pod stops")
		}
	}
	if !handedOver {
		t.Error("no HandOver event for the deleted master")
	}
}

// rolesUntilStopped asks a Redis for its ROLE every 10 ms until it has not answered for a
// second, and returns the last role it answered and the changes seen, timed from since.
func rolesUntilStopped(ctx context.Context, rdb *goredis.Client, since time.Time) (last, seen string) {
	var changes []string
	failingSince := time.Time{}
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		role, err := rdb.Do(rctx, "ROLE").Slice()
		cancel()
		at := time.Since(since).Truncate(time.Millisecond)
		if err != nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
				changes = append(changes, fmt.Sprintf("%v: %v", at, err))
			}
			if time.Since(failingSince) > time.Second {
				break
			}
			continue
		}
		failingSince = time.Time{}
		if r := fmt.Sprint(role[0]); r != last {
			changes = append(changes, fmt.Sprintf("%v: %s", at, r))
			last = r
		}
	}
	return last, strings.Join(changes, "; ")
}
