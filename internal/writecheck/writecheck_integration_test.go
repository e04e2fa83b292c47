//go:build integration

package writecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// runFor is how long each test lets the writers run: long enough for hundreds of writes.
const runFor = 300 * time.Millisecond

func newClient(t *testing.T, s *redistest.Server) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// run starts a checker, lets it write for runFor and stops it.
func run(t *testing.T, ctx context.Context, rdb goredis.UniversalClient, opts Options) *Checker {
	t.Helper()
	c, err := Start(ctx, rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	time.Sleep(runFor)
	c.Stop()
	return c
}

// acknowledgedUniqueKeys lists the unique keys the checker will require, with their values.
func acknowledgedUniqueKeys(c *Checker) map[string]string {
	keys := map[string]string{}
	for _, w := range c.writers {
		for _, n := range w.acknowledged {
			keys[uniqueKey(c.opts.Prefix, w.id, n)] = uniqueValue(w.id, n)
		}
	}
	return keys
}

func verifyOK(t *testing.T, ctx context.Context, c *Checker, rdb goredis.UniversalClient) Report {
	t.Helper()
	report, err := c.Verify(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() {
		t.Fatalf("report not OK: %s", report)
	}
	return report
}

func TestStandaloneReadsBackEveryAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := newClient(t, redistest.StartServer(t, redistest.ServerOptions{}))

	c := run(t, ctx, rdb, Options{Prefix: "standalone"})
	stats := c.Stats()
	// Against a healthy server only the write in flight at Stop may be unacknowledged.
	if stats.Acknowledged == 0 || stats.Failed != 0 || stats.Uncertain > DefaultWriters {
		t.Fatalf("stats of a healthy run: %+v", stats)
	}
	report := verifyOK(t, ctx, c, rdb)
	uniques := acknowledgedUniqueKeys(c)
	if report.Acknowledged != stats.Acknowledged || report.KeysRead != len(uniques)+DefaultRegisters {
		t.Errorf("report %s, want %d acknowledged and %d keys read", report, stats.Acknowledged, len(uniques)+DefaultRegisters)
	}

	dbSize, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if dbSize < int64(len(uniques)) {
		t.Errorf("DBSIZE %d, fewer than the %d acknowledged unique keys", dbSize, len(uniques))
	}
	first := uniqueKey("standalone", 0, c.writers[0].acknowledged[0])
	if got, err := rdb.Get(ctx, first).Result(); err != nil || got != uniques[first] {
		t.Errorf("GET %s = %q, %v; want %q", first, got, err, uniques[first])
	}
	for _, w := range c.writers {
		for _, reg := range w.registers {
			got, err := rdb.Get(ctx, reg.key).Int64()
			if err != nil || reg.acknowledged == 0 || got < reg.acknowledged || got > reg.attempted {
				t.Errorf("register %s = %d, %v; acknowledged %d, attempted %d", reg.key, got, err, reg.acknowledged, reg.attempted)
			}
		}
	}
}

func TestVerifyReportsLostWrites(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := newClient(t, redistest.StartServer(t, redistest.ServerOptions{}))
	c := run(t, ctx, rdb, Options{Prefix: "lossy"})
	verifyOK(t, ctx, c, rdb)

	// Lose writes behind the checker's back, as a bad failover would.
	var deleted []string
	for _, w := range c.writers[:3] {
		if len(w.acknowledged) < 2 {
			t.Fatalf("writer %d had only %d acknowledged writes", w.id, len(w.acknowledged))
		}
		deleted = append(deleted, uniqueKey("lossy", w.id, w.acknowledged[0]))
	}
	if err := rdb.Del(ctx, deleted...).Err(); err != nil {
		t.Fatal(err)
	}
	overwritten := uniqueKey("lossy", 3, c.writers[3].acknowledged[1])
	if err := rdb.Set(ctx, overwritten, "someone else", 0).Err(); err != nil {
		t.Fatal(err)
	}
	reg := c.writers[1].registers[0]
	if reg.acknowledged == 0 {
		t.Fatalf("register %s was never acknowledged", reg.key)
	}
	if err := rdb.Set(ctx, reg.key, "0", 0).Err(); err != nil {
		t.Fatal(err)
	}

	report, err := c.Verify(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if report.OK() {
		t.Fatalf("report OK after losing writes: %s", report)
	}
	if !slices.Equal(report.Missing, deleted) {
		t.Errorf("missing %v, want %v", report.Missing, deleted)
	}
	if len(report.Wrong) != 1 || !strings.HasPrefix(report.Wrong[0], overwritten+": ") || !strings.Contains(report.Wrong[0], "someone else") {
		t.Errorf("wrong %v, want only %s", report.Wrong, overwritten)
	}
	wantStale := fmt.Sprintf("%s: got 0, last acknowledged %d", reg.key, reg.acknowledged)
	if !slices.Equal(report.StaleRegisters, []string{wantStale}) {
		t.Errorf("stale registers %v, want [%s]", report.StaleRegisters, wantStale)
	}
	summary := report.String()
	for _, key := range append(deleted, overwritten, reg.key) {
		if !strings.Contains(summary, key) {
			t.Errorf("summary does not name %s: %s", key, summary)
		}
	}
}

func TestClusterReadsBackEveryAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cluster, rdb := startThreeMasters(t)

	c := run(t, ctx, rdb, Options{Prefix: "cluster"})
	report := verifyOK(t, ctx, c, rdb)
	if stats := c.Stats(); stats.Failed != 0 || report.Acknowledged != stats.Acknowledged {
		t.Errorf("stats %+v, report %s", stats, report)
	}
	// The keys spread over every shard, so the check covered every master.
	var total int64
	for _, m := range cluster.Masters {
		size, err := newClient(t, m).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			t.Errorf("master %s holds no key", m.Addr())
		}
		total += size
	}
	if uniques := len(acknowledgedUniqueKeys(c)); total < int64(uniques) {
		t.Errorf("the masters hold %d keys, fewer than the %d acknowledged unique keys", total, uniques)
	}
}

