package clusterplan

import (
	"cmp"
	"fmt"
	"slices"
)

// RollAction is the next move of a rolling update: at most one of its fields is set.
type RollAction struct {
	// Delete names the pod to replace now: it serves no slots, or it is a master with no
	// replica whose data survives on its volume.
	Delete string
	// Failover names the replica to run CLUSTER FAILOVER on, so that the outdated master it
	// follows becomes a replica (and is replaced next) without losing an acknowledged write.
	Failover string
	// Wait says what the rollout waits for; Problem what it refuses to do.
	Wait, Problem string
}

// Roll chooses the next step of a rolling update on a converged cluster: outdated replicas
// first (follower pods first, highest ordinal first), then each outdated master once one of
// its replicas in sync (an updated one if possible) has taken its shard over; that replica
// must be electable (see Electability), or the rollout waits while the topology phase meets. A master with
// no replica is replaced only when durable (its data is on a volume); otherwise that would
// lose its shard, which is refused. The zero action means nothing is outdated.
func Roll(design Design, members []Member, durable bool) RollAction {
	o := &observed{design: design}
	var outdated []*Member
	for i := range members {
		m := &members[i]
		if _, ok := myself(m); !ok {
			return RollAction{Wait: m.Pod + " does not answer"}
		}
		if m.Outdated && !o.departing(m) {
			outdated = append(outdated, m)
		}
	}
	if len(outdated) == 0 {
		return RollAction{}
	}
	slices.SortFunc(outdated, func(a, b *Member) int {
		if a.Role != b.Role {
			if a.Role == Follower {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Ordinal, a.Ordinal)
	})
	for _, m := range outdated {
		if me, _ := myself(m); me.IsReplica() {
			return RollAction{Delete: m.Pod}
		}
	}
	master := outdated[0]
	me, _ := myself(master)
	var inSync, syncing []*Member
	for i := range members {
		r := &members[i]
		if node, _ := myself(r); node.IsReplica() && node.MasterID == me.ID {
			if r.Replication.LinkUp() {
				inSync = append(inSync, r)
			} else {
				syncing = append(syncing, r)
			}
		}
	}
	slices.SortStableFunc(inSync, func(a, b *Member) int {
		switch {
		case a.Outdated == b.Outdated:
			return 0
		case !a.Outdated:
			return -1
		}
		return 1
	})
	switch {
	case len(inSync) > 0:
		return handOverTo(members, inSync, master)
	case len(syncing) > 0:
		return RollAction{Wait: fmt.Sprintf("%s is syncing before it takes over %s's shard", syncing[0].Pod, master.Pod)}
	case me.SlotCount() == 0 || durable:
		return RollAction{Delete: master.Pod}
	}
	return RollAction{Problem: fmt.Sprintf("%s is a master with no replica and no volume: replacing it would lose its %d slots' data (delete the pod yourself to accept that, or add followers or storage)", master.Pod, me.SlotCount())}
}

// handOverTo asks the first electable of the replicas in sync to take master's shard over, or
// waits, saying why the first is not electable yet.
func handOverTo(members []Member, inSync []*Member, master *Member) RollAction {
	for _, r := range inSync {
		if electable(members, r).Ready() {
			return RollAction{Failover: r.Pod}
		}
	}
	e := electable(members, inSync[0])
	return RollAction{Wait: fmt.Sprintf("%s takes over %s's shard once every master knows it: %s", inSync[0].Pod, master.Pod, e.Reason())}
}
