package replicationplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Departure is why the master's pod is about to go.
type Departure int

// The reasons a master's pod goes while the operator can still move its role without loss.
const (
	// ScaleIn: the StatefulSet shrinks to size pods, which removes every ordinal at or above it.
	ScaleIn Departure = iota
	// RollingUpdate: the pod runs an old revision and is to be replaced.
	RollingUpdate
	// Deleted: the pod terminates gracefully (a drain, an eviction, a deletion); its preStop
	// hook holds Redis up for the hand-over.
	Deleted
)

// HandOver is what to do before the master's pod goes. The zero HandOver means there is
// nothing to hand over: the pod stays, or it does not answer as a master.
type HandOver struct {
	// To is the replica to run FAILOVER TO towards: it takes the master role once it holds
	// every write, and the old master becomes its replica.
	To string
	// Wait says why no replica can take over yet.
	Wait string
}

// PlanHandOver chooses the replica that takes the master role over before master's pod goes
// (the StatefulSet keeps the ordinals below size). A candidate answers as a replica of the
// master's address with its link up, its pod is ready, and it stays: its ordinal is below
// size, its pod does not terminate too and, for a rolling update, it already runs the new revision (otherwise it would be
// replaced next and the role handed over once more). BestReplica ranks the candidates.
func PlanHandOver(master string, members []Member, size int, why Departure) HandOver {
	var from *Member
	for i := range members {
		if members[i].Pod == master {
			from = &members[i]
		}
	}
	if from == nil || from.Role == nil || from.Role.Kind != redis.RoleMaster {
		return HandOver{} // gone, or no longer master: nothing to hand over
	}
	if why == ScaleIn && from.Ordinal < size || why == RollingUpdate && !from.Outdated || why == Deleted && !from.Terminating {
		return HandOver{}
	}
	var candidates []*Member
	for i := range members {
		m := &members[i]
		if m == from || m.Role == nil || !m.Role.LinkUp() || !m.Ready || m.Ordinal >= size || m.Terminating {
			continue
		}
		if m.Role.MasterIP != from.IP || m.Role.MasterPort != from.Port || why == RollingUpdate && m.Outdated {
			continue
		}
		candidates = append(candidates, m)
	}
	if best := BestReplica(candidates); best != nil {
		return HandOver{To: best.Pod}
	}
	switch why {
	case Deleted:
		return HandOver{Wait: fmt.Sprintf("the master %s terminates, and no ready replica that stays is in sync to take over", master)}
	case RollingUpdate:
		return HandOver{Wait: fmt.Sprintf("the rolling update replaces the master %s, and no ready replica that runs the new revision is in sync to take over", master)}
	}
	return HandOver{Wait: fmt.Sprintf("scaling in to %d pods removes the master %s, and no ready replica that stays is in sync to take over", size, master)}
}

// HandedOverTo returns the pod that the terminating pod handed the master role to: the pod
// answers as a replica of a member (not terminating) that answers as a master; "" otherwise.
func HandedOverTo(members []Member, terminating string) string {
	var from *Member
	for i := range members {
		if members[i].Pod == terminating {
			from = &members[i]
		}
	}
	if from == nil || !from.Terminating || from.Role == nil || from.Role.Kind != redis.RoleSlave {
		return ""
	}
	for _, m := range members {
		if !m.Terminating && m.Role != nil && m.Role.Kind == redis.RoleMaster && m.IP == from.Role.MasterIP && m.Port == from.Role.MasterPort {
			return m.Pod
		}
	}
	return ""
}