func TestWaitReplicasAcknowledgesOnlyReplicatedWrites(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	master := redistest.StartServer(t, redistest.ServerOptions{})
	replica := redistest.StartServer(t, redistest.ServerOptions{})
	pool := redis.NewPool(redis.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	replicaAdmin, err := pool.Client(replica.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := replicaAdmin.ReplicaOf(ctx, master.Host, master.Port); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the replica's link to come up", func() error {
		role, err := replicaAdmin.Role(ctx)
		if err != nil {
			return err
		}
		if !role.LinkUp() {
			return errors.New("replication " + role.ReplicationState)
		}
		return nil
	})
	rdb, replicaRDB := newClient(t, master), newClient(t, replica)

	c := run(t, ctx, rdb, Options{Prefix: "replicated", WaitReplicas: 1})
	if stats := c.Stats(); stats.Acknowledged == 0 || stats.Failed != 0 {
		t.Fatalf("stats with one replica in sync: %+v", stats)
	}
	verifyOK(t, ctx, c, rdb)
	// WAIT confirmed each acknowledged write on the replica, so the replica has them all.
	verifyOK(t, ctx, c, replicaRDB)

	// Two replicas are never there: every write is applied, none acknowledged.
	c = run(t, ctx, rdb, Options{Prefix: "underreplicated", WaitReplicas: 2, WaitTimeout: 20 * time.Millisecond})
	stats := c.Stats()
	if stats.Acknowledged != 0 || stats.Uncertain == 0 || stats.LastError == nil || !strings.Contains(stats.LastError.Error(), "1 of 2 replicas") {
		t.Fatalf("stats waiting for a missing replica: %+v", stats)
	}
	report, err := c.Verify(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if report.OK() || report.KeysRead != DefaultRegisters || !strings.Contains(report.String(), "nothing was acknowledged") {
		t.Errorf("report without acknowledged writes: %s", report)
	}
}

func TestKilledServerFailsWritesAndAcknowledgedOnesSurviveOnDisk(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// With appendfsync always an acknowledged write is on disk, so a kill must not lose it.
	srv := redistest.StartServer(t, redistest.ServerOptions{Config: []string{"appendonly yes", "appendfsync always"}})
	rdb := newClient(t, srv)
	c, err := Start(ctx, rdb, Options{Prefix: "killed"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)

	time.Sleep(runFor)
	srv.Kill(t)
	// Let the writers count the replies that arrived just before the kill.
	time.Sleep(50 * time.Millisecond)
	beforeKill := c.Stats()
	// The client retries dialing for a while before a write fails.
	redistest.WaitFor(t, 20*time.Second, "writes to fail", func() error {
		if stats := c.Stats(); stats.Failed == 0 || stats.LastError == nil {
			return fmt.Errorf("no failed write: %+v", stats)
		}
		return nil
	})
	down := c.Stats()
	if down.Acknowledged != beforeKill.Acknowledged {
		t.Fatalf("acknowledged writes while the server was down: %d before, %d after", beforeKill.Acknowledged, down.Acknowledged)
	}
	srv.Restart(t)
	redistest.WaitFor(t, 10*time.Second, "writes to be acknowledged again", func() error {
		if now := c.Stats(); now.Acknowledged == down.Acknowledged {
			return fmt.Errorf("still %d acknowledged: %w", now.Acknowledged, now.LastError)
		}
		return nil
	})
	c.Stop()

	// A read error must fail Verify, never pass for a present key.
	srv.Kill(t)
	unreachable, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if report, err := c.Verify(unreachable, rdb); err == nil {
		t.Fatalf("Verify with the server down: %s", report)
	}
	srv.Restart(t)
	report := verifyOK(t, ctx, c, rdb)
	if report.Failed == 0 {
		t.Errorf("report without the failed writes: %s", report)
	}
}

// startThreeMasters forms a cluster of three real masters and returns it with a cluster client.
func startThreeMasters(t *testing.T) (*redistest.Cluster, *goredis.ClusterClient) {
	t.Helper()
	return startCluster(t, 0)
}

// startCluster forms a cluster of three real masters with replicasPerMaster replicas each
// (cluster.Replicas[i] replicates cluster.Masters[i%3]) and returns it with a cluster client.
func startCluster(t *testing.T, replicasPerMaster int) (*redistest.Cluster, *goredis.ClusterClient) {
	t.Helper()
	pool := redis.NewPool(redis.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	cluster := redistest.StartCluster(t, pool, 3, replicasPerMaster, redistest.ServerOptions{})
	var addrs []string
	for _, s := range cluster.Servers {
		addrs = append(addrs, s.Addr())
	}
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	return cluster, rdb
}
