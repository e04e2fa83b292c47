package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// shardMembers is one shard seen by its own nodes: master m (serving slots) and replicas r1, r2;
// promoted makes r1 the master instead.
func shardMembers(t *testing.T, promoted bool) []clusterplan.Member {
	t.Helper()
	id := func(c byte) string { return strings.Repeat(string(c), redis.NodeIDLength) }
	lines := map[string]string{
		"m":  fmt.Sprintf("%s 10.0.0.1:6379@16379 master - 0 0 1 connected 0-16383", id('a')),
		"r1": fmt.Sprintf("%s 10.0.0.2:6379@16379 slave %s 0 0 1 connected", id('b'), id('a')),
		"r2": fmt.Sprintf("%s 10.0.0.3:6379@16379 slave %s 0 0 1 connected", id('c'), id('a')),
	}
	if promoted {
		lines["m"] = fmt.Sprintf("%s 10.0.0.1:6379@16379 slave %s 0 0 2 connected", id('a'), id('b'))
		lines["r1"] = fmt.Sprintf("%s 10.0.0.2:6379@16379 master - 0 0 2 connected 0-16383", id('b'))
		lines["r2"] = fmt.Sprintf("%s 10.0.0.3:6379@16379 slave %s 0 0 2 connected", id('c'), id('b'))
	}
	return viewsOf(t, []string{"m", "r1", "r2"}, lines)
}

// viewsOf makes a member of each pod, whose CLUSTER NODES view holds every pod's line
// (lines, by pod), its own marked myself.
func viewsOf(t *testing.T, pods []string, lines map[string]string) []clusterplan.Member {
	t.Helper()
	var members []clusterplan.Member
	for _, pod := range pods {
		var text []string
		for _, other := range pods {
			line := lines[other]
			if other == pod {
				line = strings.Replace(line, " master ", " myself,master ", 1)
				line = strings.Replace(line, " slave ", " myself,slave ", 1)
			}
			text = append(text, line)
		}
		view, err := redis.ParseClusterNodes(strings.Join(text, "\n") + "\n")
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, clusterplan.Member{Pod: pod, View: &view,
			Replication: redis.Role{Kind: redis.RoleSlave, ReplicationState: "connected"}})
	}
	return members
}

func TestElectionRetryIsFourNodeTimeouts(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		15 * time.Second: time.Minute, 2 * time.Second: 8 * time.Second, 100 * time.Millisecond: 4 * time.Second,
	} {
		if got := electionRetry(timeout); got != want {
			t.Errorf("electionRetry(%s) = %s, want %s", timeout, got, want)
		}
	}
}

func TestFailoverLogHoldsAShardForTheElectionRetryWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	l := failoverLog{now: func() time.Time { return now }}
	members := shardMembers(t, false)
	r1, r2 := &members[1], &members[2]
	window := electionRetry(15 * time.Second)
	if wait := l.begin(members, r1, window); wait != "" {
		t.Fatalf("the first failover must be asked, got %q", wait)
	}
	now = now.Add(5 * time.Second) // past the old fixed 5 s window
	if wait := l.wait(members, r1); !strings.Contains(wait, "asked on r1 5s ago for the shard of m") || !strings.Contains(wait, "still reports itself a replica of m") {
		t.Fatalf("the same replica must not be asked again within the window, got %q", wait)
	}
	if wait := l.begin(members, r2, window); wait == "" {
		t.Fatal("another replica of the same shard must not be asked while its election is pending")
	}
	now = now.Add(window - 5*time.Second - time.Millisecond)
	if l.wait(members, r2) == "" {
		t.Fatal("the window is not over yet")
	}
	now = now.Add(time.Millisecond)
	if wait := l.begin(members, r2, window); wait != "" {
		t.Fatalf("after the retry window the shard may be asked again, got %q", wait)
	}
}

func TestFailoverLogEndsAsSoonAsTheOutcomeIsSeen(t *testing.T) {
	now := time.Unix(1000, 0)
	l := failoverLog{now: func() time.Time { return now }}
	before := shardMembers(t, false)
	if wait := l.begin(before, &before[1], time.Minute); wait != "" {
		t.Fatal(wait)
	}
	now = now.Add(time.Second)
	after := shardMembers(t, true) // r1 reports itself master
	if wait := l.wait(after, &after[0]); wait != "" {
		t.Fatalf("r1 is master: the old master may be asked to take the shard back at once, got %q", wait)
	}
	if len(l.pending) != 0 {
		t.Fatalf("the attempt must be over, still %v", l.pending)
	}

	// The asked node follows another master: over too.
	if wait := l.begin(before, &before[2], time.Minute); wait != "" {
		t.Fatal(wait)
	}
	moved := shardMembers(t, true)
	if wait := l.begin(moved, &moved[2], time.Minute); wait != "" {
		t.Fatalf("r2 follows r1 now: its shard is another, got %q", wait)
	}
}

