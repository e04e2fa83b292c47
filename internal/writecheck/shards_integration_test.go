//go:build integration

package writecheck

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
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

// waitOptions make every write of a shard wait for that shard's one replica; a short WAIT
// timeout gives a stalled shard many attempts.
var waitOptions = Options{Writers: 1, PerShard: true, WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond}

// TestPerShardWaitAcknowledgesWritesTheReplicasHave writes with WAIT 1 to a cluster of three
// masters with one replica each: every shard acknowledges writes, all read back, and each
// shard's replica holds them the moment the writers stop, which is what WAIT confirmed.
func TestPerShardWaitAcknowledgesWritesTheReplicasHave(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cluster, rdb := startCluster(t, 1)
	opts := waitOptions
	opts.Prefix = "waitshard"
	c := run(t, ctx, rdb, opts)
	report := verifyOK(t, ctx, c, rdb)
	t.Log(report)
	if report.Failed != 0 || len(report.Shards) != 3 {
		t.Fatalf("a healthy cluster: %s", report)
	}
	for _, s := range report.Shards {
		if s.Acknowledged == 0 || s.Lost != 0 {
			t.Errorf("%s: %d acknowledged, %d lost", s.Name, s.Acknowledged, s.Lost)
		}
	}
	for i, m := range cluster.Masters {
		requireOnReplica(t, ctx, c, shardOf(t, c, m), cluster.Replicas[i])
	}
}

// TestPerShardWaitStallsOnlyTheShardWhoseReplicaHangs freezes one master's only replica
// (SIGSTOP): that shard's writes are still applied on its master but no longer acknowledged,
// so its pause covers the freeze and the report names it, while the other shards go on.
func TestPerShardWaitStallsOnlyTheShardWhoseReplicaHangs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cluster, rdb := startCluster(t, 1)
	opts := waitOptions
	opts.Prefix = "hungreplica"
	c, err := Start(ctx, rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	waitForAcknowledged(t, c, c.shards, 20)

	stalled := shardOf(t, c, cluster.Masters[1])
	hung := cluster.Replicas[1]
	const freeze = 2500 * time.Millisecond
	hung.Freeze(t)
	// The write in flight at the freeze may still have been confirmed; the next WAIT may not.
	time.Sleep(2 * opts.WaitTimeout)
	before := counts(c)
	time.Sleep(freeze - 2*opts.WaitTimeout)
	during := counts(c)
	hung.Thaw(t)
	for i, s := range c.shards {
		grew := during[i].acknowledged - before[i].acknowledged
		switch {
		case s == stalled && grew != 0:
			t.Errorf("%s acknowledged %d writes while its only replica was frozen", s.name, grew)
		case s == stalled && during[i].uncertain == before[i].uncertain:
			t.Errorf("%s: no write left uncertain while its replica was frozen", s.name)
		case s != stalled && grew < 10:
			t.Errorf("%s acknowledged only %d writes while another shard's replica was frozen", s.name, grew)
		}
	}
	waitForAcknowledged(t, c, []*shard{stalled}, 10)
	c.Stop()
	report := verifyOK(t, ctx, c, rdb)
	t.Log(report)

	if report.Failed != 0 {
		t.Errorf("a frozen replica failed writes: %s", report)
	}
	var stalledReport ShardReport
	for _, s := range report.Shards {
		if s.Acknowledged == 0 || s.Lost != 0 {
			t.Errorf("%s: %d acknowledged, %d lost", s.Name, s.Acknowledged, s.Lost)
		}
		if s.Name == stalled.name {
			stalledReport = s
		}
	}
	if stalledReport.LongestPause < freeze-500*time.Millisecond || stalledReport.Uncertain == 0 {
		t.Errorf("the stalled shard: longest pause %s for a %s freeze, %d uncertain", stalledReport.LongestPause, freeze, stalledReport.Uncertain)
	}
	over := report.PausedLongerThan(freeze / 2)
	if len(over) != 1 || !strings.HasPrefix(over[0], stalled.name+": ") {
		t.Errorf("shards paused longer than %s: %q, want only %s", freeze/2, over, stalled.name)
	}
	if want := fmt.Sprintf("%s %s", stalled.name, stalledReport.LongestPause.Round(time.Millisecond)); !strings.Contains(report.String(), want) {
		t.Errorf("the report does not give %q: %s", want, report)
	}
}

