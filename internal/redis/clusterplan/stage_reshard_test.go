package clusterplan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fourByFour is healthy() after a scale-out to four shards: leader-3 and follower-3 are new,
// met, and empty.
func fourByFour() []node {
	return append(healthy(),
		node{pod: "c-leader-3", ip: "10.0.0.7"},
		node{pod: "c-follower-3", ip: "10.0.0.8"})
}

var four = Design{Leaders: 4, Followers: 4}

func TestScaleOutAttachesTheNewFollowerThenMovesSlotsToTheNewLeader(t *testing.T) {
	nodes := fourByFour()
	c := cluster{known: nodes}
	plan := Compute(four, c.members(nodes))
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-follower-3" || s.NodeID != c.byPod("c-leader-3").id() {
		t.Fatalf("the new follower must replicate the new, still empty leader: %v", s)
	}

	nodes[7].master = "c-leader-3"
	c = cluster{known: nodes}
	plan = Compute(four, c.members(nodes))
	assertSteps(t, plan, StepMigrate, 3) // each old leader's surplus
	s := plan.Steps[0]
	if s.On != "c-leader-0" || s.To != "c-leader-3" || s.NodeID != c.byPod("c-leader-3").id() || s.IP != "10.0.0.7" {
		t.Fatalf("want leader-0's surplus moved to leader-3 first, got %v", s)
	}
	// leader-0 keeps its fair share of 4096 slots from the bottom.
	if got := formatRanges(s.Slots); got != "4096-5461" {
		t.Errorf("moved %s, want 4096-5461", got)
	}
}

func TestScaleOutEndsWithEveryLeaderAtItsShare(t *testing.T) {
	nodes := fourByFour()
	nodes[7].master = "c-leader-3"
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-4095", "5462-9557", "10923-15018"
	nodes[6].slots = "4096-5461 9558-10922 15019-16383"
	c := cluster{known: nodes}
	if plan := Compute(four, c.members(nodes)); !plan.Converged() {
		t.Fatalf("four shards of 4096 slots are converged, got %+v", plan)
	}
	// A few slots moved by hand are within the tolerance and stay where they are.
	nodes[0].slots, nodes[6].slots = "0-4105", "4106-5461 9558-10922 15019-16383"
	c = cluster{known: nodes}
	if plan := Compute(four, c.members(nodes)); !plan.Converged() {
		t.Fatalf("10 slots off is within the tolerance, got %+v", plan)
	}
}

func TestScaleInDrainsTheDepartingLeaderBeforeItsPodGoes(t *testing.T) {
	nodes := fourByFour()
	nodes[7].master = "c-leader-3"
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-4095", "5462-9557", "10923-15018"
	nodes[6].slots = "4096-5461 9558-10922 15019-16383"
	c := cluster{known: nodes}
	members := c.members(nodes)

	leaders, followers, reason := Keep(threeByThree, members)
	if leaders != 4 || followers != 4 || !strings.Contains(reason, "c-leader-3 still serves 4096 slots") {
		t.Errorf("Keep = %d leaders, %d followers (%q); want leader-3 kept, and follower-3 with it: the shard keeps its replica while it serves slots", leaders, followers, reason)
	}

	plan := Compute(threeByThree, members)
	if len(plan.Steps) == 0 {
		t.Fatalf("want slot moves, got %+v", plan)
	}
	moved := 0
	for _, s := range plan.Steps {
		if s.Kind != StepMigrate || s.On != "c-leader-3" {
			t.Fatalf("only leader-3 gives slots away, got %v", s)
		}
		moved += redis.CountSlots(s.Slots)
	}
	if moved != 4096 {
		t.Errorf("moved %d slots in one plan, want all 4096", moved)
	}
	if s := plan.Steps[0]; s.To != "c-leader-0" || formatRanges(s.Slots) != "4096-5461" {
		t.Errorf("leader-0 takes back its old range first, got %v", s)
	}

	// Drained, with replica migration off on the departing pods: leader-3 stays an empty
	// master, follower-3 its replica. Both may go now.
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-5461", "5462-10922", "10923-16383"
	nodes[6].slots = ""
	c = cluster{known: nodes}
	if leaders, followers, reason := Keep(threeByThree, c.members(nodes)); leaders != 3 || followers != 3 || reason != "" {
		t.Errorf("Keep = %d, %d (%q); want the design once leader-3 is empty", leaders, followers, reason)
	}

	// Drained by a Redis that made the emptied leader-3 (and its follower) replicas of the
	// node that took its last slot. The pods may go now, and until they do the plan waits.
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-5461", "5462-10922", "10923-16383"
	nodes[6].slots, nodes[6].master = "", "c-leader-2"
	nodes[7].master = "c-leader-2"
	c = cluster{known: nodes}
	members = c.members(nodes)
	if leaders, followers, reason := Keep(threeByThree, members); leaders != 3 || followers != 3 || reason != "" {
		t.Errorf("Keep = %d, %d (%q); want the design once leader-3 is empty", leaders, followers, reason)
	}
	plan = Compute(threeByThree, members)
	if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, "c-leader-3, c-follower-3 serve no slots") {
		t.Errorf("want a wait for the pods to be removed, got %+v", plan)
	}
}

