package clusterplan

import (
	"slices"
	"strings"
	"testing"
)

func TestOutages(t *testing.T) {
	withFlag := func(nodes []node, pod, flags string) []node {
		for i := range nodes {
			if nodes[i].pod == pod {
				nodes[i].flags = flags
			}
		}
		return nodes
	}
	without := func(nodes []node, pod string) []node {
		var out []node
		for _, n := range nodes {
			if n.pod != pod {
				out = append(out, n)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		// known is the cluster as its nodes know it, running the pods that answer; silent pods
		// run but do not answer.
		known, running []node
		silent         []string
		want           []string // substrings, one per outage; none for no outage
	}{
		{name: "healthy", known: healthy(), running: healthy()},
		{name: "new cluster, no slot yet", known: empty(healthy()), running: empty(healthy()), silent: []string{"c-leader-1"}},
		{name: "new cluster, its first leader given its slots early", known: []node{{pod: "c-leader-0", ip: "10.0.0.1", slots: "0-5461"}},
			running: []node{{pod: "c-leader-0", ip: "10.0.0.1", slots: "0-5461"}}},
		{name: "scale-out: a new pod still starting is no member yet", known: healthy(),
			running: append(healthy(), node{pod: "c-leader-3", ip: "10.0.0.7"}), silent: []string{"c-leader-3"}},
		{name: "every pod runs and none answers", known: healthy(), running: healthy(), silent: []string{"c-leader-1", "c-leader-0", "c-leader-2", "c-follower-0", "c-follower-1", "c-follower-2"},
			want: []string{"no pod of the cluster answers (c-follower-0, c-follower-1, c-follower-2, c-leader-0, c-leader-1, c-leader-2)"}},
		{name: "every pod restarted, only a leader runs yet (no node flagged before the node timeout)",
			known: healthy(), running: healthy()[:1],
			want: []string{"10922 of 16384 slots are not served: slots 5462-10922 (shard of master node 1124f533 (10.0.0.2:6379)), " +
				"slots 10923-16383 (shard of master node 392667d7 (10.0.0.3:6379)); the other shards keep serving theirs",
				"(10.0.0.2:6379) does not answer", "(10.0.0.3:6379) does not answer", "master c-leader-0 has no replica up"}},
		{name: "a partitioned leader", known: withFlag(healthy(), "c-leader-1", "fail?"), running: healthy(), silent: []string{"c-leader-1"},
			want: []string{"5461 of 16384 slots are not served: slots 5462-10922 (shard of master c-leader-1); the other shards keep serving theirs",
				"pod c-leader-1 does not answer", "c-leader-1 is suspected down"}},
		{name: "a failed master whose replica took over: its shard has no replica",
			known: func() []node {
				n := healthy()
				n[1] = node{pod: "c-leader-1", ip: "10.0.0.2", master: "c-follower-1", flags: "fail"}
				n[4] = node{pod: "c-follower-1", ip: "10.0.0.5", slots: "5462-10922"}
				return n
			}(),
			running: without(healthy(), "c-leader-1"),
			want:    []string{"(10.0.0.2:6379) is failing", "master c-follower-1 has no replica up"}},
		{name: "a replica that does not answer", known: healthy(), running: healthy(), silent: []string{"c-follower-2"},
			want: []string{"pod c-follower-2 does not answer", "master c-leader-2 has no replica up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{known: tc.known}
			members := c.members(tc.running)
			for i := range members {
				for _, s := range tc.silent {
					if members[i].Pod == s {
						members[i].View = nil
					}
				}
			}
			got := Outages(threeByThree, members)
			if len(got) != len(tc.want) {
				t.Fatalf("outages %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("outage %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// A fail-back in progress: the old master is back as a replica of its follower and resyncs;
// every slot is served and each master has a replica that answers, so there is no outage.
func TestFailBackIsNoOutage(t *testing.T) {
	n := healthy()
	n[1] = node{pod: "c-leader-1", ip: "10.0.0.12", master: "c-follower-1"}
	n[4] = node{pod: "c-follower-1", ip: "10.0.0.5", slots: "5462-10922"}
	if got := Outages(threeByThree, cluster{known: n}.members(n)); len(got) != 0 {
		t.Errorf("outages %q during a fail-back", got)
	}
}

// Right after a partition heals, flags and gossip lag behind what the pods themselves say: a
// node still suspected while its pod answers, a replica its master's shard does not list yet
// while its own ROLE follows that master. Neither is an outage.
func TestStaleGossipIsNoOutage(t *testing.T) {
	n := healthy()
	n[3].flags = "fail?" // c-follower-0, answering
	members := cluster{known: n}.members(n)
	if got := Outages(threeByThree, members); len(got) != 0 {
		t.Errorf("outages %q from a stale suspicion", got)
	}
	// The fail-back just happened: leader-1 is master again, follower-1 follows it by its own
	// ROLE, but the view still shows follower-1 as the master.
	n = healthy()
	n[1] = node{pod: "c-leader-1", ip: "10.0.0.2", slots: "5462-10922"}
	n[4] = node{pod: "c-follower-1", ip: "10.0.0.5", master: "c-leader-0"} // stale: gossip not there yet
	members = cluster{known: n}.members(n)
	members[4].Replication.MasterIP = "10.0.0.2"
	got := Outages(threeByThree, members)
	if len(got) != 0 {
		t.Errorf("outages %q while the replica's own ROLE follows its master", got)
	}
}

// A new master that has joined but not yet learned who serves what sees every slot unserved;
// the established masters know better, and their view counts.
func TestJoiningNodesViewIsNotTheClusters(t *testing.T) {
	n := append(healthy(), node{pod: "c-leader-3", ip: "10.0.0.7"})
	c := cluster{known: n}
	members := c.members(n)
	newcomer := cluster{known: []node{{pod: "c-leader-0", ip: "10.0.0.1"}, {pod: "c-leader-3", ip: "10.0.0.7"}}}
	last := len(members) - 1
	members[last].View = newcomer.viewOf(n[len(n)-1], newcomer.known)
	members[0], members[last] = members[last], members[0] // the newcomer answers first
	if got := Outages(Design{Leaders: 4, Followers: 3}, members); len(got) != 0 {
		t.Errorf("outages %q from a joining node's view", got)
	}
}

// The clusters run with cluster-require-full-coverage no: a shard without a master stops only
// its own slots. The outage names them and their shard first, so that a summary of many
// outages still says what is not served, and that the other shards serve on.
func TestUnservedSlotsAreNamedByShard(t *testing.T) {
	n := healthy()
	// After resharding, leader-1's slots are fragmented; it is partitioned and so is its replica.
	n[0].slots = "0-5461 6001-6999 7001-7999 9001-9999"
	n[1].slots, n[1].flags = "5462-6000 7000 8000-9000 10000-10922", "fail"
	n[4].flags = "fail"
	members := cluster{known: n}.members(n)
	for i := range members {
		if members[i].Pod == "c-leader-1" || members[i].Pod == "c-follower-1" {
			members[i].View = nil
		}
	}
	got := Outages(threeByThree, members)
	want := "2464 of 16384 slots are not served: slots 5462-6000,7000,8000-9000 and 1 more ranges (shard of master c-leader-1); " +
		"the other shards keep serving theirs"
	if len(got) == 0 || got[0] != want {
		t.Fatalf("outages %q, want first %q", got, want)
	}
	many := append(slices.Clone(got[1:]), "x", "y", "z", "w")
	if summary := OutageSummary(append([]string{got[0]}, many...)); !strings.HasPrefix(summary, want) {
		t.Errorf("summary %q drops the unserved slots", summary)
	}

	// Every master down: no shard serves, and the message does not pretend others do.
	n = healthy()
	members = cluster{known: n}.members(n[3:])
	got = Outages(threeByThree, members)
	if len(got) == 0 || !strings.HasPrefix(got[0], "16384 of 16384 slots are not served: slots 0-5461 (shard of master") ||
		strings.Contains(got[0], "other shards") {
		t.Errorf("outages %q with every master down", got)
	}
}

// A rolling update replaces a replica: its master is without one until the new pod syncs, by
// plan. Without a rolling update the same cluster is an outage; with one, slots not served
// and pods that do not answer still are.
func TestReplicaReplacedByARollingUpdateIsNoOutage(t *testing.T) {
	running := healthy()[:5] // c-follower-2 deleted for its replacement
	members := cluster{known: healthy()}.members(running)
	if got := Outages(threeByThree, members); len(got) != 1 || !strings.Contains(got[0], "master c-leader-2 has no replica up") {
		t.Fatalf("without a rolling update: outages %q, want c-leader-2 without a replica", got)
	}
	rolling := threeByThree
	rolling.RollingUpdate = true
	if got := Outages(rolling, members); len(got) != 0 {
		t.Errorf("during a rolling update: outages %q, want none", got)
	}
	members = cluster{known: healthy()}.members(healthy())
	for i := range members {
		if members[i].Pod == "c-leader-1" {
			members[i].View = nil
		}
	}
	if got := Outages(rolling, members); len(got) == 0 || !strings.Contains(got[0], "slots are not served") {
		t.Errorf("a silent leader during a rolling update: outages %q, want its slots named", got)
	}
}
