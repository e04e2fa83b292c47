package clusterplan

import (
	"fmt"
)

// RequestedFailover is what to do about a failover a user asked for (kubectl redis failover).
type RequestedFailover struct {
	// Failover is the replica to run CLUSTER FAILOVER on.
	Failover string
	// Refuse says why the failover would not be safe now, or why the request is wrong.
	Refuse string
	// Invalid: the request can never be fulfilled as asked (no such pod, no pod named); it is
	// dropped.
	Invalid bool
	// Wait says, when the failover is safe but its replica could not be elected yet (a
	// master's view of it has not converged, see Electability), what it waits for.
	Wait string
}

// PlanRequestedFailover decides a failover the user asked for: target names a replica, which
// takes its master's shard over, or a master, whose replica holding the most takes it over.
// CLUSTER FAILOVER (without FORCE) loses no acknowledged write, and only a replica whose link
// to its master is up is asked: the master waits for it to catch up, then the roles swap.
// An electable one (see Electability): until one is, the plan waits.
func PlanRequestedFailover(members []Member, target string) RequestedFailover {
	var named *Member
	for i := range members {
		if members[i].Pod == target {
			named = &members[i]
		}
	}
	if named == nil {
		return RequestedFailover{Invalid: true, Refuse: fmt.Sprintf("%q names no pod of this cluster: name a master, whose best replica takes its shard over, or a replica", target)}
	}
	me, ok := myself(named)
	if !ok {
		return RequestedFailover{Refuse: target + " does not answer CLUSTER NODES"}
	}
	if me.IsReplica() {
		if !named.Replication.LinkUp() {
			return RequestedFailover{Refuse: fmt.Sprintf("%s's link to its master is down: it may not hold every write", target)}
		}
		if e := electable(members, named); !e.Ready() {
			return RequestedFailover{Wait: fmt.Sprintf("%s takes its master's shard over once every master knows it: %s", target, e.Reason())}
		}
		return RequestedFailover{Failover: target}
	}
	best, bestElectable := bestReplicas(members, me.ID)
	switch {
	case best == nil:
		return RequestedFailover{Refuse: fmt.Sprintf("no replica of %s has its link up: a failover now could lose writes", target)}
	case bestElectable == nil:
		return RequestedFailover{Wait: fmt.Sprintf("%s takes %s's shard over once every master knows it: %s", best.Pod, target, electable(members, best).Reason())}
	}
	return RequestedFailover{Failover: bestElectable.Pod}
}

// bestReplicas are, among the replicas of the master masterID whose link is up, the one
// holding the most (the greatest replication offset) and the one holding the most of those
// that can be elected now; nil when there is none.
func bestReplicas(members []Member, masterID string) (best, bestElectable *Member) {
	better := func(r, than *Member) bool {
		return than == nil || r.Replication.ReplicationOffset > than.Replication.ReplicationOffset
	}
	for i := range members {
		r := &members[i]
		if node, ok := myself(r); ok && node.IsReplica() && node.MasterID == masterID && r.Replication.LinkUp() {
			if better(r, best) {
				best = r
			}
			if better(r, bestElectable) && electable(members, r).Ready() {
				bestElectable = r
			}
		}
	}
	return best, bestElectable
}

// IsServingMaster reports whether pod answers as a master that serves slots.
func IsServingMaster(members []Member, pod string) bool {
	for i := range members {
		if members[i].Pod == pod {
			me, ok := myself(&members[i])
			return ok && me.IsMaster() && me.SlotCount() > 0
		}
	}
	return false
}
