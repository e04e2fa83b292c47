package clusterplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// finishMigrations completes every slot move that was started and not finished (the operator
// stopped midway, or a move was started by hand): a move only ever goes forward, to the node
// that was importing the slot, so no key is left behind on a node that no longer serves it.
func finishMigrations(o *observed) Plan {
	moves := map[[2]string][]int{} // source pod, destination pod → slots
	var problems []string
	add := func(from, to *Member, slot int) {
		key := [2]string{from.Pod, to.Pod}
		if !slices.Contains(moves[key], slot) {
			moves[key] = append(moves[key], slot)
		}
	}
	for i := range o.members {
		m := &o.members[i]
		me := o.self[m.Pod]
		// Valkey 8 copies a primary's move states to its replicas; only a master's own are
		// moves to finish (a replica refuses SETSLOT).
		if !me.IsMaster() {
			continue
		}
		for _, mig := range me.Migrating {
			to, ok := o.ids[mig.NodeID]
			if !ok {
				problems = append(problems, fmt.Sprintf("pod %s is moving slot %d to node %s, which is no pod of this cluster", m.Pod, mig.Slot, short(mig.NodeID)))
				continue
			}
			add(m, to, mig.Slot)
		}
		for _, mig := range me.Importing {
			from, ok := o.ids[mig.NodeID]
			switch {
			case ok && (o.self[from.Pod].OwnsSlot(mig.Slot) || me.OwnsSlot(mig.Slot)):
				add(from, m, mig.Slot)
			case ok:
				problems = append(problems, fmt.Sprintf("pod %s is importing slot %d from %s, which does not serve it", m.Pod, mig.Slot, from.Pod))
			default:
				problems = append(problems, fmt.Sprintf("pod %s is importing slot %d from node %s, which is no pod of this cluster", m.Pod, mig.Slot, short(mig.NodeID)))
			}
		}
	}
	var plan Plan
	for _, key := range sortedKeys(moves) {
		from, to := o.byPod(key[0]), o.byPod(key[1])
		plan.Steps = append(plan.Steps, migrateStep(o, from, to, moves[key], "finish the move that was started"))
	}
	if len(plan.Steps) == 0 {
		plan.Problems = problems
	}
	return plan
}

// rebalanceTolerance is how far, in percent of its fair share, a master's slot count may be
// off before the slots are moved: slots moved by hand by a small amount stay where they are.
const rebalanceTolerance = 2

// rebalance moves slots, with their keys, so that each designed leader serves its share: all
// the slots of departing masters (scale-in), and the surplus of others to leaders that have
// too few (scale-out). It runs only on a cluster that agrees on its shape. The plan holds every
// move: the steps go between distinct pairs of masters where the shares allow, so that they can
// run side by side, and the controller bounds the time one reconcile spends on them.
func rebalance(o *observed) Plan {
	receivers, held, ok := o.receivers()
	if !ok {
		return held
	}
	leaving, ok := o.leavingMasters()
	if !ok {
		return Plan{} // a follower pod is a master: failing back comes first
	}
	if len(leaving) == 0 && o.balanced(receivers) {
		return Plan{}
	}
	moves := o.assignMoves(receivers, o.givers(leaving, receivers))
	var plan Plan
	for _, key := range sortedKeys(moves) {
		from, to := o.byPod(key[0]), o.byPod(key[1])
		why := "rebalance"
		if o.departing(from) {
			why = from.Pod + " is leaving the cluster"
		} else if o.self[to.Pod].SlotCount() == 0 {
			why = to.Pod + " is a new master"
		}
		plan.Steps = append(plan.Steps, migrateStep(o, from, to, moves[key], why))
	}
	return plan
}