// Doubling the shards and halving them back pairs each giver with its own receiver, so that
// the moves run side by side.
func TestThreeToSixAndBackMoveBetweenDistinctPairs(t *testing.T) {
	six := Design{Leaders: 6, Followers: 6}
	nodes := append(healthy(),
		node{pod: "c-leader-3", ip: "10.0.0.7"}, node{pod: "c-leader-4", ip: "10.0.0.8"}, node{pod: "c-leader-5", ip: "10.0.0.9"},
		node{pod: "c-follower-3", ip: "10.0.0.10", master: "c-leader-3"}, node{pod: "c-follower-4", ip: "10.0.0.11", master: "c-leader-4"},
		node{pod: "c-follower-5", ip: "10.0.0.12", master: "c-leader-5"})
	c := cluster{known: nodes}
	plan := Compute(six, c.members(nodes))
	assertDistinctPairs(t, plan, 3)

	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-2730", "5462-8191", "10923-13652"
	nodes[6].slots, nodes[7].slots, nodes[8].slots = "2731-5461", "8192-10922", "13653-16383"
	c = cluster{known: nodes}
	if plan := Compute(six, c.members(nodes)); !plan.Converged() {
		t.Fatalf("six balanced shards are converged, got %+v", plan)
	}
	plan = Compute(threeByThree, c.members(nodes))
	assertDistinctPairs(t, plan, 3)
}

func assertDistinctPairs(t *testing.T, plan Plan, want int) {
	t.Helper()
	sources, targets := map[string]bool{}, map[string]bool{}
	for _, s := range plan.Steps {
		if s.Kind != StepMigrate {
			t.Fatalf("want slot moves only, got %v", s)
		}
		sources[s.On], targets[s.To] = true, true
	}
	if len(plan.Steps) != want || len(sources) != want || len(targets) != want {
		t.Errorf("want %d moves between distinct pairs, got %+v", want, plan.Steps)
	}
}

