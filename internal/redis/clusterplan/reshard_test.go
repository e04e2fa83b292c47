package clusterplan

import (
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
	assertSteps(t, plan, StepMigrate, 1)
	s := plan.Steps[0]
	if s.On != "c-leader-0" || s.To != "c-leader-3" || s.NodeID != c.byPod("c-leader-3").id() || s.IP != "10.0.0.7" {
		t.Fatalf("want leader-0's surplus moved to leader-3 first, got %v", s)
	}
	// leader-0 keeps its fair share of 4096 slots from the bottom; one plan moves at most
	// MaxSlotsPerPlan slots.
	if got := formatRanges(s.Slots); got != "4096-5119" {
		t.Errorf("moved %s, want 4096-5119", got)
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
	if leaders != 4 || followers != 3 || !strings.Contains(reason, "c-leader-3 still serves 4096 slots") {
		t.Errorf("Keep = %d leaders, %d followers (%q); want leader-3 kept, follower-3 (a replica) free to go", leaders, followers, reason)
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
	if moved != MaxSlotsPerPlan {
		t.Errorf("moved %d slots in one plan, want %d", moved, MaxSlotsPerPlan)
	}
	if s := plan.Steps[0]; s.To != "c-leader-0" || formatRanges(s.Slots) != "4096-5119" {
		t.Errorf("leader-0 takes back its old range first, got %v", s)
	}

	// Drained: Redis made the emptied leader-3 (and its follower) replicas of the node that
	// took its last slot. The pods may go now, and until they do the plan waits for it.
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
