package clusterplan

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// placeOn puts each pod on the node given for it.
func placeOn(members []Member, nodeOf map[string]string) []Member {
	for i := range members {
		if n, ok := nodeOf[members[i].Pod]; ok {
			members[i].NodeName = n
		}
	}
	return members
}

// A follower on its master's node swaps with a replica of another shard in two steps (the
// newcomer joins while the colocated one still covers the shard, then the colocated one moves
// to the shard left short), after which no shard has its two pods on one node.
func TestReplicaOnItsMastersNodeSwapsWithAnotherShard(t *testing.T) {
	nodeOf := map[string]string{
		"c-leader-0": "a", "c-leader-1": "b", "c-leader-2": "c",
		"c-follower-0": "a", // with its master
		"c-follower-1": "c", "c-follower-2": "a",
	}
	nodes := healthy()
	c := cluster{known: nodes}
	plan := Compute(threeByThree, placeOn(c.members(nodes), nodeOf))
	assertSteps(t, plan, StepReplicate, 1)
	step := plan.Steps[0]
	if step.NodeID != c.byPod("c-leader-0").id() || step.On == "c-follower-0" {
		t.Fatalf("want another shard's replica to join leader-0's shard, got %v", step)
	}
	if nodeOf[step.On] == "a" {
		t.Fatalf("the newcomer %s must run off leader-0's node a", step.On)
	}

	// The newcomer still syncing: nothing more until it has the data.
	joined := healthy()
	for i := range joined {
		if joined[i].pod == step.On {
			joined[i].master = "c-leader-0"
		}
	}
	c = cluster{known: joined}
	members := placeOn(c.members(joined), nodeOf)
	for i := range members {
		if members[i].Pod == step.On {
			members[i].Replication.ReplicationState = "sync"
		}
	}
	if plan := Compute(threeByThree, members); len(plan.Steps) != 0 || !strings.Contains(plan.Wait, step.On) {
		t.Fatalf("want a wait for %s to sync, got %+v", step.On, plan)
	}

	// In sync: the colocated follower goes to the shard left short.
	plan = Compute(threeByThree, placeOn(c.members(joined), nodeOf))
	assertSteps(t, plan, StepReplicate, 1)
	left := "c-leader-1"
	if step.On == "c-follower-2" {
		left = "c-leader-2"
	}
	if plan.Steps[0].On != "c-follower-0" || plan.Steps[0].NodeID != c.byPod(left).id() {
		t.Fatalf("want c-follower-0 to replicate %s, got %v", left, plan.Steps[0])
	}

	// Swapped: converged, every shard across two nodes.
	for i := range joined {
		if joined[i].pod == "c-follower-0" {
			joined[i].master = left
		}
	}
	c = cluster{known: joined}
	if plan := Compute(threeByThree, placeOn(c.members(joined), nodeOf)); !plan.Converged() {
		t.Fatalf("want the swapped cluster converged, got %+v", plan)
	}
}

func TestNoSwapWhenItWouldNotHelpOrIsUnsafe(t *testing.T) {
	colocated := map[string]string{
		"c-leader-0": "a", "c-leader-1": "b", "c-leader-2": "c",
		"c-follower-0": "a", "c-follower-1": "c", "c-follower-2": "a",
	}
	tests := []struct {
		name   string
		nodeOf map[string]string
		change func([]Member)
	}{
		{name: "all pods on one node", nodeOf: map[string]string{
			"c-leader-0": "a", "c-leader-1": "a", "c-leader-2": "a", "c-follower-0": "a", "c-follower-1": "a", "c-follower-2": "a"}},
		{name: "two nodes: every other follower is on the colocated one's node or its master's", nodeOf: map[string]string{
			"c-leader-0": "a", "c-leader-1": "a", "c-leader-2": "a", "c-follower-0": "a", "c-follower-1": "b", "c-follower-2": "b"}},
		{name: "a node name unknown", nodeOf: map[string]string{
			"c-leader-0": "a", "c-leader-1": "", "c-leader-2": "", "c-follower-0": "a", "c-follower-1": "", "c-follower-2": ""}},
		{name: "a replica out of sync", nodeOf: colocated, change: func(m []Member) {
			for i := range m {
				if m[i].Pod == "c-follower-2" {
					m[i].Replication = redis.Role{Kind: redis.RoleSlave, ReplicationState: "connect", MasterIP: "10.0.0.3", MasterPort: 6379}
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := healthy()
			c := cluster{known: nodes}
			members := placeOn(c.members(nodes), tc.nodeOf)
			if tc.change != nil {
				tc.change(members)
			}
			for _, s := range Compute(threeByThree, members).Steps {
				t.Fatalf("want no swap, got %v", s)
			}
		})
	}
}

// Followers attached one by one in a bootstrap: the last would find only the shard on its own
// node left; its target is exchanged with another new follower's so that none follows a master
// on its node (no swap needed afterwards).
func TestNewFollowersAreAttachedOffTheirMastersNodes(t *testing.T) {
	nodes := healthy()
	for i := 3; i < 6; i++ {
		nodes[i].master = ""
	}
	nodeOf := map[string]string{
		"c-leader-0": "a", "c-leader-1": "b", "c-leader-2": "c",
		"c-follower-0": "b", "c-follower-1": "a", "c-follower-2": "c",
	}
	c := cluster{known: nodes}
	members := placeOn(c.members(nodes), nodeOf)
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepReplicate, 3)
	masters := map[string]bool{}
	for _, s := range plan.Steps {
		for _, n := range nodes {
			if n.id() == s.NodeID {
				if nodeOf[n.pod] == nodeOf[s.On] {
					t.Errorf("%s would replicate %s on its own node %s: %v", s.On, n.pod, nodeOf[s.On], plan.Steps)
				}
				masters[n.pod] = true
			}
		}
	}
	if len(masters) != 3 {
		t.Errorf("want one new follower per master, got %v", plan.Steps)
	}
}
