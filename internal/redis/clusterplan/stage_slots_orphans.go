package clusterplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// A slot is orphaned when no node claims it in its own line of CLUSTER NODES while some
// node's view still maps it to a node. Redis leaves it so: the node named does not claim the
// slot, so nothing about it is gossiped, and CLUSTER ADDSLOTS is refused by every node whose
// view maps it ("already busy"). It comes of an UPDATE message built from a stale view (Redis
// before 7.2 sends a node's slots as the sender sees them, with that node's current config
// epoch: the receiver gives up a slot it had just taken, and its keys with it), or of a
// CLUSTER SETSLOT NODE or DELSLOTS made by hand. Clients are sent from node to node.
//
// Who takes an orphan is decided on a fresh read of every node, not on the plan's: in the
// middle of a move, views read a moment apart may show neither end claiming a slot. And it
// is decided by where the slot's keys are: the one master holding some takes it, so that no
// key is left on a node that does not serve it; a slot no master holds keys in goes to its
// designed leader. Nothing is decided while any node moves the slot, or while two masters
// hold keys in it (which copy is right the operator cannot tell).

// orphaned splits ranges of slots no member claims into those no view maps to any node
// (never assigned: a new cluster's, which CLUSTER ADDSLOTS gives) and the orphans.
func (o *observed) orphaned(ranges []redis.SlotRange) (free []redis.SlotRange, orphans []int) {
	mapped := map[int]bool{}
	for i := range o.members {
		for _, n := range o.members[i].View.Nodes {
			for _, owned := range n.Slots {
				for _, r := range ranges {
					if both, ok := intersect(owned, r); ok {
						for slot := both.Start; slot <= both.End; slot++ {
							mapped[slot] = true
						}
					}
				}
			}
		}
	}
	var unmapped []int
	for _, slot := range slotList(ranges) {
		if mapped[slot] {
			orphans = append(orphans, slot)
		} else {
			unmapped = append(unmapped, slot)
		}
	}
	return slotRanges(unmapped), orphans
}

// mappedTo says whose view maps slot to which node, for the first view that maps it.
func (o *observed) mappedTo(slot int) string {
	for i := range o.members {
		if owner, ok := o.members[i].View.SlotOwner(slot); ok {
			return fmt.Sprintf("%s's view maps slot %d to %s", o.members[i].Pod, slot, o.podOf(owner.ID))
		}
	}
	return ""
}

func adoptStep(o *observed, leader *Member, orphans []int) Step {
	ranges := slotRanges(orphans)
	return Step{Kind: StepAdoptSlots, On: leader.Pod, Slots: ranges,
		Reason: fmt.Sprintf("no node claims slots %s (%s, which does not claim it): the master holding their keys takes them, else %s",
			formatRanges(ranges), o.mappedTo(orphans[0]), leader.Pod)}
}

// Orphans returns those of slots that, on the members' views, no master claims and no member
// moves: orphans still, which may be adopted. The views must be read after the plan that
// asked for the adoption, every member's: when one has none, it returns no slot and that
// member's pod.
func Orphans(members []Member, slots []int) (orphans []int, silent string) {
	claimed := map[int]bool{}
	for i := range members {
		me, ok := myself(&members[i])
		if !ok {
			return nil, members[i].Pod
		}
		for _, slot := range slots {
			if me.OwnsSlot(slot) {
				claimed[slot] = true
			}
		}
		for _, mig := range slices.Concat(me.Migrating, me.Importing) {
			claimed[mig.Slot] = true // a move under way: its ends decide
		}
	}
	for _, slot := range slots {
		if !claimed[slot] {
			orphans = append(orphans, slot)
		}
	}
	return orphans, ""
}

// Adoption is who takes each orphaned slot.
type Adoption struct {
	// Takers maps a pod to the slots it takes, ascending.
	Takers map[string][]int
	// Keys is how many keys each taker already holds in the slots it takes.
	Keys map[string]int64
	// Problems name the slots left alone: their keys are on more than one master.
	Problems []string
}

// Adopt decides who takes each of the orphaned slots: the one master that holds keys in it,
// else fallback (its designed leader). keys maps each master's pod to its key count of every
// slot, in the order of slots. A slot whose keys are on more than one master is left alone,
// with a problem naming them.
func Adopt(slots []int, keys map[string][]int64, fallback string) Adoption {
	out := Adoption{Takers: map[string][]int{}, Keys: map[string]int64{}}
	pods := make([]string, 0, len(keys))
	for pod := range keys {
		pods = append(pods, pod)
	}
	slices.Sort(pods)
	for i, slot := range slots {
		var holders []string
		var held int64
		for _, pod := range pods {
			if i < len(keys[pod]) && keys[pod][i] > 0 {
				holders = append(holders, pod)
				held = keys[pod][i]
			}
		}
		switch len(holders) {
		case 0:
			out.Takers[fallback] = append(out.Takers[fallback], slot)
		case 1:
			out.Takers[holders[0]] = append(out.Takers[holders[0]], slot)
			out.Keys[holders[0]] += held
		default:
			out.Problems = append(out.Problems, fmt.Sprintf("slot %d is claimed by no node and %s all hold keys in it: which copy is right is for you to decide (keep one, then CLUSTER SETSLOT %d NODE on its node)", slot, strings.Join(holders, ", "), slot))
		}
	}
	return out
}
