package clusterplan

import (
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// TestStaleSlotMapsAreCorrectedBeforeAnythingMoves: a view that maps a slot to a master which
// no longer claims it holds the plan before any slot move; the owner tells that viewer itself
// (MEET) when its config epoch is greater, or first takes a new one (BUMPEPOCH), unless a
// view maps to the owner slots it does not claim either: those would win in turn.
func TestStaleSlotMapsAreCorrectedBeforeAnythingMoves(t *testing.T) {
	// Fixture epochs: c-leader-0 1, c-leader-1 2, c-leader-2 3.
	type mapping struct {
		viewer, to string
		slot       int
	}
	for _, tc := range []struct {
		name     string
		stale    []mapping
		silent   string
		want     []Step // kind and pod; for a MEET, IP is the viewer's
		wantWait bool
	}{
		{name: "views agree"},
		{name: "the owner's epoch is greater: it tells the viewer",
			stale: []mapping{{viewer: "c-follower-0", to: "c-leader-1", slot: 10923}},
			want:  []Step{{Kind: StepMeet, On: "c-leader-2", IP: "10.0.0.4"}}},
		{name: "the stale master's epoch is greater: the owner takes a new one",
			stale: []mapping{{viewer: "c-follower-2", to: "c-leader-1", slot: 100}},
			want:  []Step{{Kind: StepBumpEpoch, On: "c-leader-0"}}},
		{name: "a view maps unclaimed slots to the owner too: only the safe MEET",
			stale: []mapping{{viewer: "c-follower-2", to: "c-leader-1", slot: 100}, {viewer: "c-follower-1", to: "c-leader-0", slot: 5462}},
			want:  []Step{{Kind: StepMeet, On: "c-leader-1", IP: "10.0.0.5"}}},
		{name: "a view of a master that does not answer says nothing",
			stale: []mapping{{viewer: "c-follower-0", to: "c-leader-1", slot: 10923}}, silent: "c-leader-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := healthy()
			c := cluster{known: nodes}
			members := c.members(nodes)
			for _, s := range tc.stale {
				for i := range members {
					if members[i].Pod != s.viewer {
						continue
					}
					for j := range members[i].View.Nodes {
						if members[i].View.Nodes[j].ID == c.byPod(s.to).id() {
							members[i].View.Nodes[j].Slots = append(members[i].View.Nodes[j].Slots, redis.SlotRange{Start: s.slot, End: s.slot})
						}
					}
				}
			}
			o, _, ok := index(threeByThree, members)
			if !ok {
				t.Fatal("the fixture does not index")
			}
			if tc.silent != "" {
				delete(o.self, tc.silent) // as for a member whose CLUSTER NODES failed
			}
			plan := slotMapsAgree(o)
			if len(plan.Steps) != len(tc.want) {
				t.Fatalf("want %d steps %v, got %+v", len(tc.want), tc.want, plan)
			}
			for i, want := range tc.want {
				got := plan.Steps[i]
				if got.Kind != want.Kind || got.On != want.On || want.Kind == StepMeet && got.IP != want.IP {
					t.Errorf("step %d: want %s on %s (%s), got %v", i, want.Kind, want.On, want.IP, got)
				}
			}
			if len(tc.stale) > 0 && tc.silent == "" {
				if full := Compute(threeByThree, members); full.Converged() || len(full.Steps) == 0 && full.Wait == "" {
					t.Errorf("a stale view must hold the cluster from converging, got %+v", full)
				}
			}
		})
	}
}
