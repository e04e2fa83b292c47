package clusterplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// staleViews renders members from nodes, each node's own line as nodes say, except that the
// view of each pod in stale also maps the given slots to another pod (a mapping that pod's own
// line does not claim: a lost SETSLOT NODE, an UPDATE that carried a stale owner).
func staleViews(t *testing.T, nodes []node, stale map[string]map[string]string) []Member {
	t.Helper()
	c := cluster{known: nodes}
	members := c.members(nodes)
	for i := range members {
		edits, ok := stale[members[i].Pod]
		if !ok {
			continue
		}
		seen := slices.Clone(nodes)
		for j := range seen {
			if extra, ok := edits[seen[j].pod]; ok {
				if seen[j].pod == members[i].Pod {
					t.Fatalf("a stale mapping is another pod's line, not %s's own", seen[j].pod)
				}
				seen[j].slots = strings.TrimSpace(seen[j].slots + " " + extra)
			}
		}
		members[i].View = c.viewOf(c.byPod(members[i].Pod), seen)
	}
	return members
}

// The stalled 4 → 3 scale-in: slot 5461 came back from leader-3 last, and afterwards no pod's
// own line claims it, while leader-0's view (and leader-1's) still maps it to leader-3 or to
// leader-1. ADDSLOTS on leader-0 answers "Slot 5461 is already busy" for ever; the plan must
// instead bump leader-0's epoch and claim the slot with SETSLOT NODE, and tell the other
// masters that map it elsewhere, and never touch a slot some pod claims.
func TestUnservedSlotMappedElsewhereIsClaimedWithSetSlotNotAddSlots(t *testing.T) {
	nodes := drainedFour()
	nodes[0].slots = "0-5460" // leader-0 does not claim 5461 by its own word, nor does anyone
	c := cluster{known: nodes}
	leader0 := c.byPod("c-leader-0").id()
	one := []redis.SlotRange{{Start: 5461, End: 5461}}
	for _, tc := range []struct {
		name  string
		stale map[string]map[string]string
		steps []Step // Kind, On, NodeID, To, Slots compared
	}{
		{
			name: "the leader's view maps it to the departing node",
			stale: map[string]map[string]string{
				"c-leader-0": {"c-leader-3": "5461"},
				"c-leader-1": {"c-leader-3": "5461"},
			},
			steps: []Step{
				{Kind: StepBumpEpoch, On: "c-leader-0", NodeID: leader0},
				{Kind: StepSetSlotNode, On: "c-leader-0", NodeID: leader0, To: "c-leader-0", Slots: one},
				{Kind: StepSetSlotNode, On: "c-leader-1", NodeID: leader0, To: "c-leader-0", Slots: one},
			},
		},
		{
			name:  "the leader's view maps it to another designed master that gave it up",
			stale: map[string]map[string]string{"c-leader-0": {"c-leader-1": "5461"}},
			steps: []Step{
				{Kind: StepBumpEpoch, On: "c-leader-0", NodeID: leader0},
				{Kind: StepSetSlotNode, On: "c-leader-0", NodeID: leader0, To: "c-leader-0", Slots: one},
			},
		},
		{
			// ADDSLOTS would pass on leader-0, but leader-2's UPDATE would take the slot back
			// while leader-3's epoch is greater: the claim needs the bump all the same.
			name:  "another master's view maps it, the leader's does not",
			stale: map[string]map[string]string{"c-leader-2": {"c-leader-3": "5461"}},
			steps: []Step{
				{Kind: StepBumpEpoch, On: "c-leader-0", NodeID: leader0},
				{Kind: StepSetSlotNode, On: "c-leader-0", NodeID: leader0, To: "c-leader-0", Slots: one},
				{Kind: StepSetSlotNode, On: "c-leader-2", NodeID: leader0, To: "c-leader-0", Slots: one},
			},
		},
		{
			// A replica refuses SETSLOT; the leader's winning epoch reaches it by gossip.
			name:  "only a replica's view maps it",
			stale: map[string]map[string]string{"c-follower-1": {"c-leader-3": "5461"}},
			steps: []Step{
				{Kind: StepBumpEpoch, On: "c-leader-0", NodeID: leader0},
				{Kind: StepSetSlotNode, On: "c-leader-0", NodeID: leader0, To: "c-leader-0", Slots: one},
			},
		},
		{
			name:  "no view maps it",
			steps: []Step{{Kind: StepAddSlots, On: "c-leader-0", Slots: one}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := staleViews(t, nodes, tc.stale)
			plan := Compute(threeByThree, members)
			if len(plan.Steps) != len(tc.steps) {
				t.Fatalf("plan %+v; want steps %v", plan, tc.steps)
			}
			for i, want := range tc.steps {
				got := plan.Steps[i]
				if got.Kind != want.Kind || got.On != want.On || got.NodeID != want.NodeID || got.To != want.To || formatRanges(got.Slots) != formatRanges(want.Slots) {
					t.Errorf("step %d = %v (node %s, to %s, slots %s); want %v on %s to %s slots %s", i, got, short(got.NodeID), got.To, formatRanges(got.Slots), want.Kind, want.On, want.To, formatRanges(want.Slots))
				}
			}
			assertNoBusyAddSlots(t, members, plan.Steps)
			assertTakesNoClaimedSlot(t, members, plan.Steps)
		})
	}
}

