package clusterplan

import (
	"strings"
	"testing"
)

func TestPlanRequestedFailover(t *testing.T) {
	nodes := healthy()
	c := cluster{known: nodes}
	members := c.members(nodes)
	for _, tc := range []struct {
		target, failover, refuse string
		invalid                  bool
	}{
		{target: "c-follower-1", failover: "c-follower-1"},
		{target: "c-leader-2", failover: "c-follower-2"},
		{target: "*", refuse: "names no pod", invalid: true},
		{target: "c-leader-7", refuse: "names no pod", invalid: true},
	} {
		got := PlanRequestedFailover(members, tc.target)
		if got.Failover != tc.failover || got.Invalid != tc.invalid || !strings.Contains(got.Refuse, tc.refuse) || (got.Refuse == "") != (tc.refuse == "") {
			t.Errorf("%s: got %+v", tc.target, got)
		}
	}
	if !IsServingMaster(members, "c-leader-0") || IsServingMaster(members, "c-follower-0") {
		t.Error("IsServingMaster: leader-0 serves slots, follower-0 none")
	}

	// A replica still syncing is not asked, nor picked for its master.
	members[4].Replication.ReplicationState = "sync"
	for _, target := range []string{"c-follower-1", "c-leader-1"} {
		if got := PlanRequestedFailover(members, target); got.Failover != "" || got.Invalid || got.Refuse == "" {
			t.Errorf("%s with follower-1 syncing: got %+v", target, got)
		}
	}
}