func TestEarlyMeetsIntroduceLonePodsFromAMasterWithSlots(t *testing.T) {
	nodes := fourByFour()
	c := cluster{known: healthy()}
	steps := EarlyMeets(c.members(nodes[:7], "c-leader-3")) // follower-3 does not run yet
	if len(steps) != 3 {
		t.Fatalf("want every master to meet leader-3, got %v", steps)
	}
	for i, s := range steps {
		if s.Kind != StepMeet || s.On != fmt.Sprintf("c-leader-%d", i) || s.IP != "10.0.0.7" {
			t.Errorf("want leader-%d to meet leader-3, got %v", i, s)
		}
	}
	// Once known, nothing more; a new cluster (every pod alone) is left to its bootstrap.
	c = cluster{known: nodes}
	if steps := EarlyMeets(c.members(nodes)); len(steps) != 0 {
		t.Errorf("known pods need no meet, got %v", steps)
	}
	alone := []node{{pod: "c-leader-0", ip: "10.0.0.1"}, {pod: "c-leader-1", ip: "10.0.0.2"}}
	c = cluster{known: alone}
	if steps := EarlyMeets(c.members(alone, "c-leader-0", "c-leader-1")); len(steps) != 0 {
		t.Errorf("a new cluster is met by its bootstrap, got %v", steps)
	}
}

func TestMembersThatOnlyGossipLacksAreMetDirectly(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := c.members(nodes)
	// leader-1 and follower-2 both know the seed but not each other yet.
	var without1, without2 []node
	for _, n := range nodes {
		if n.pod != "c-follower-2" {
			without1 = append(without1, n)
		}
		if n.pod != "c-leader-1" {
			without2 = append(without2, n)
		}
	}
	members[1].View = c.viewOf(nodes[1], without1)
	members[5].View = c.viewOf(nodes[5], without2)
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepMeet, 1)
	if s := plan.Steps[0]; s.On != "c-leader-1" || s.IP != nodes[5].ip {
		t.Errorf("want leader-1 to meet follower-2 directly, got %v", s)
	}
}

func TestDepartingReplicaIsKeptOnlyWhileItsShardNeedsIt(t *testing.T) {
	// follower-3 replicates leader-1, which serves slots and whose designed follower-1 went
	// to leader-3: follower-3 is leader-1's only replica and stays.
	nodes := fourByFour()
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-5461", "5462-10922", "10923-16383"
	nodes[4].master, nodes[7].master = "c-leader-3", "c-leader-1"
	c := cluster{known: nodes}
	if _, followers, reason := Keep(threeByThree, c.members(nodes)); followers != 4 || !strings.Contains(reason, "c-follower-3 is the replica of c-leader-1") {
		t.Errorf("Keep = %d followers (%q); want follower-3 kept as leader-1's only replica", followers, reason)
	}
	// With follower-1 back on leader-1, follower-3 is spare and goes.
	nodes[4].master = "c-leader-1"
	c = cluster{known: nodes}
	if _, followers, reason := Keep(threeByThree, c.members(nodes)); followers != 3 || reason != "" {
		t.Errorf("Keep = %d followers (%q); want follower-3 free to go", followers, reason)
	}
	// A design without replicas keeps none for designed masters.
	nodes[4].master = "c-leader-3"
	c = cluster{known: nodes}
	if _, followers, reason := Keep(Design{Leaders: 3, Followers: 0}, c.members(nodes)); followers != 0 || reason != "" {
		t.Errorf("Keep = %d followers (%q); want no follower kept for a design without replicas", followers, reason)
	}
}

func TestDepartingPodThatDoesNotAnswerIsKept(t *testing.T) {
	nodes := fourByFour()
	c := cluster{known: nodes}
	members := c.members(nodes)
	members[7].View = nil
	if _, followers, reason := Keep(threeByThree, members); followers != 4 || !strings.Contains(reason, "c-follower-3 does not answer") {
		t.Errorf("Keep = %d followers (%q); want follower-3 kept while what it holds is unknown", followers, reason)
	}
}

