package clusterplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// TestMastersSharingAConfigEpochAreGivenNewOnes: of masters at one config epoch, every one but
// the one of the greatest node ID is bumped, as Redis settles the collisions; distinct epochs,
// or masters whose own views claim the same slots (a master back with a stale claim, which a
// bump would make win), ask for nothing.
func TestMastersSharingAConfigEpochAreGivenNewOnes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		epochs map[string]int // pod → config epoch; the others keep their own
		stale  bool           // leader-1 is back claiming the slots follower-1 took over
		want   int            // BUMPEPOCH steps
	}{
		{name: "distinct epochs", want: 0},
		{name: "two leaders at one epoch", epochs: map[string]int{"c-leader-0": 7, "c-leader-2": 7}, want: 1},
		{name: "every leader at epoch 0 after a bootstrap", epochs: map[string]int{"c-leader-0": 0, "c-leader-1": 0, "c-leader-2": 0}, want: 2},
		{name: "a replica at its master's epoch", epochs: map[string]int{"c-leader-0": 9, "c-follower-0": 9}, want: 0},
		{name: "a stale claim", epochs: map[string]int{"c-leader-1": 7, "c-follower-1": 7}, stale: true, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := healthy()
			for i := range nodes {
				if e, ok := tc.epochs[nodes[i].pod]; ok {
					// 0 would mean "its own" to the fixture; -1 stands for Redis's epoch 0.
					nodes[i].epoch = e
					if e == 0 {
						nodes[i].epoch = -1
					}
				}
			}
			if tc.stale {
				nodes[4].master, nodes[4].slots = "", "5462-10922" // follower-1 promoted...
			}
			c := cluster{known: nodes}
			members := c.members(nodes)
			o, _, ok := index(threeByThree, members)
			if !ok {
				t.Fatal("the fixture does not index")
			}
			plan := distinctEpochs(o)
			if got := len(plan.Steps); got != tc.want {
				t.Fatalf("want %d BUMPEPOCH steps, got %+v", tc.want, plan.Steps)
			}
			var bumped []string
			for _, s := range plan.Steps {
				if s.Kind != StepBumpEpoch {
					t.Errorf("want BUMPEPOCH, got %v", s)
				}
				bumped = append(bumped, s.On)
			}
			// The master of the greatest node ID among those that collide keeps its epoch.
			var colliding []string
			for pod := range tc.epochs {
				if !strings.Contains(pod, "follower") {
					colliding = append(colliding, pod)
				}
			}
			if tc.want > 0 {
				slices.SortFunc(colliding, func(a, b string) int { return strings.Compare(c.byPod(a).id(), c.byPod(b).id()) })
				keeper := colliding[len(colliding)-1]
				if slices.Contains(bumped, keeper) {
					t.Errorf("%s has the greatest node ID of the colliding masters: Redis would not bump it, got %v", keeper, bumped)
				}
			}
		})
	}
}

// TestCollidingEpochsAreSettledOnceTheViewsAgree: the plan bumps an epoch only after the
// stages before it have nothing to do, and a cluster whose masters share an epoch is not
// converged.
func TestCollidingEpochsAreSettledOnceTheViewsAgree(t *testing.T) {
	nodes := healthy()
	nodes[0].epoch, nodes[1].epoch = 5, 5
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepBumpEpoch, 1)
	if plan.Converged() {
		t.Fatal("masters sharing a config epoch are no converged cluster")
	}
}

// TestAMastersNewEpochIsWaitedForEverywhere: a member that still knows a master at an older
// config epoch (the gossip of a bump or a failover has not reached it) is waited for: its
// replica, stopped now, would run for election claiming the old epoch and be denied every vote.
func TestAMastersNewEpochIsWaitedForEverywhere(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := c.members(nodes)
	leader1 := c.byPod("c-leader-1").id()
	for i := range members[4].View.Nodes { // follower-1's view of its master
		if members[4].View.Nodes[i].ID == leader1 {
			members[4].View.Nodes[i].ConfigEpoch--
		}
	}
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "c-follower-1 knows master c-leader-1 at config epoch") {
		t.Fatalf("want a wait for follower-1 to hear leader-1's epoch, got %+v", plan)
	}
}

// TestACollisionIsSettledWithoutMakingAStaleViewWin: of two masters at one config epoch, the
// one of the smaller node ID is not bumped while a view maps to it slots it does not claim (a
// move that view has not heard of): the new epoch would make that view's mapping win, and its
// UPDATE would take the slots, and with Redis before 7.2 their keys, from the true owner. The
// other master is bumped instead; when views map unclaimed slots to both, the plan waits.
func TestACollisionIsSettledWithoutMakingAStaleViewWin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		staleTo   []int // which of the two colliding leaders (0: smaller ID) a view maps slots to
		wantBump  int   // which one is bumped, -1 none
		wantWaits bool
	}{
		{name: "no stale view", wantBump: 0},
		{name: "a view maps slots to the smaller ID", staleTo: []int{0}, wantBump: 1},
		{name: "a view maps slots to the greater ID", staleTo: []int{1}, wantBump: 0},
		{name: "views map slots to both", staleTo: []int{0, 1}, wantBump: -1, wantWaits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := healthy()
			nodes[0].epoch, nodes[1].epoch = 5, 5 // c-leader-0 and c-leader-1
			c := cluster{known: nodes}
			members := c.members(nodes)
			pair := []string{"c-leader-0", "c-leader-1"}
			slices.SortFunc(pair, func(a, b string) int { return strings.Compare(c.byPod(a).id(), c.byPod(b).id()) })
			// c-follower-2's view maps c-leader-2's first slots to the stale pod as well.
			for _, which := range tc.staleTo {
				id := c.byPod(pair[which]).id()
				view := members[5].View
				for i := range view.Nodes {
					if view.Nodes[i].ID == id {
						view.Nodes[i].Slots = append(view.Nodes[i].Slots, redis.SlotRange{Start: 10923 + which, End: 10923 + which})
					}
				}
			}
			o, _, ok := index(threeByThree, members)
			if !ok {
				t.Fatal("the fixture does not index")
			}
			plan := distinctEpochs(o)
			if tc.wantBump < 0 {
				if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "share config epoch 5") {
					t.Fatalf("want no step and a wait naming the collision, got %+v", plan)
				}
				return
			}
			if len(plan.Steps) != 1 || plan.Steps[0].Kind != StepBumpEpoch || plan.Steps[0].On != pair[tc.wantBump] {
				t.Fatalf("want BUMPEPOCH on %s, got %+v", pair[tc.wantBump], plan.Steps)
			}
		})
	}
}
