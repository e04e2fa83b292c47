package replicationplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// AnyReplica, as the target of a requested failover, lets the plan pick the replica.
const AnyReplica = "*"

// Requested is what to do about a failover a user asked for (kubectl redis failover).
type Requested struct {
	// Done: target is the master already; the request is fulfilled.
	Done bool
	// To is the replica to hand the master role to with FAILOVER TO.
	To string
	// Refuse says why the failover would not be safe now, or why the request is wrong.
	Refuse string
	// Invalid: the request can never be fulfilled as asked (no such pod); it is dropped.
	Invalid bool
}

// PlanRequestedFailover decides a failover the user asked for towards target (a pod of the
// replication, or AnyReplica). It is safe only towards a ready replica of the master whose
// link is up: FAILOVER TO then pauses writes until that replica holds every one of them.
func PlanRequestedFailover(master string, members []Member, target string) Requested {
	var from, to *Member
	for i := range members {
		switch members[i].Pod {
		case master:
			from = &members[i]
		case target:
			to = &members[i]
		}
	}
	if target != AnyReplica && target == master {
		return Requested{Done: true}
	}
	if target != AnyReplica && to == nil {
		return Requested{Invalid: true, Refuse: fmt.Sprintf("%s is not a pod of this replication", target)}
	}
	if from == nil || from.Role == nil || from.Role.Kind != redis.RoleMaster {
		return Requested{Refuse: "no master answers: there is no role to hand over"}
	}
	inSync := func(m *Member) bool {
		return m != from && m.Role != nil && m.Role.LinkUp() && m.Ready &&
			m.Role.MasterIP == from.IP && m.Role.MasterPort == from.Port
	}
	if to != nil {
		if !inSync(to) {
			return Requested{Refuse: fmt.Sprintf("%s is not a ready replica of the master %s with its link up: handing it the master role could lose writes", target, master)}
		}
		return Requested{To: to.Pod}
	}
	var candidates []*Member
	for i := range members {
		if inSync(&members[i]) {
			candidates = append(candidates, &members[i])
		}
	}
	if best := BestReplica(candidates); best != nil {
		return Requested{To: best.Pod}
	}
	return Requested{Refuse: fmt.Sprintf("no ready replica of the master %s has its link up: a failover now could lose writes", master)}
}
