package clusterplan

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// leaderBackAtNewIP is a cluster whose leader-1 came back from its volume at a new IP as the
// replica of follower-1, which took its shard over, every view already showing the new IP.
func leaderBackAtNewIP() ([]node, cluster) {
	nodes := healthy()
	nodes[1].master, nodes[1].slots, nodes[1].ip = "c-follower-1", "", "10.0.2.2"
	nodes[4].master, nodes[4].slots = "", "5462-10922"
	return nodes, cluster{known: nodes}
}

// editView changes, in member pod's view, the line of the node of pod about.
func editView(t *testing.T, members []Member, pod, about string, edit func(*redis.Node)) {
	t.Helper()
	id := (node{pod: about}).id()
	for i := range members {
		if members[i].Pod != pod {
			continue
		}
		for j := range members[i].View.Nodes {
			if members[i].View.Nodes[j].ID == id {
				edit(&members[i].View.Nodes[j])
				return
			}
		}
	}
	t.Fatalf("%s's view has no line for %s", pod, about)
}

func TestFailBackWaitsUntilEveryMasterKnowsTheLeader(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, members []Member)
		// wantMeetFrom: a MEET from this pod to leader-1's new address, and no failover;
		// wantWait: no step, a wait naming this; neither: the fail-back.
		wantMeetFrom, wantWait string
	}{
		{name: "converged: the leader takes its shard back"},
		{name: "a master knows the leader at its old IP", wantMeetFrom: "c-leader-2",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.Addr.IP = "10.0.0.2" })
			}},
		{name: "a master knows the leader at its old bus port", wantMeetFrom: "c-leader-2",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.Addr.BusPort = 16380 })
			}},
		{name: "the leader knows a master at an old IP", wantMeetFrom: "c-leader-1",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-1", "c-leader-2", func(n *redis.Node) { n.Addr.IP = "10.0.9.9" })
			}},
		{name: "a master's link to the leader is down", wantWait: "master c-leader-2 sees c-leader-1 with link disconnected",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.Link = redis.LinkDisconnected })
			}},
		{name: "a master suspects the leader", wantWait: "master c-follower-1 sees c-leader-1",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-follower-1", "c-leader-1", func(n *redis.Node) { n.Flags |= redis.FlagPFail })
			}},
		{name: "a master holds the leader failing", wantWait: "master c-leader-0 sees c-leader-1",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-0", "c-leader-1", func(n *redis.Node) { n.Flags |= redis.FlagFail })
			}},
		{name: "a master's MEET of the new address is in handshake", wantWait: "master c-leader-2 is in handshake with c-leader-1",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.Addr.IP = "10.0.0.2" })
				m := &ms[2]
				m.View.Nodes = append(m.View.Nodes, redis.Node{ID: strings.Repeat("e", redis.NodeIDLength), Flags: redis.FlagHandshake | redis.FlagMaster,
					Addr: redis.Address{IP: "10.0.2.2", Port: 6379, BusPort: 16379}, Link: redis.LinkDisconnected})
			}},
		{name: "a master still takes the leader for a master", wantWait: "master c-leader-0 still sees c-leader-1 as a master",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-0", "c-leader-1", func(n *redis.Node) {
					n.Flags = n.Flags&^redis.FlagReplica | redis.FlagMaster
					n.MasterID = ""
				})
			}},
		{name: "a master takes the leader for another master's replica", wantWait: "master c-leader-2 sees c-leader-1 as the replica of node",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.MasterID = (node{pod: "c-leader-0"}).id() })
			}},
		{name: "a master knows the shard's master at a greater config epoch", wantWait: "master c-leader-0 knows the shard's master",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-0", "c-follower-1", func(n *redis.Node) { n.ConfigEpoch = 9 })
			}},
		{name: "the shard's master's own epoch ahead of the leader's view", wantWait: "master c-follower-1 knows the shard's master",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-follower-1", "c-follower-1", func(n *redis.Node) { n.ConfigEpoch = 9 })
			}},
		{name: "the leader ahead of a master's view of the epoch: the vote is granted",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-leader-1", "c-follower-1", func(n *redis.Node) { n.ConfigEpoch = 9 })
			}},
		{name: "a replica's stale view does not matter: replicas do not vote",
			edit: func(t *testing.T, ms []Member) {
				t.Helper()
				editView(t, ms, "c-follower-0", "c-leader-1", func(n *redis.Node) { n.Link = redis.LinkDisconnected })
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, c := leaderBackAtNewIP()
			members := c.members(nodes)
			if tt.edit != nil {
				tt.edit(t, members)
			}
			plan := Compute(threeByThree, members)
			for _, s := range plan.Steps {
				if s.Kind == StepFailover && (tt.wantMeetFrom != "" || tt.wantWait != "") {
					t.Fatalf("failover planned before every master knows the leader: %+v", plan)
				}
			}
			switch {
			case tt.wantMeetFrom != "":
				if len(plan.Steps) == 0 || plan.Steps[0].Kind != StepMeet || plan.Steps[0].On != tt.wantMeetFrom {
					t.Fatalf("want a MEET from %s first, got %+v", tt.wantMeetFrom, plan)
				}
			case tt.wantWait != "":
				if len(plan.Steps) != 0 || !strings.Contains(plan.Wait, tt.wantWait) {
					t.Fatalf("want a wait naming %q, got %+v", tt.wantWait, plan)
				}
			default:
				assertSteps(t, plan, StepFailover, 1)
				if plan.Steps[0].On != "c-leader-1" {
					t.Fatalf("the fail-back runs on leader-1, got %v", plan.Steps[0])
				}
			}
		})
	}
}