func TestReplicaStaysWithItsLeavingMasterUntilItIsEmptiedThenMoves(t *testing.T) {
	// follower-2 replicates leader-3, which is leaving with slots: leader-2 lacks a replica,
	// but that is no problem while the slots move.
	nodes := fourByFour()
	nodes[0].slots, nodes[1].slots, nodes[2].slots = "0-4095", "5462-9557", "10923-15018"
	nodes[6].slots = "4096-5461 9558-10922 15019-16383"
	nodes[5].master = "c-leader-3"
	nodes[7].master = "c-leader-2"
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	if len(plan.Problems) > 0 || len(plan.Steps) == 0 || plan.Steps[0].Kind != StepMigrate {
		t.Fatalf("want the slots moved and no problem, got %+v", plan)
	}

	// Once leader-3 is empty, follower-2 goes to the shard that lacks a replica.
	nodes[2].slots, nodes[6].slots = "10923-16383", ""
	nodes[0].slots, nodes[1].slots = "0-5461", "5462-10922"
	c = cluster{known: nodes}
	plan = Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.On != "c-follower-2" || s.NodeID != c.byPod("c-leader-2").id() {
		t.Errorf("want follower-2 to replicate leader-2, got %v", s)
	}
}

func TestSpareReplicaMovesToTheShardThatLacksOne(t *testing.T) {
	nodes := healthy()
	nodes[5].master = "c-leader-0"
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepReplicate, 1)
	if s := plan.Steps[0]; s.NodeID != c.byPod("c-leader-2").id() || (s.On != "c-follower-0" && s.On != "c-follower-2") {
		t.Errorf("want one of leader-0's two replicas moved to leader-2, got %v", s)
	}
}

func TestInterruptedMoveIsFinishedForward(t *testing.T) {
	nodes := healthy()
	nodes[0].migrating = map[int]string{100: "c-leader-1"}
	nodes[1].importing = map[int]string{100: "c-leader-0"}
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepMigrate, 1)
	if s := plan.Steps[0]; s.On != "c-leader-0" || s.To != "c-leader-1" || formatRanges(s.Slots) != "100" {
		t.Errorf("want slot 100 moved on to leader-1, got %v", s)
	}

	// Only the destination remembers (the operator stopped between the two SETSLOTs).
	nodes[0].migrating = nil
	c = cluster{known: nodes}
	plan = Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepMigrate, 1)
	if s := plan.Steps[0]; s.On != "c-leader-0" || s.To != "c-leader-1" {
		t.Errorf("want the move finished from the owner, got %v", s)
	}

	// Importing from a node that does not serve the slot is not guessed at.
	nodes[1].importing = map[int]string{100: "c-leader-2"}
	c = cluster{known: nodes}
	plan = Compute(threeByThree, c.members(nodes))
	if len(plan.Steps) != 0 || len(plan.Problems) != 1 || !strings.Contains(plan.Problems[0], "does not serve it") {
		t.Errorf("want a problem naming the odd import, got %+v", plan)
	}
}

// Valkey 8 replicates a primary's slot-move states to its replicas, whose own CLUSTER NODES
// line then shows them too: a move is finished between the masters only, never to or from a
// replica (which refuses SETSLOT: "Please use SETSLOT only with masters").
func TestInterruptedMoveIgnoresTheStatesReplicasCopy(t *testing.T) {
	nodes := healthy()
	nodes[0].migrating = map[int]string{100: "c-leader-1"}
	nodes[1].importing = map[int]string{100: "c-leader-0"}
	nodes[3].migrating = map[int]string{100: "c-leader-1"} // follower-0, replica of leader-0
	nodes[4].importing = map[int]string{100: "c-leader-0"} // follower-1, replica of leader-1
	c := cluster{known: nodes}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepMigrate, 1)
	if s := plan.Steps[0]; s.On != "c-leader-0" || s.To != "c-leader-1" || formatRanges(s.Slots) != "100" {
		t.Errorf("want slot 100 moved on from leader-0 to leader-1, got %v", s)
	}

	// Only the destination's replica remembers: nothing a master says is half moved.
	nodes[0].migrating, nodes[1].importing, nodes[3].migrating = nil, nil, nil
	c = cluster{known: nodes}
	plan = Compute(threeByThree, c.members(nodes))
	for _, s := range plan.Steps {
		if s.Kind == StepMigrate {
			t.Errorf("a move finished from what a replica copied: %v", s)
		}
	}
}
