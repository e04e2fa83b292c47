package replicationplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// replication returns a Ready replication of n pods, rr-0 the master at 10.0.0.1 and every
// other pod its replica in sync, the pods listed in outdatedPods running an old revision.
func replication(n int, outdatedPods ...int) []Member {
	var members []Member
	for i := range n {
		role := replica("10.0.0.1", "connected", 100)
		if i == 0 {
			role = master(100)
		}
		m := ready(pod(i, fmt.Sprintf("10.0.0.%d", i+1), role))
		m.Outdated = slices.Contains(outdatedPods, i)
		members = append(members, m)
	}
	return members
}

func TestRollOrder(t *testing.T) {
	cases := []struct {
		name    string
		members []Member
		size    int
		master  string
		want    []string
	}{
		{name: "nothing outdated", members: replication(3), size: 3, master: "rr-0"},
		{
			name:    "replicas highest ordinal first, the master last",
			members: replication(12, 0, 1, 2, 10),
			size:    12, master: "rr-0",
			want: []string{"rr-10", "rr-2", "rr-1", "rr-0"},
		},
		{
			name:    "the master last even when it has the highest ordinal",
			members: replication(3, 0, 1, 2),
			size:    3, master: "rr-2",
			want: []string{"rr-1", "rr-0", "rr-2"},
		},
		{
			name:    "pods that scaling in removes are not rolled",
			members: replication(4, 1, 3),
			size:    3, master: "rr-0",
			want: []string{"rr-1"},
		},
		{
			name:    "no master known: replicas only, highest ordinal first",
			members: replication(3, 1, 2),
			size:    3,
			want:    []string{"rr-2", "rr-1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RollOrder(c.members, c.size, c.master); !slices.Equal(got, c.want) {
				t.Errorf("RollOrder = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRoll(t *testing.T) {
	notReady := replication(3, 0, 2)
	notReady[1].Ready = false
	silent := replication(3, 0, 2)
	silent[1].Role = nil
	syncing := replication(3, 0)
	syncing[1].Role.ReplicationState, syncing[2].Role.ReplicationState = "sync", "sync"
	cases := []struct {
		name      string
		members   []Member
		size      int
		sentinels bool
		want      RollAction
		wait      string
	}{
		{name: "nothing outdated: no action", members: replication(3), size: 3},
		{name: "a replica first", members: replication(3, 0, 1, 2), size: 3, want: RollAction{Delete: "rr-2", Left: 2}},
		{name: "the master once alone: the most advanced updated replica takes over", members: func() []Member {
			m := replication(3, 0)
			m[2].Role.ReplicationOffset = 101
			return m
		}(), size: 3, want: RollAction{HandOverTo: "rr-2"}},
		{name: "with sentinels they are asked to fail the master over", members: replication(3, 0), size: 3, sentinels: true, want: RollAction{HandOverTo: "rr-1", ThroughSentinels: true}},
		{name: "with sentinels and no replica in sync the master is replaced", members: syncing, size: 3, sentinels: true, want: RollAction{Delete: "rr-0"}},
		{name: "a pod not ready stops the roll", members: notReady, size: 3, wait: "2 of 3 pods ready, 3 answer"},
		{name: "a pod that does not answer stops the roll", members: silent, size: 3, wait: "3 of 3 pods ready, 2 answer"},
		{name: "a missing pod stops the roll", members: replication(2, 1), size: 3, wait: "2 of 3 pods ready"},
		{name: "the master waits for an updated replica in sync", members: syncing, size: 3, wait: "no ready replica that runs the new revision"},
		{name: "a departing pod's state does not stop the roll", members: func() []Member {
			m := replication(4, 1)
			m[3].Ready, m[3].Role = false, nil
			return m
		}(), size: 3, want: RollAction{Delete: "rr-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Roll(c.members, c.size, "rr-0", c.sentinels)
			if c.wait != "" {
				if got.Delete != "" || got.HandOverTo != "" || !strings.Contains(got.Wait, c.wait) {
					t.Errorf("Roll = %+v, want a wait containing %q", got, c.wait)
				}
				return
			}
			if got != c.want {
				t.Errorf("Roll = %+v, want %+v", got, c.want)
			}
		})
	}
}