// A slot range some of which a view maps elsewhere: the free part is added, the mapped part
// claimed with SETSLOT; the departing pod's own claims elsewhere are left alone.
func TestUnservedRangePartlyMappedElsewhere(t *testing.T) {
	nodes := drainedFour()
	nodes[0].slots = "0-5400"
	members := staleViews(t, nodes, map[string]map[string]string{"c-leader-0": {"c-leader-3": "5450-5461"}})
	plan := Compute(threeByThree, members)
	var kinds []string
	for _, s := range plan.Steps {
		kinds = append(kinds, string(s.Kind)+" "+s.On+" "+formatRanges(s.Slots))
	}
	want := []string{"AddSlots c-leader-0 5401-5449", "BumpEpoch c-leader-0 ", "SetSlotNode c-leader-0 5450-5461"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("steps %q; want %q", kinds, want)
	}
	assertNoBusyAddSlots(t, members, plan.Steps)
	assertTakesNoClaimedSlot(t, members, plan.Steps)
}

// While two pods claim one slot by their own word, a bump would pick the winner: Redis picks
// it by the epochs they have, and the plan waits.
func TestNoBumpWhileTheLeaderClaimsASlotAnotherClaimsToo(t *testing.T) {
	nodes := drainedFour()
	nodes[0].slots = "0-5460 5462" // leader-1 claims 5462 too
	members := staleViews(t, nodes, map[string]map[string]string{"c-leader-0": {"c-leader-3": "5461"}})
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "both claim slots 5462") {
		t.Fatalf("want a wait naming the double claim, got %+v", plan)
	}
}

// assertNoBusyAddSlots fails if an ADDSLOTS names a slot its target's view maps to any node:
// Redis refuses it ("Slot is already busy"), and the plan would ask it again for ever.
func assertNoBusyAddSlots(t *testing.T, members []Member, steps []Step) {
	t.Helper()
	for _, s := range steps {
		if s.Kind != StepAddSlots {
			continue
		}
		on := slices.IndexFunc(members, func(m Member) bool { return m.Pod == s.On })
		if on < 0 || members[on].View == nil {
			t.Fatalf("ADDSLOTS on %s, which does not answer", s.On)
		}
		for _, slot := range slotList(s.Slots) {
			if n, ok := members[on].View.SlotOwner(slot); ok {
				t.Fatalf("ADDSLOTS %d on %s, whose view maps it to %s: Redis answers busy", slot, s.On, short(n.ID))
			}
		}
	}
}

// assertTakesNoClaimedSlot fails if a SETSLOT NODE gives away a slot a member other than its
// new owner claims by its own word (it would lose that shard's keys), names its owner by
// another ID than the owner's, or runs on a replica; and if a bump is not followed by the
// owner's claim.
func assertTakesNoClaimedSlot(t *testing.T, members []Member, steps []Step) {
	t.Helper()
	ids := map[string]redis.Node{}
	for i := range members {
		if me, ok := myself(&members[i]); ok {
			ids[members[i].Pod] = me
		}
	}
	for i, s := range steps {
		switch s.Kind {
		case StepBumpEpoch:
			if !ids[s.On].IsMaster() {
				t.Fatalf("bump on %s, which is no master", s.On)
			}
			if !slices.ContainsFunc(steps[i+1:], func(o Step) bool { return o.Kind == StepSetSlotNode && o.On == s.On && o.To == s.On }) {
				t.Fatalf("bump on %s with no claim after it: %v", s.On, steps)
			}
		case StepSetSlotNode:
			if !ids[s.On].IsMaster() || !ids[s.To].IsMaster() || ids[s.To].ID != s.NodeID || len(s.Slots) == 0 {
				t.Fatalf("SETSLOT NODE must run on a master and name a master by its ID: %+v", s)
			}
			for pod, me := range ids {
				if pod == s.To {
					continue
				}
				for _, slot := range slotList(s.Slots) {
					if me.OwnsSlot(slot) {
						t.Fatalf("SETSLOT %d NODE %s takes the slot from %s, which claims it", slot, s.To, pod)
					}
				}
			}
		}
	}
}
