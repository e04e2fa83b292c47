package clusterplan

import (
	"strings"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// busyLeader1 is a healthy 3×3 cluster but for leader-1, which answers BUSY (no view), with a
// second replica of leader-1 (follower-3) holding less than follower-1.
func busyLeader1() []Member {
	nodes := append(healthy(), node{pod: "c-follower-3", ip: "10.0.0.7", master: "c-leader-1"})
	members := cluster{known: nodes}.members(nodes)
	for i := range members {
		switch members[i].Pod {
		case "c-leader-1":
			members[i].View = nil
		case "c-follower-1":
			members[i].Replication.ReplicationOffset = 900
		case "c-follower-3":
			members[i].Replication.ReplicationOffset = 700
		}
	}
	return members
}

func TestStuckMasterIsTakenOverByItsBestReplicaPastTheGrace(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	leader1 := (node{pod: "c-leader-1"}).id()
	linkDown := func(pod string) func([]Member) {
		return func(ms []Member) {
			for i := range ms {
				if ms[i].Pod == pod {
					ms[i].Replication.ReplicationState = "connect"
				}
			}
		}
	}
	tests := []struct {
		name      string
		busy      map[string]time.Time
		elections map[string]time.Time
		edit      func([]Member)
		// wantReplica: FORCE asked of it; wantWait, wantProblem: no failover, a wait or a
		// problem containing this.
		wantReplica, wantWait, wantProblem string
		wantRecheck                        time.Duration
	}{
		{name: "no master answers BUSY: nothing"},
		{name: "BUSY shorter than the grace: wait for it", busy: map[string]time.Time{"c-leader-1": now.Add(-5 * time.Second)},
			wantWait: "master c-leader-1 has answered BUSY for 5s", wantRecheck: 10 * time.Second},
		{name: "past the grace: FORCE on the replica holding the most", busy: map[string]time.Time{"c-leader-1": now.Add(-16 * time.Second)},
			wantReplica: "c-follower-1"},
		{name: "the replica holding the most has its link down: the other", busy: map[string]time.Time{"c-leader-1": now.Add(-16 * time.Second)},
			edit: linkDown("c-follower-1"), wantReplica: "c-follower-3"},
		{name: "the replica holding the most is not electable yet: the other", busy: map[string]time.Time{"c-leader-1": now.Add(-16 * time.Second)},
			edit: func(ms []Member) {
				editView(t, ms, "c-leader-0", "c-follower-1", func(n *redis.Node) { n.Link = redis.LinkDisconnected })
			}, wantReplica: "c-follower-3"},
		{name: "no replica linked: a problem, no step", busy: map[string]time.Time{"c-leader-1": now.Add(-16 * time.Second)},
			edit:        func(ms []Member) { linkDown("c-follower-1")(ms); linkDown("c-follower-3")(ms) },
			wantProblem: "master c-leader-1 answers BUSY (stuck in a script) and no replica of it has its link up"},
		{name: "within the election retry window: wait", busy: map[string]time.Time{"c-leader-1": now.Add(-20 * time.Second)},
			elections: map[string]time.Time{leader1: now.Add(4 * time.Second)},
			wantWait:  "an election of its shard was asked recently, Redis allows another in 4s"},
		{name: "the retry window is over: FORCE", busy: map[string]time.Time{"c-leader-1": now.Add(-30 * time.Second)},
			elections: map[string]time.Time{leader1: now.Add(-time.Second)}, wantReplica: "c-follower-1"},
		{name: "a busy replica: nothing, its master serves", busy: map[string]time.Time{"c-follower-0": now.Add(-time.Minute)},
			edit: func(ms []Member) { ms[3].View = nil }},
		{name: "the stuck master was taken over already: nothing", busy: map[string]time.Time{"c-leader-1": now.Add(-time.Minute)},
			edit: func(ms []Member) {
				for _, pod := range []string{"c-leader-0", "c-leader-2", "c-follower-0", "c-follower-2", "c-follower-3", "c-follower-1"} {
					editView(t, ms, pod, "c-leader-1", func(n *redis.Node) { n.Slots = nil })
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := busyLeader1()
			if tt.busy == nil {
				members = cluster{known: healthy()}.members(healthy())
			}
			if tt.edit != nil {
				tt.edit(members)
			}
			plan := PlanStuckMasters(Stuck{Busy: tt.busy, Elections: tt.elections, Now: now, Grace: 15 * time.Second}, members)
			switch {
			case tt.wantReplica != "":
				if plan.Failover == nil || plan.Failover.Replica != tt.wantReplica || plan.Failover.Master != "c-leader-1" {
					t.Fatalf("failover %+v (waits %v, problems %v), want FORCE on %s for c-leader-1", plan.Failover, plan.Waits, plan.Problems, tt.wantReplica)
				}
			case plan.Failover != nil:
				t.Fatalf("failover %+v, want none", plan.Failover)
			}
			if got := strings.Join(plan.Waits, "; "); (tt.wantWait == "") != (got == "") || !strings.Contains(got, tt.wantWait) {
				t.Errorf("waits %q, want one containing %q", got, tt.wantWait)
			}
			if got := strings.Join(plan.Problems, "; "); (tt.wantProblem == "") != (got == "") || !strings.Contains(got, tt.wantProblem) {
				t.Errorf("problems %q, want one containing %q", got, tt.wantProblem)
			}
			if plan.Recheck != tt.wantRecheck {
				t.Errorf("recheck %s, want %s", plan.Recheck, tt.wantRecheck)
			}
		})
	}
}

// Two masters stuck at once: one election at a time, as each master votes once per epoch.
func TestStuckMastersAreTakenOverOneAtATime(t *testing.T) {
	now := time.Now()
	members := busyLeader1()
	members[2].View = nil // leader-2
	plan := PlanStuckMasters(Stuck{Busy: map[string]time.Time{"c-leader-1": now.Add(-time.Minute), "c-leader-2": now.Add(-time.Minute)},
		Now: now, Grace: 15 * time.Second}, members)
	if plan.Failover == nil || plan.Failover.Master != "c-leader-1" || plan.Failover.Replica != "c-follower-1" {
		t.Fatalf("failover %+v, want c-follower-1 for c-leader-1 first", plan.Failover)
	}
	if len(plan.Waits) != 1 || !strings.Contains(plan.Waits[0], "c-follower-2 takes its shard over after the election of c-leader-1's") {
		t.Errorf("waits %q, want c-leader-2's after c-leader-1's election", plan.Waits)
	}
}

// A leader taken over while stuck is a replica no member hears from: the cluster plan waits
// for it, so no fail-back is asked of a leader still busy.
func TestBusyLeaderTakenOverIsNotFailedBackWhileBusy(t *testing.T) {
	nodes, c := leaderBackAtNewIP()
	members := c.members(nodes)
	for i := range members {
		if members[i].Pod == "c-leader-1" {
			members[i].View = nil
		}
	}
	plan := Compute(threeByThree, members)
	if len(plan.Steps) > 0 || !strings.Contains(plan.Wait, "c-leader-1") {
		t.Fatalf("plan %+v, want a wait for c-leader-1 and no step", plan)
	}
}