// TestPerShardWaitFollowsAFailover fails one shard over to its replica while writing: the
// old master answers MOVED, the checker reloads the slot map, and the shard's writes are
// acknowledged by the new master (with the old one as its replica) within seconds, far
// sooner than the client's own minute-long refresh; every acknowledged write reads back.
func TestPerShardWaitFollowsAFailover(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cluster, rdb := startCluster(t, 1)
	opts := waitOptions
	opts.Prefix = "failover"
	c, err := Start(ctx, rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	waitForAcknowledged(t, c, c.shards, 20)

	moved := shardOf(t, c, cluster.Masters[2])
	promoted := cluster.Client(t, cluster.Replicas[2])
	if err := promoted.ClusterFailover(ctx, redis.FailoverDefault); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the replica to take over", func() error {
		role, err := promoted.Role(ctx)
		if err != nil {
			return err
		}
		if role.Kind != redis.RoleMaster {
			return errors.New("still " + string(role.Kind))
		}
		return nil
	})
	failedOver := time.Now()
	const resumeBound = 10 * time.Second
	waitForAcknowledged(t, c, []*shard{moved}, 10)
	t.Logf("%s acknowledged again %s after the failover", moved.name, time.Since(failedOver).Round(time.Millisecond))
	time.Sleep(runFor)
	c.Stop()
	report := verifyOK(t, ctx, c, rdb)
	t.Log(report)

	for _, s := range report.Shards {
		if s.Acknowledged == 0 || s.Lost != 0 {
			t.Errorf("%s: %d acknowledged, %d lost", s.Name, s.Acknowledged, s.Lost)
		}
		if s.Name == moved.name && s.LongestPause >= resumeBound {
			t.Errorf("%s paused %s over the failover: the slot map was not reloaded", s.Name, s.LongestPause)
		}
	}
	// WAIT is not replicated, so the promoted node counts only the WAITs the checker sent it.
	stats, err := promoted.Info(ctx, "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	if calls := commandCalls(stats["cmdstat_wait"]); calls == 0 {
		t.Errorf("the new master %s got no WAIT: %q", cluster.Replicas[2].Addr(), stats["cmdstat_wait"])
	}
}

// shardOf is the checker's shard that writes to master.
func shardOf(t *testing.T, c *Checker, master *redistest.Server) *shard {
	t.Helper()
	for _, s := range c.shards {
		if strings.HasPrefix(s.name, "shard of "+master.Addr()+" ") {
			return s
		}
	}
	t.Fatalf("no shard writes to %s", master.Addr())
	return nil
}

type shardCounts struct{ acknowledged, uncertain int64 }

func counts(c *Checker) []shardCounts {
	var out []shardCounts
	for _, s := range c.shards {
		out = append(out, shardCounts{s.acknowledged.Load(), s.uncertain.Load()})
	}
	return out
}

// waitForAcknowledged waits until each of shards has acknowledged n more writes.
func waitForAcknowledged(t *testing.T, c *Checker, shards []*shard, n int64) {
	t.Helper()
	from := map[*shard]int64{}
	for _, s := range shards {
		from[s] = s.acknowledged.Load()
	}
	redistest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d more acknowledged writes per shard", n), func() error {
		for _, s := range shards {
			if got := s.acknowledged.Load() - from[s]; got < n {
				return fmt.Errorf("%s: %d more acknowledged, %d failed, %d uncertain, last error: %w",
					s.name, got, s.failed.Load(), s.uncertain.Load(), c.Stats().LastError)
			}
		}
		return nil
	})
}

// requireOnReplica reads every acknowledged key of shard s from replica, which must already
// hold them all; call it after Stop.
func requireOnReplica(t *testing.T, ctx context.Context, c *Checker, s *shard, replica *redistest.Server) {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: replica.Addr(),
		// A cluster replica answers reads of its master's slots only on a READONLY connection.
		OnConnect: func(ctx context.Context, cn *goredis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	t.Cleanup(func() { _ = rdb.Close() })
	var read int
	for _, w := range c.writers {
		if w.shard != s {
			continue
		}
		for _, n := range w.acknowledged {
			key, want := uniqueKey(w.keyPrefix, w.id, n), uniqueValue(w.id, n)
			if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
				t.Errorf("replica %s: GET %s = %q, %v; want %q", replica.Addr(), key, got, err, want)
			}
			read++
		}
		for _, reg := range w.registers {
			got, err := rdb.Get(ctx, reg.key).Int64()
			if (err != nil && reg.acknowledged > 0) || got < reg.acknowledged {
				t.Errorf("replica %s: register %s = %d, %v; last acknowledged %d", replica.Addr(), reg.key, got, err, reg.acknowledged)
			}
		}
	}
	if read == 0 {
		t.Errorf("%s acknowledged no unique key", s.name)
	}
}

// commandCalls reads calls=N from an INFO commandstats entry.
func commandCalls(entry string) int {
	for _, field := range strings.Split(entry, ",") {
		if value, ok := strings.CutPrefix(field, "calls="); ok {
			calls, _ := strconv.Atoi(value)
			return calls
		}
	}
	return 0
}
