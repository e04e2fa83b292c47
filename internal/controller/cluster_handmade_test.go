package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

func TestFailMessagesAddSentAndReceivedAndLeaveUnreadableCountsOut(t *testing.T) {
	infos := map[string]redis.ClusterInfo{
		"both":       {Other: map[string]string{"cluster_stats_messages_fail_sent": "2", "cluster_stats_messages_fail_received": "3"}},
		"none":       {Other: map[string]string{"cluster_stats_messages_ping_sent": "40"}},
		"unreadable": {Other: map[string]string{"cluster_stats_messages_fail_sent": "x"}},
	}
	got := failMessages(infos)
	want := map[string]uint64{"both": 5, "none": 0}
	if !maps.Equal(got, want) {
		t.Fatalf("failMessages = %v, want %v", got, want)
	}
}

func TestSplitPodsDropsBlanksAndRepeats(t *testing.T) {
	if got := splitPods(" a,, b,a ,"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("splitPods = %v", got)
	}
	if got := splitPods(""); len(got) != 0 {
		t.Fatalf("splitPods of nothing = %v", got)
	}
}

// TestMayStillMaster: a kept master stays kept while it does not answer, and is dropped once
// it answers as a replica or its pod is gone.
func TestMayStillMaster(t *testing.T) {
	master := mustTopology(t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-100\n")
	replica := mustTopology(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:6379@16379 myself,slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected\n")
	members := []clusterplan.Member{{Pod: "m", View: master}, {Pod: "r", View: replica}, {Pod: "silent"}}
	for pod, want := range map[string]bool{"m": true, "r": false, "silent": true, "gone": false} {
		if got := mayStillMaster(members, pod); got != want {
			t.Errorf("mayStillMaster(%s) = %v, want %v", pod, got, want)
		}
	}
}

// TestAskedSinceRemembersTheOperatorsOwnAsks: a follower the operator asked to take over is
// no hand-made master, for an ask at or after the time given.
func TestAskedSinceRemembersTheOperatorsOwnAsks(t *testing.T) {
	now := time.Unix(1000, 0)
	l := failoverLog{now: func() time.Time { return now }}
	view := mustTopology(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:6379@16379 myself,slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected\n")
	l.noteAsked(&clusterplan.Member{Pod: "r", View: view})
	id := "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	if !l.askedSince(id, now.Add(-time.Second)) || !l.askedSince(id, now) {
		t.Fatal("an ask must count from any time up to it")
	}
	if l.askedSince(id, now.Add(time.Second)) || l.askedSince("cccccccccccccccccccccccccccccccccccccccc", now.Add(-time.Hour)) {
		t.Fatal("an ask must not count before it, nor for another node")
	}
}
