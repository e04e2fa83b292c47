package clusterplan

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// drainedFour is fourByFour after a 4 → 3 scale-in moved leader-3's slots back: leader-3 is an
// empty master, follower-3 its replica, and every view agrees.
func drainedFour() []node {
	nodes := fourByFour()
	nodes[7].master = "c-leader-3"
	return nodes
}

// withStaleView gives the member of pod the view it would have if it still mapped slot to
// leader-3, its owner's range in that view starting one slot later.
func withStaleView(t *testing.T, members []Member, nodes []node, pod string, owner string, slot int, ownerSlots string) []Member {
	t.Helper()
	stale := slices.Clone(nodes)
	for i := range stale {
		switch stale[i].pod {
		case owner:
			stale[i].slots = ownerSlots
		case "c-leader-3":
			stale[i].slots = strings.TrimSpace(stale[i].slots + " " + strconv.Itoa(slot))
		}
	}
	c := cluster{known: stale}
	out := slices.Clone(members)
	for i := range out {
		if out[i].Pod == pod {
			out[i].View = c.viewOf(c.byPod(pod), stale)
		}
	}
	return out
}

func TestDepartingMasterStaysWhileAnotherViewMapsASlotToIt(t *testing.T) {
	nodes := drainedFour()
	c := cluster{known: nodes}
	agreed := c.members(nodes)
	leader1 := c.byPod("c-leader-1").id()
	for _, tc := range []struct {
		name          string
		members       []Member
		leaders       int
		reason        string
		steps         []Step // Kind, On, NodeID, To, Slots compared
		freeFollowers bool
	}{
		{
			name:    "every view agrees",
			members: agreed,
			leaders: 3, freeFollowers: true,
		},
		{
			// leader-1 took slot 5462 last; the SETSLOT NODE to leader-2 was lost, and
			// leader-1's epoch did not beat leader-3's in leader-2's gossip.
			name:    "a master still maps the last moved slot to it",
			members: withStaleView(t, agreed, nodes, "c-leader-2", "c-leader-1", 5462, "5463-10922"),
			leaders: 4,
			reason:  "c-leader-2's view still maps 1 slots (5462) to c-leader-3, which serves none",
			steps: []Step{
				{Kind: StepBumpEpoch, On: "c-leader-1", NodeID: leader1},
				{Kind: StepSetSlotNode, On: "c-leader-2", NodeID: leader1, To: "c-leader-1", Slots: slotRanges([]int{5462})},
			},
			freeFollowers: true, // follower-3 holds none of the slot's keys, leader-1 has them
		},
		{
			// follower-0 still maps slot 100 to leader-1, which gave it to leader-0: a new
			// epoch for leader-1 would make that mapping win, and leader-0 would lose the slot
			// and its keys to an UPDATE. The lagging master is told, leader-1 is not bumped
			// until the views agree (slotMapsAgree), and leader-3 stays.
			name: "the owner is not bumped while a view maps to it a slot it gave away",
			members: withViewSlots(t, withStaleView(t, agreed, nodes, "c-leader-2", "c-leader-1", 5462, "5463-10922"), nodes,
				"c-follower-0", map[string]string{"c-leader-0": "0-99 101-5461", "c-leader-1": "100 5462-10922"}),
			leaders: 4,
			reason:  "c-leader-2's view still maps 1 slots (5462) to c-leader-3, which serves none",
			steps: []Step{
				{Kind: StepSetSlotNode, On: "c-leader-2", NodeID: leader1, To: "c-leader-1", Slots: slotRanges([]int{5462})},
			},
			freeFollowers: true,
		},
		{
			// A replica takes no SETSLOT: the owner's bumped epoch reaches it by gossip.
			name:    "a replica still maps the slot to it",
			members: withStaleView(t, agreed, nodes, "c-follower-0", "c-leader-1", 5462, "5463-10922"),
			leaders: 4,
			reason:  "c-follower-0's view still maps 1 slots (5462) to c-leader-3",
			steps:   []Step{{Kind: StepBumpEpoch, On: "c-leader-1", NodeID: leader1}},
		},
		{
			name:    "a designed master does not answer",
			members: silence(agreed, "c-leader-2"),
			leaders: 4,
			reason:  "c-leader-2 does not answer: whether its view still maps slots to c-leader-3 is unknown",
		},
		{
			name:    "another master still imports a slot from it",
			members: importing(t, nodes, "c-leader-1", 5462, "c-leader-3"),
			leaders: 4,
			reason:  "c-leader-1 is importing slot 5462 from c-leader-3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanScaleIn(threeByThree, tc.members)
			if p.Leaders != tc.leaders || !strings.Contains(p.Reason, tc.reason) || (tc.reason == "" && p.Reason != "") {
				t.Errorf("PlanScaleIn = %d leaders (%q); want %d (%q)", p.Leaders, p.Reason, tc.leaders, tc.reason)
			}
			if tc.freeFollowers && p.Followers != 3 {
				t.Errorf("follower-3 is kept (%d followers, %q)", p.Followers, p.Reason)
			}
			if len(p.Steps) != len(tc.steps) {
				t.Fatalf("steps %v, want %v", p.Steps, tc.steps)
			}
			for i, want := range tc.steps {
				got := p.Steps[i]
				if got.Kind != want.Kind || got.On != want.On || got.NodeID != want.NodeID || got.To != want.To || formatRanges(got.Slots) != formatRanges(want.Slots) {
					t.Errorf("step %d = %v (node %s, to %s, slots %s); want %v to %s slots %s", i, got, short(got.NodeID), got.To, formatRanges(got.Slots), want.Kind, want.To, formatRanges(want.Slots))
				}
			}
			if l, f, r := Keep(threeByThree, tc.members); l != p.Leaders || f != p.Followers || r != p.Reason {
				t.Errorf("Keep disagrees with PlanScaleIn: %d, %d, %q", l, f, r)
			}
		})
	}
}

// withViewSlots gives the member of pod a view in which the pods named in slots serve those
// slots instead of their own.
func withViewSlots(t *testing.T, members []Member, nodes []node, pod string, slots map[string]string) []Member {
	t.Helper()
	seen := slices.Clone(nodes)
	for i := range seen {
		if s, ok := slots[seen[i].pod]; ok {
			seen[i].slots = s
		}
	}
	c := cluster{known: seen}
	out := slices.Clone(members)
	for i := range out {
		if out[i].Pod == pod {
			out[i].View = c.viewOf(c.byPod(pod), seen)
		}
	}
	return out
}

func silence(members []Member, pod string) []Member {
	out := slices.Clone(members)
	for i := range out {
		if out[i].Pod == pod {
			out[i].View = nil
		}
	}
	return out
}

// importing: pod's own line shows slot importing from the other pod, which serves nothing.
func importing(t *testing.T, nodes []node, pod string, slot int, from string) []Member {
	t.Helper()
	nodes = slices.Clone(nodes)
	for i := range nodes {
		if nodes[i].pod == pod {
			nodes[i].importing = map[int]string{slot: from}
		}
	}
	c := cluster{known: nodes}
	return c.members(nodes)
}
