package clusterplan

import (
	"strings"
	"testing"
)

func outdated(members []Member, pods ...string) []Member {
	for i := range members {
		for _, p := range pods {
			if members[i].Pod == p {
				members[i].Outdated = true
			}
		}
	}
	return members
}

var allPods = []string{"c-leader-0", "c-leader-1", "c-leader-2", "c-follower-0", "c-follower-1", "c-follower-2"}

func TestRollReplacesReplicasFirstThenHandsEachShardOver(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	if got := Roll(threeByThree, c.members(nodes), false); got != (RollAction{}) {
		t.Errorf("nothing outdated: want no action, got %+v", got)
	}
	if got := Roll(threeByThree, outdated(c.members(nodes), allPods...), false); got.Delete != "c-follower-2" {
		t.Errorf("want follower-2 replaced first, got %+v", got)
	}
	leaders := outdated(c.members(nodes), "c-leader-0", "c-leader-1", "c-leader-2")
	if got := Roll(threeByThree, leaders, false); got.Failover != "c-follower-2" {
		t.Errorf("want leader-2's shard handed to follower-2 first, got %+v", got)
	}

	// After the hand-over leader-2 is a replica: it is replaced, and the planner does not
	// give it its shard back before it is new.
	nodes[2].master, nodes[2].slots = "c-follower-2", ""
	nodes[5].master, nodes[5].slots = "", "10923-16383"
	c = cluster{known: nodes}
	members := outdated(c.members(nodes), "c-leader-0", "c-leader-1", "c-leader-2")
	if got := Roll(threeByThree, members, false); got.Delete != "c-leader-2" {
		t.Errorf("want the handed-over leader-2 replaced, got %+v", got)
	}
	if plan := Compute(threeByThree, members); !plan.Converged() {
		t.Errorf("an outdated leader pod does not take its shard back: %+v", plan)
	}
	members[2].Outdated = false
	if plan := Compute(threeByThree, members); len(plan.Steps) != 1 || plan.Steps[0].Kind != StepFailover {
		t.Errorf("the updated leader pod takes its shard back: %+v", plan)
	}
}

func TestRollWaitsForAReplicaInSync(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := outdated(c.members(nodes), "c-leader-1")
	members[4].Replication.ReplicationState = "sync"
	if got := Roll(threeByThree, members, true); !strings.Contains(got.Wait, "c-follower-1 is syncing") {
		t.Errorf("want a wait for follower-1, got %+v", got)
	}
}

func TestRollOfAMasterWithoutReplica(t *testing.T) {
	nodes := healthy()[:3]
	c := cluster{known: nodes}
	design := Design{Leaders: 3}
	members := outdated(c.members(nodes), "c-leader-1")
	if got := Roll(design, members, false); !strings.Contains(got.Problem, "would lose its 5461 slots") {
		t.Errorf("want the data-losing replacement refused, got %+v", got)
	}
	if got := Roll(design, members, true); got.Delete != "c-leader-1" {
		t.Errorf("with a volume the master is replaced, got %+v", got)
	}
}