func TestFailoverLogForgetsAnAttemptRedisRefused(t *testing.T) {
	l := failoverLog{now: func() time.Time { return time.Unix(1000, 0) }}
	members := shardMembers(t, false)
	if wait := l.begin(members, &members[1], time.Minute); wait != "" {
		t.Fatal(wait)
	}
	l.cancel(&members[1])
	if wait := l.begin(members, &members[2], time.Minute); wait != "" {
		t.Fatalf("a refused CLUSTER FAILOVER started no election, got %q", wait)
	}
}

func TestHandOverRefusalsAreToldEveryFewSeconds(t *testing.T) {
	now := time.Unix(1000, 0)
	l := failoverLog{now: func() time.Time { return now }}
	if !l.firstRefusal("a") || l.firstRefusal("a") || !l.firstRefusal("b") {
		t.Fatal("a refusal is told once per interval and key")
	}
	now = now.Add(refusalEventInterval)
	if !l.firstRefusal("a") {
		t.Fatal("told again after the interval")
	}
}

// twoShards is a cluster of two shards seen by its own nodes: masters m1 and m2, each with one
// replica (r1, r2); promoted makes r1 the master of the first shard.
func twoShards(t *testing.T, promoted bool) []clusterplan.Member {
	t.Helper()
	id := func(c byte) string { return strings.Repeat(string(c), redis.NodeIDLength) }
	lines := map[string]string{
		"m1": fmt.Sprintf("%s 10.0.0.1:6379@16379 master - 0 0 1 connected 0-8191", id('e')),
		"r1": fmt.Sprintf("%s 10.0.0.2:6379@16379 slave %s 0 0 1 connected", id('f'), id('e')),
		"m2": fmt.Sprintf("%s 10.0.0.3:6379@16379 master - 0 0 2 connected 8192-16383", id('1')),
		"r2": fmt.Sprintf("%s 10.0.0.4:6379@16379 slave %s 0 0 2 connected", id('2'), id('1')),
	}
	if promoted {
		lines["m1"] = fmt.Sprintf("%s 10.0.0.1:6379@16379 slave %s 0 0 3 connected", id('e'), id('f'))
		lines["r1"] = fmt.Sprintf("%s 10.0.0.2:6379@16379 master - 0 0 3 connected 0-8191", id('f'))
	}
	return viewsOf(t, []string{"m1", "r1", "m2", "r2"}, lines)
}

// Two masters stopping at once (a drain) must not have their replicas elected together: they
// would ask the same epoch and split the votes.
func TestFailoverLogRunsOneElectionPerClusterAtATime(t *testing.T) {
	now := time.Unix(1000, 0)
	l := failoverLog{now: func() time.Time { return now }}
	members := twoShards(t, false)
	r1, r2 := &members[1], &members[3]
	window := electionRetry(15 * time.Second)
	if wait := l.begin(members, r1, window); wait != "" {
		t.Fatalf("the first failover must be asked, got %q", wait)
	}
	now = now.Add(300 * time.Millisecond)
	if wait := l.begin(members, r2, window); !strings.Contains(wait, "asked on r1") || !strings.Contains(wait, "one election at a time") {
		t.Fatalf("the other shard must wait for r1's election, got %q", wait)
	}
	// r1 won: the other shard goes at once.
	now = now.Add(500 * time.Millisecond)
	promoted := twoShards(t, true)
	if wait := l.begin(promoted, &promoted[3], window); wait != "" {
		t.Fatalf("r1's election is over, r2 may be asked, got %q", wait)
	}

	// An election whose outcome is never seen holds the other shards only for Redis's manual
	// failover timeout, not for its own shard's retry window.
	l = failoverLog{now: func() time.Time { return now }}
	if wait := l.begin(members, r1, window); wait != "" {
		t.Fatal(wait)
	}
	now = now.Add(manualFailoverTimeout - time.Millisecond)
	if l.wait(members, r2) == "" {
		t.Fatal("r1's manual failover may still run")
	}
	now = now.Add(time.Millisecond)
	if wait := l.begin(members, r2, window); wait != "" {
		t.Fatalf("past the manual failover timeout r1's election is over, got %q", wait)
	}
	if l.wait(members, r1) == "" {
		t.Fatal("r1's own shard is still held for its retry window")
	}

	// Another cluster's election does not hold this one.
	other := failoverLog{now: func() time.Time { return now }}
	single := shardMembers(t, false)
	if wait := other.begin(single, &single[1], window); wait != "" {
		t.Fatal(wait)
	}
	if wait := other.begin(members, r2, window); wait != "" {
		t.Fatalf("an election in another cluster must not hold this one, got %q", wait)
	}
}
