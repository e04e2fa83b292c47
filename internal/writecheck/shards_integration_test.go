//go:build integration

package writecheck

import (
	"strings"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// TestPerShardWritersShowTheOneShardThatPaused pauses the writes of one master of a real
// cluster: that shard's longest pause covers the pause, the other shards' stay shorter, and
// every shard's keys were written to its own master.
func TestPerShardWritersShowTheOneShardThatPaused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cluster, rdb := startThreeMasters(t)

	c, err := Start(ctx, rdb, Options{Prefix: "pershard", Writers: 1, PerShard: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	time.Sleep(runFor)
	paused := cluster.Masters[1]
	const pause = 2500 * time.Millisecond
	if err := newClient(t, paused).Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause + runFor)
	c.Stop()
	report := verifyOK(t, ctx, c, rdb)
	t.Log(report)

	if len(report.Shards) != 3 {
		t.Fatalf("%d shards for 3 masters: %+v", len(report.Shards), report.Shards)
	}
	var pausedShard *ShardReport
	for i := range report.Shards {
		s := &report.Shards[i]
		if s.Acknowledged == 0 || s.Lost != 0 {
			t.Errorf("%s: %d acknowledged, %d lost", s.Name, s.Acknowledged, s.Lost)
		}
		if strings.Contains(s.Name, paused.Addr()) {
			pausedShard = s
		}
	}
	if pausedShard == nil {
		t.Fatalf("no shard names the paused master %s", paused.Addr())
	}
	// The writes blocked by CLIENT PAUSE wait out most of it.
	if pausedShard.LongestPause < pause-500*time.Millisecond {
		t.Errorf("the paused shard's longest pause is %s, shorter than the %s pause", pausedShard.LongestPause, pause)
	}
	for _, s := range report.Shards {
		if s.Name != pausedShard.Name && s.LongestPause >= pausedShard.LongestPause {
			t.Errorf("%s paused %s, as long as the paused shard (%s)", s.Name, s.LongestPause, pausedShard.LongestPause)
		}
	}
	// Each shard's keys live on its own master only.
	for i, m := range cluster.Masters {
		keys, err := newClient(t, m).Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			t.Errorf("master %d (%s) holds no key", i, m.Addr())
		}
		for _, k := range keys {
			if owner := slotOwner(t, cluster, HashSlot(k)); owner != m.Addr() {
				t.Errorf("key %s on %s, whose slot %s serves", k, m.Addr(), owner)
			}
		}
	}
}

func slotOwner(t *testing.T, cluster *redistest.Cluster, slot int) string {
	t.Helper()
	for _, m := range cluster.Masters {
		topo, err := cluster.Client(t, m).ClusterNodes(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if me, ok := topo.Myself(); ok && me.OwnsSlot(slot) {
			return m.Addr()
		}
	}
	return "no master"
}