// receivers are the designed leader pods, in ordinal order, which must all be masters before
// slots move to them. When one is not, it returns false with the plan for that: nothing while
// it can still fail back from its follower, a problem when it cannot.
func (o *observed) receivers() ([]*Member, Plan, bool) {
	receivers := make([]*Member, 0, o.design.Leaders)
	for i := 0; i < o.design.Leaders; i++ {
		m := o.member(Leader, i)
		if !o.self[m.Pod].IsMaster() {
			if master, ok := o.ids[o.self[m.Pod].MasterID]; ok && master.Role == Follower {
				return nil, Plan{}, false // the leader pod takes its shard back first (or after its replacement)
			}
			return nil, Plan{Problems: []string{fmt.Sprintf("leader pod %s is a replica of %s, which is no follower it could fail back from: it can only become a master as an empty node (delete its PVC and pod)", m.Pod, o.podOf(o.self[m.Pod].MasterID))}}, false
		}
		receivers = append(receivers, m)
	}
	return receivers, Plan{}, true
}

// leavingMasters are the departing members that serve slots. It returns false when a designed
// follower pod serves slots: it must fail back before slots move.
func (o *observed) leavingMasters() ([]*Member, bool) {
	var leaving []*Member
	for i := range o.members {
		m := &o.members[i]
		if o.self[m.Pod].SlotCount() == 0 || (m.Role == Leader && !o.departing(m)) {
			continue
		}
		if !o.departing(m) {
			return nil, false
		}
		leaving = append(leaving, m)
	}
	return leaving, true
}

// fairShare is how many slots the i-th of n leaders serves: the remainder goes to the first.
func fairShare(i, n int) int {
	share := redis.SlotCount / n
	if i < redis.SlotCount%n {
		share++
	}
	return share
}

// balanced reports whether every receiver serves slots, within rebalanceTolerance of its share.
func (o *observed) balanced(receivers []*Member) bool {
	for i, m := range receivers {
		have, want := o.self[m.Pod].SlotCount(), fairShare(i, len(receivers))
		if have == 0 || abs(have-want)*100 > want*rebalanceTolerance {
			return false
		}
	}
	return true
}

// giver is a master with the slots it hands over, in the order they go.
type giver struct {
	m     *Member
	slots []int
}

// givers hand over, in order: every slot of a departing master, then the top of a leader's
// surplus (which keeps its lower ranges whole).
func (o *observed) givers(leaving, receivers []*Member) []giver {
	var givers []giver
	for _, m := range leaving {
		givers = append(givers, giver{m, slotList(o.self[m.Pod].Slots)})
	}
	for i, m := range receivers {
		slots := slotList(o.self[m.Pod].Slots)
		if surplus := len(slots) - fairShare(i, len(receivers)); surplus > 0 {
			givers = append(givers, giver{m, slots[len(slots)-surplus:]})
		}
	}
	return givers
}

// assignMoves fills each receiver up to its share from the givers in turn and returns the
// slots by source and destination pod.
func (o *observed) assignMoves(receivers []*Member, givers []giver) map[[2]string][]int {
	moves := map[[2]string][]int{}
	for i, m := range receivers {
		need := fairShare(i, len(receivers)) - o.self[m.Pod].SlotCount()
		for need > 0 && len(givers) > 0 {
			g := &givers[0]
			n := min(need, len(g.slots))
			key := [2]string{g.m.Pod, m.Pod}
			moves[key] = append(moves[key], g.slots[:n]...)
			g.slots = g.slots[n:]
			need -= n
			if len(g.slots) == 0 {
				givers = givers[1:]
			}
		}
	}
	return moves
}

// depart waits for the StatefulSets to remove the departing pods once they serve nothing.
func depart(o *observed) Plan {
	var leaving []string
	for i := range o.members {
		if o.departing(&o.members[i]) {
			leaving = append(leaving, o.members[i].Pod)
		}
	}
	if len(leaving) == 0 {
		return Plan{}
	}
	return Plan{Wait: "scale-in: " + strings.Join(leaving, ", ") + " serve no slots and wait to be removed"}
}

func migrateStep(o *observed, from, to *Member, slots []int, why string) Step {
	ranges := slotRanges(slots)
	return Step{Kind: StepMigrate, On: from.Pod, To: to.Pod, NodeID: o.idOf[to.Pod], IP: to.IP, Port: to.Port, BusPort: to.BusPort,
		Slots: ranges, Reason: fmt.Sprintf("move %d slots (%s) to %s: %s", len(slots), formatRanges(ranges), to.Pod, why)}
}

func sortedKeys(m map[[2]string][]int) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return keys
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
