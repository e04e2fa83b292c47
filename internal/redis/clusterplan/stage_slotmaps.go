package clusterplan

import (
	"fmt"
	"slices"

	"github.com/rediskube/redis-operator/internal/redis"
)

// slotMapsAgree waits, before any slot moves, until every member's view maps each slot to the
// master that claims it in its own view. A view that still maps slots to a master that gave
// them away (gossip not yet heard, a SETSLOT NODE that did not reach that member) is harmless
// while the true owner's config epoch is greater than that master's: the owner's next ping
// corrects it. It turns harmful once that master's epoch grows past the owner's, and a slot
// move grows it: the node that imports a slot takes a new epoch (SETSLOT NODE), and so does a
// BUMPEPOCH. The stale view then wins: it tells the true owner, by an UPDATE, that the slots
// are the other master's, the owner drops them, and Redis before 7.2 deletes the keys they
// held. Seen in a full suite run as slots lost with their keys during a 3 → 4 → 3 scale: a
// slot given back to the master that had served it before the scale-out.
// So the owner is asked to announce itself to each stale viewer at once (a MEET from it
// carries its claims and epoch), after taking a new epoch (BUMPEPOCH) when its own is not
// greater than the stale master's, and nothing moves until the views agree.
func slotMapsAgree(o *observed) Plan {
	c := slotMapCorrection{o: o, bumped: map[string]bool{}, told: map[[2]string]bool{}}
	for i := range o.members {
		viewer := &o.members[i]
		if viewer.View == nil {
			continue
		}
		for j := range o.members {
			stale := &o.members[j]
			if _, answers := o.self[stale.Pod]; !answers || stale.Pod == viewer.Pod {
				continue // what a silent node claims is unknown
			}
			if seen, ok := viewer.View.NodeByID(o.idOf[stale.Pod]); ok {
				for _, slot := range unclaimedSlots(seen.Slots, o.self[stale.Pod].Slots) {
					c.correct(viewer, stale, slot)
				}
			}
		}
	}
	if len(c.plan.Steps) > 0 {
		c.plan.Wait = ""
	}
	return c.plan
}

// slotMapCorrection gathers slotMapsAgree's steps, one BUMPEPOCH per owner and one MEET per
// owner and viewer.
type slotMapCorrection struct {
	o      *observed
	plan   Plan
	bumped map[string]bool
	told   map[[2]string]bool
}

// correct plans what makes viewer map slot, which its view maps to stale, to its owner.
func (c *slotMapCorrection) correct(viewer, stale *Member, slot int) {
	owner := claimantOf(c.o, slot)
	if owner == nil {
		return // an orphan: assignSlots adopts it
	}
	if c.plan.Wait == "" {
		c.plan.Wait = fmt.Sprintf("waiting for gossip: %s's view maps slot %d to %s, which no longer serves it (%s does)", viewer.Pod, slot, stale.Pod, owner.Pod)
	}
	ownerEpoch, staleEpoch := c.o.self[owner.Pod].ConfigEpoch, c.o.self[stale.Pod].ConfigEpoch
	if ownerEpoch <= staleEpoch {
		// A new epoch for the owner is safe only if no view maps to it slots it does not
		// claim: those would win in turn.
		if !c.bumped[owner.Pod] && mapsUnclaimedSlotsTo(c.o, owner) == "" {
			c.bumped[owner.Pod] = true
			c.plan.Steps = append(c.plan.Steps, Step{Kind: StepBumpEpoch, On: owner.Pod, NodeID: c.o.idOf[owner.Pod],
				Reason: fmt.Sprintf("%s's view maps slot %d, which it serves, to %s at config epoch %d, not below its own %d: a new epoch makes its claim win",
					viewer.Pod, slot, stale.Pod, staleEpoch, ownerEpoch)})
		}
		return
	}
	if key := [2]string{owner.Pod, viewer.Pod}; !c.told[key] && owner.Pod != viewer.Pod {
		c.told[key] = true
		c.plan.Steps = append(c.plan.Steps, meetStep(owner, viewer,
			fmt.Sprintf("tell %s that %s serves slot %d, which its view still maps to %s", viewer.Pod, owner.Pod, slot, stale.Pod)))
	}
}

// unclaimedSlots are the slots of seen that claimed does not cover, the first of each range.
func unclaimedSlots(seen, claimed []redis.SlotRange) []int {
	var out []int
	for _, r := range seen {
		for s := r.Start; s <= r.End; s++ {
			if !slices.ContainsFunc(claimed, func(c redis.SlotRange) bool { return c.Start <= s && s <= c.End }) {
				out = append(out, s)
				// The rest of the range most likely went the same way; one slot names it.
				for s <= r.End && !slices.ContainsFunc(claimed, func(c redis.SlotRange) bool { return c.Start <= s && s <= c.End }) {
					s++
				}
			}
		}
	}
	return out
}

// claimantOf is the master whose own view claims slot, nil when none does.
func claimantOf(o *observed, slot int) *Member {
	for i := range o.members {
		m := &o.members[i]
		me := o.self[m.Pod]
		if me.IsMaster() && slices.ContainsFunc(me.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
			return m
		}
	}
	return nil
}
