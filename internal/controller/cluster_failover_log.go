package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// defaultClusterNodeTimeout is Redis's cluster-node-timeout when nothing sets it (the operator
// does not; a user's redisConfig may): used when a node does not tell its own.
const defaultClusterNodeTimeout = 15 * time.Second

// refusalEventInterval spaces the Warning events of a hand-over refused again and again.
const refusalEventInterval = 5 * time.Second

// manualFailoverTimeout is Redis's bound on a manual failover (CLUSTER_MF_TIMEOUT): past it the
// replica gives its election up and the master takes writes again, whatever the outcome.
const manualFailoverTimeout = 5 * time.Second

// electionRetry is how long after a failover election a replica refuses to start another:
// twice Redis's auth timeout, itself twice the node timeout and at least 2 s (cluster.c,
// clusterHandleSlaveFailover). A CLUSTER FAILOVER asked within it still makes the master
// pause its writes (up to twice the 5 s manual failover timeout) and elects nobody.
func electionRetry(nodeTimeout time.Duration) time.Duration {
	return 2 * max(2*nodeTimeout, 2*time.Second)
}

// failoverLog remembers the CLUSTER FAILOVERs the operator asked, by shard (the master node ID
// the asked replica followed), so that no shard is asked again, on the same replica or
// another, while its election is pending or within Redis's retry window. An attempt ends as
// soon as its outcome is seen: the asked node says it is a master, or follows another master.
//
// Nor is another shard of the same cluster asked while an election runs: each master grants
// one vote per epoch, so two replicas that start their elections together both ask for the
// same epoch, split the votes, and the loser's master stays paused until the manual failover
// times out (and the masters that voted for it refuse its shard another vote for twice the
// node timeout). A drain that stops two masters at once hands their shards over one by one.
type failoverLog struct {
	mu sync.Mutex
	// now is the clock; nil is time.Now (tests set it).
	now      func() time.Time
	pending  map[string]failoverAttempt // by shard: the master node ID
	refusals map[string]time.Time       // hand-over refusals last told, by key
	// asked is when the operator last asked each replica (by node ID) to take over, whatever
	// came of it: a follower pod it made master is no hand-made master.
	asked map[string]time.Time
}

// askedMemory is how long an ask is remembered: longer than any two reconciles are apart.
const askedMemory = 10 * time.Minute

// noteAsked notes that the operator is about to ask member to take its master's shard over.
func (l *failoverLog) noteAsked(member *clusterplan.Member) {
	me, ok := myselfOf(member)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	for id, at := range l.asked {
		if now.Sub(at) > askedMemory {
			delete(l.asked, id)
		}
	}
	if l.asked == nil {
		l.asked = map[string]time.Time{}
	}
	l.asked[me.ID] = now
}

// askedSince reports whether the operator asked the node to take over at or after since.
func (l *failoverLog) askedSince(nodeID string, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.asked[nodeID]
	return ok && !at.Before(since)
}

// failoverAttempt is one CLUSTER FAILOVER asked.
type failoverAttempt struct {
	replicaID, replicaPod string
	masterPod             string
	at, until             time.Time
}

func (l *failoverLog) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// settle ends the attempts whose outcome members show, and those past their window. l.mu held.
func (l *failoverLog) settle(members []clusterplan.Member, now time.Time) {
	for shard, a := range l.pending {
		if !now.Before(a.until) {
			delete(l.pending, shard)
			continue
		}
		for i := range members {
			me, ok := myselfOf(&members[i])
			if ok && me.ID == a.replicaID && (me.IsMaster() || me.MasterID != shard) {
				delete(l.pending, shard)
			}
		}
	}
}

