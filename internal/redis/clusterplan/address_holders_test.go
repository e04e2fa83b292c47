package clusterplan

import (
	"maps"
	"testing"
)

func TestAddressHolders(t *testing.T) {
	follower1 := cluster{known: healthy()}.byPod("c-follower-1").id()
	everyLeader := func() map[string]string {
		out := map[string]string{}
		for _, n := range healthy() {
			if n.slots != "" {
				out[n.pod] = n.id()
			}
		}
		return out
	}
	// silent drops the members of pods from the answers, as pods that do not answer.
	silent := func(members []Member, pods ...string) []Member {
		for i := range members {
			for _, p := range pods {
				if members[i].Pod == p {
					members[i].View = nil
				}
			}
		}
		return members
	}
	failedOver := func() []node {
		nodes := healthy()
		nodes[1].slots, nodes[1].master, nodes[1].flags = "", "", "fail"
		nodes[4].master, nodes[4].slots = "", "5462-10922"
		return nodes
	}
	withoutReplica := func() []node {
		nodes := healthy()
		nodes[4].flags = "fail"
		return nodes
	}

	tests := []struct {
		name     string
		members  []Member
		previous map[string]string
		want     map[string]string
	}{
		{name: "every master serving slots holds its pod's address",
			members: cluster{known: healthy()}.members(healthy()), want: everyLeader()},
		{name: "a stopped master still serving, with its replica, keeps its pod's address",
			members: silent(cluster{known: healthy()}.members(healthy()), "c-leader-1"), previous: everyLeader(), want: everyLeader()},
		{name: "once its replica has taken the shard over, the address is free",
			members: silent(cluster{known: failedOver()}.members(failedOver()), "c-leader-1"), previous: everyLeader(),
			want: map[string]string{"c-leader-0": everyLeader()["c-leader-0"], "c-leader-2": everyLeader()["c-leader-2"], "c-follower-1": follower1}},
		{name: "a master with no replica left has nothing to protect",
			members: silent(cluster{known: withoutReplica()}.members(withoutReplica()), "c-leader-1", "c-follower-1"), previous: everyLeader(),
			want: map[string]string{"c-leader-0": everyLeader()["c-leader-0"], "c-leader-2": everyLeader()["c-leader-2"]}},
		{name: "a pod that answers as another node says what it is now",
			members: func() []Member {
				nodes := healthy()
				nodes[1] = node{pod: "c-leader-1", ip: nodes[1].ip, idSeed: "new"}
				return cluster{known: nodes}.members(nodes)
			}(), previous: everyLeader(),
			want: map[string]string{"c-leader-0": everyLeader()["c-leader-0"], "c-leader-2": everyLeader()["c-leader-2"]}},
		{name: "with nobody answering, what was known stands",
			members:  silent(cluster{known: healthy()}.members(healthy()), "c-leader-0", "c-leader-1", "c-leader-2", "c-follower-0", "c-follower-1", "c-follower-2"),
			previous: everyLeader(), want: everyLeader()},
		{name: "a new cluster without slots yet has no holder",
			members: cluster{known: empty(healthy())}.members(empty(healthy())), want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AddressHolders(tt.members, tt.previous)
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}