func TestStaleMasterViewIsMetThenTheLeaderFailsBack(t *testing.T) {
	nodes, c := leaderBackAtNewIP()
	members := c.members(nodes)
	editView(t, members, "c-leader-2", "c-leader-1", func(n *redis.Node) { n.Addr.IP = "10.0.0.2" })
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 1 || plan.Steps[0].Kind != StepMeet || plan.Steps[0].On != "c-leader-2" || plan.Steps[0].IP != "10.0.2.2" {
		t.Fatalf("want one MEET from c-leader-2 to 10.0.2.2, got %+v", plan)
	}
	// The MEET's handshake runs: the view shows the new address as a handshake node.
	members[2].View.Nodes = append(members[2].View.Nodes, redis.Node{ID: strings.Repeat("e", redis.NodeIDLength), Flags: redis.FlagHandshake | redis.FlagMaster,
		Addr: redis.Address{IP: "10.0.2.2", Port: 6379, BusPort: 16379}, Link: redis.LinkDisconnected})
	if plan := Compute(threeByThree, members); len(plan.Steps) != 0 || plan.Wait == "" {
		t.Fatalf("want a wait while the handshake runs, got %+v", plan)
	}
	// Converged: every view has the new address.
	plan = Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepFailover, 1)
}

func TestRollHandsOverOnlyToAnElectableReplica(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	outdatedLeader := func() []Member {
		ms := c.members(nodes)
		ms[0].Outdated = true
		return ms
	}
	if a := Roll(threeByThree, outdatedLeader(), true); a.Failover != "c-follower-0" {
		t.Fatalf("converged: want follower-0 to take over, got %+v", a)
	}
	ms := outdatedLeader()
	editView(t, ms, "c-leader-2", "c-follower-0", func(n *redis.Node) { n.Addr.IP = "10.0.9.4" })
	if a := Roll(threeByThree, ms, true); a.Failover != "" || !strings.Contains(a.Wait, "c-leader-2") {
		t.Fatalf("a master with a stale view of follower-0: want a wait naming it, got %+v", a)
	}
}

func TestRequestedFailoverWaitsForAnElectableReplica(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	ms := c.members(nodes)
	if p := PlanRequestedFailover(ms, "c-follower-1"); p.Failover != "c-follower-1" {
		t.Fatalf("converged: want the failover, got %+v", p)
	}
	editView(t, ms, "c-leader-0", "c-follower-1", func(n *redis.Node) { n.Flags |= redis.FlagPFail })
	for _, target := range []string{"c-follower-1", "c-leader-1"} {
		p := PlanRequestedFailover(ms, target)
		if p.Failover != "" || p.Refuse != "" || !strings.Contains(p.Wait, "c-leader-0") {
			t.Fatalf("%s: want a wait naming c-leader-0, got %+v", target, p)
		}
	}
}

// TestNoFailoverTowardsAStaleView is a property over many random perturbations of a leader
// back at a new IP and of a healthy cluster: whatever addresses, links and flags the views
// hold, no planner (fail-back, rolling update, requested failover) picks a replica that some
// voting master knows at another address, unlinked, or flags as failing.
func TestNoFailoverTowardsAStaleView(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pods := []string{"c-leader-0", "c-leader-1", "c-leader-2", "c-follower-0", "c-follower-1", "c-follower-2"}
	failovers := 0
	for range 3000 {
		nodes, c := leaderBackAtNewIP()
		if rng.IntN(2) == 0 {
			nodes = healthy()
			c = cluster{known: nodes}
		}
		members := c.members(nodes)
		if rng.IntN(3) == 0 {
			members[rng.IntN(len(members))].Outdated = true
		}
		for range rng.IntN(3) {
			from, about := pods[rng.IntN(len(pods))], pods[rng.IntN(len(pods))]
			if from == about {
				continue
			}
			editView(t, members, from, about, func(n *redis.Node) {
				switch rng.IntN(7) {
				case 0:
					n.Addr.IP = "10.0.9." + strconv.Itoa(rng.IntN(9))
				case 1:
					n.Addr.BusPort++
				case 2:
					n.Link = redis.LinkDisconnected
				case 3:
					n.Flags |= redis.FlagPFail
				case 4:
					n.ConfigEpoch += uint64(1 + rng.IntN(3))
				case 5:
					if n.IsReplica() {
						n.Flags = n.Flags&^redis.FlagReplica | redis.FlagMaster
						n.MasterID = ""
					}
				default:
					n.Flags |= redis.FlagFail
				}
			})
		}
		for _, s := range Compute(threeByThree, members).Steps {
			if s.Kind == StepFailover {
				failovers++
				assertKnownEverywhere(t, members, s.On)
			}
		}
		if a := Roll(threeByThree, members, true); a.Failover != "" {
			failovers++
			assertKnownEverywhere(t, members, a.Failover)
		}
		for _, target := range pods {
			if p := PlanRequestedFailover(members, target); p.Failover != "" {
				failovers++
				assertKnownEverywhere(t, members, p.Failover)
			}
		}
	}
	if failovers == 0 {
		t.Fatal("no failover planned at all: the property was never exercised")
	}
}