// wait says why a failover of replica's shard may not be asked now, "" when it may. members
// are what the reconcile observed, replica one of them.
func (l *failoverLog) wait(members []clusterplan.Member, replica *clusterplan.Member) string {
	if replica == nil {
		return ""
	}
	me, ok := myselfOf(replica)
	if !ok || !me.IsReplica() {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	l.settle(members, now)
	return l.waitLocked(members, me.MasterID, now)
}

func (l *failoverLog) waitLocked(members []clusterplan.Member, shard string, now time.Time) string {
	a, ok := l.pending[shard]
	if !ok {
		return l.electionElsewhere(members, shard, now)
	}
	state := "does not answer"
	for i := range members {
		if me, ok := myselfOf(&members[i]); ok && me.ID == a.replicaID {
			state = "still reports itself a replica of " + a.masterPod
			if link := members[i].Replication; link.Kind == redis.RoleSlave && !link.LinkUp() {
				state += " (link " + link.ReplicationState + ")"
			}
		}
	}
	return fmt.Sprintf("CLUSTER FAILOVER asked on %s %s ago for the shard of %s: %s; Redis allows no other election of it for %s more",
		a.replicaPod, now.Sub(a.at).Round(100*time.Millisecond), a.masterPod, state, a.until.Sub(now).Round(time.Second))
}

// electionElsewhere says which election of another shard of the cluster members show still
// runs (asked less than Redis's manual failover timeout ago, outcome unseen), "" when none. l.mu held.
func (l *failoverLog) electionElsewhere(members []clusterplan.Member, shard string, now time.Time) string {
	ids := map[string]bool{}
	for i := range members {
		if me, ok := myselfOf(&members[i]); ok {
			ids[me.ID] = true
		}
	}
	for other, a := range l.pending {
		if other == shard || !ids[a.replicaID] || !now.Before(a.at.Add(manualFailoverTimeout)) {
			continue
		}
		return fmt.Sprintf("CLUSTER FAILOVER asked on %s %s ago for the shard of %s is still being elected: one election at a time, as each master votes once per epoch",
			a.replicaPod, now.Sub(a.at).Round(100*time.Millisecond), a.masterPod)
	}
	return ""
}

// begin notes a CLUSTER FAILOVER about to be asked on replica, whose election Redis retries
// only after window; it returns the wait instead when one of its shard is pending.
func (l *failoverLog) begin(members []clusterplan.Member, replica *clusterplan.Member, window time.Duration) string {
	if replica == nil {
		return ""
	}
	me, ok := myselfOf(replica)
	if !ok {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	l.settle(members, now)
	if wait := l.waitLocked(members, me.MasterID, now); wait != "" {
		return wait
	}
	if l.pending == nil {
		l.pending = map[string]failoverAttempt{}
	}
	masterPod := "node " + me.MasterID
	for i := range members {
		if id, ok := myselfOf(&members[i]); ok && id.ID == me.MasterID {
			masterPod = members[i].Pod
		}
	}
	l.pending[me.MasterID] = failoverAttempt{replicaID: me.ID, replicaPod: replica.Pod, masterPod: masterPod, at: now, until: now.Add(window)}
	return ""
}

// windows returns, by shard, until when an election the operator asked of it keeps Redis
// from running another, for the attempts whose outcome members do not show yet.
func (l *failoverLog) windows(members []clusterplan.Member) map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(members, l.clock())
	out := make(map[string]time.Time, len(l.pending))
	for shard, a := range l.pending {
		out[shard] = a.until
	}
	return out
}

// cancel forgets the attempt on replica's shard: Redis refused the command, no election started.
func (l *failoverLog) cancel(replica *clusterplan.Member) {
	if replica == nil {
		return
	}
	me, ok := myselfOf(replica)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.pending[me.MasterID]; ok && a.replicaID == me.ID {
		delete(l.pending, me.MasterID)
	}
}

// firstRefusal reports whether a refusal under key was not told within refusalEventInterval,
// and notes it.
func (l *failoverLog) firstRefusal(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	for k, at := range l.refusals {
		if now.Sub(at) >= refusalEventInterval {
			delete(l.refusals, k)
		}
	}
	if _, ok := l.refusals[key]; ok {
		return false
	}
	if l.refusals == nil {
		l.refusals = map[string]time.Time{}
	}
	l.refusals[key] = now
	return true
}

// clusterFailoverAsker is the replica asked to take its master's place: CLUSTER FAILOVER, after
// CONFIG GET cluster-node-timeout for how long its election may take.
type clusterFailoverAsker interface {
	configEditor
	ClusterFailover(ctx context.Context, mode redis.FailoverMode) error
}

// askFailover runs CLUSTER FAILOVER on member (a replica in members) unless an election of its
// shard is pending or within Redis's retry window; then it returns what it waits for, and
// asks nothing. The window follows the node's own cluster-node-timeout, whatever the mode.
func (r *RedisClusterReconciler) askFailover(ctx context.Context, s *clusterScope, members []clusterplan.Member, member *clusterplan.Member, mode redis.FailoverMode) (string, error) {
	if wait := r.failovers.wait(members, member); wait != "" {
		return wait, nil
	}
	var c clusterFailoverAsker
	c, err := r.redisNode(s.memberEndpoint(member))
	if err != nil {
		return "", err
	}
	if wait := r.failovers.begin(members, member, electionRetry(nodeTimeout(ctx, c))); wait != "" {
		return wait, nil
	}
	r.failovers.noteAsked(member)
	if err := c.ClusterFailover(ctx, mode); err != nil {
		r.failovers.cancel(member)
		return "", err
	}
	return "", nil
}

// nodeTimeout is the node's cluster-node-timeout, the default when it does not tell (an ACL or
// a renamed CONFIG may forbid asking).
func nodeTimeout(ctx context.Context, c configEditor) time.Duration {
	values, err := c.ConfigGet(ctx, "cluster-node-timeout")
	if err != nil {
		log.FromContext(ctx).V(1).Info("cluster-node-timeout unknown, assuming Redis's default", "error", err.Error())
		return defaultClusterNodeTimeout
	}
	ms, err := strconv.Atoi(values["cluster-node-timeout"])
	if err != nil || ms <= 0 {
		return defaultClusterNodeTimeout
	}
	return time.Duration(ms) * time.Millisecond
}
