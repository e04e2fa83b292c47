//go:build integration

package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

func TestStandaloneCommandsAndReplication(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	primary := redistest.StartServer(t, redistest.ServerOptions{})
	replica := redistest.StartServer(t, redistest.ServerOptions{})
	p, err := pool.Client(primary.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pool.Client(replica.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}

	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	server, err := p.Info(ctx, "server")
	if err != nil || !strings.HasPrefix(server["redis_version"], "7.") || server["tcp_port"] != strconv.Itoa(primary.Port) {
		t.Errorf("INFO server = %v, %v", server, err)
	}
	if _, ok := server["role"]; ok {
		t.Error("INFO server returned another section")
	}
	all, err := p.Info(ctx, "")
	if err != nil || all["role"] != "master" || all["redis_version"] == "" {
		t.Errorf("INFO = %v, %v", all, err)
	}

	if err := p.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	if got, err := p.ConfigGet(ctx, "maxmemory-policy"); err != nil || got["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("CONFIG GET = %v, %v", got, err)
	}

	if err := r.ReplicaOf(ctx, primary.Host, primary.Port); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the replica's link to come up", func() error {
		role, err := r.Role(ctx)
		if err != nil {
			return err
		}
		if !role.LinkUp() || role.MasterPort != primary.Port || role.MasterIP != primary.Host {
			return errors.New("replica role " + string(role.Kind) + " " + role.ReplicationState)
		}
		return nil
	})
	redistest.WaitFor(t, 30*time.Second, "the master to list its replica", func() error {
		role, err := p.Role(ctx)
		if err != nil {
			return err
		}
		if role.Kind != redis.RoleMaster || len(role.Replicas) != 1 || role.Replicas[0].Port != replica.Port {
			return errors.New("master role without the replica")
		}
		return nil
	})
	// FAILOVER TO swaps the roles: the replica leads, the old master follows it.
	if err := p.FailoverTo(ctx, replica.Host, replica.Port, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the roles to swap", func() error {
		newMaster, err := r.Role(ctx)
		if err != nil {
			return err
		}
		oldMaster, err := p.Role(ctx)
		if err != nil {
			return err
		}
		if newMaster.Kind != redis.RoleMaster || !oldMaster.LinkUp() || oldMaster.MasterPort != replica.Port {
			return errors.New("replica " + string(newMaster.Kind) + ", old master " + string(oldMaster.Kind) + " " + oldMaster.ReplicationState)
		}
		return nil
	})
	if err := p.FailoverTo(ctx, "", 0, time.Second); err == nil {
		t.Error("FAILOVER TO without a target was sent")
	}
	if err := p.ReplicaOfNoOne(ctx); err != nil {
		t.Fatal(err)
	}
	if role, err := p.Role(ctx); err != nil || role.Kind != redis.RoleMaster {
		t.Errorf("after REPLICAOF NO ONE: %+v, %v", role, err)
	}

	// Cluster commands on a non-cluster node fail with a server error naming the node.
	_, err = p.ClusterNodes(ctx)
	var rerr *redis.Error
	if err == nil || !errors.As(err, &rerr) || rerr.Addr != primary.Addr() || !redis.IsServerError(err) ||
		!strings.Contains(err.Error(), primary.Addr()) || !strings.Contains(err.Error(), "CLUSTER NODES") {
		t.Errorf("CLUSTER NODES on a standalone server: %v", err)
	}
}

func TestPoolReusesEvictsAndCounts(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var mu sync.Mutex
	seen := map[string]int{}
	pool := newPool(t, redis.Options{OnCommand: func(addr, command string) {
		mu.Lock()
		defer mu.Unlock()
		seen[command]++
	}})
	s := redistest.StartServer(t, redistest.ServerOptions{Password: "s3cret"})

	a, _ := pool.Client(s.Endpoint(redis.Auth{Password: "s3cret"}))
	b, _ := pool.Client(s.Endpoint(redis.Auth{Password: "s3cret"}))
	if a != b {
		t.Error("same address and password gave two clients")
	}
	wrong, _ := pool.Client(s.Endpoint(redis.Auth{Password: "wrong"}))
	if wrong == a {
		t.Error("another password shared the client")
	}

	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	before := a.CommandCount()
	beforePool := pool.CommandCount()
	for i := 0; i < 5; i++ {
		if err := a.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.CommandCount() - before; got != 5 {
		t.Errorf("5 pings on a warm connection counted %d commands", got)
	}
	if got := pool.CommandCount() - beforePool; got != 5 {
		t.Errorf("pool counted %d commands", got)
	}
	mu.Lock()
	if seen["ping"] != 6 || seen["hello"] == 0 {
		t.Errorf("OnCommand saw %v", seen)
	}
	mu.Unlock()

	err := wrong.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), s.Addr()) || !redis.IsServerError(err) || !redis.IsAuthError(err) {
		t.Errorf("wrong password: %v", err)
	}
	noAuth, _ := pool.Client(s.Endpoint(redis.Auth{}))
	if err := noAuth.Ping(ctx); err == nil || !strings.Contains(err.Error(), "NOAUTH") || !redis.IsAuthError(err) {
		t.Errorf("no password: %v", err)
	}
	if err := a.Ping(ctx); err != nil || redis.IsAuthError(err) {
		t.Errorf("right password: %v", err)
	}

	if n := pool.Evict(s.Endpoint(redis.Auth{})); n != 3 {
		t.Errorf("Evict closed %d clients, want 3", n)
	}
	if err := a.Ping(ctx); err == nil {
		t.Error("evicted client still works")
	}
	fresh, _ := pool.Client(s.Endpoint(redis.Auth{Password: "s3cret"}))
	if fresh == a {
		t.Error("pool handed out an evicted client")
	}
	if err := fresh.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pool.Addrs(); len(got) != 1 || got[0] != s.Addr() {
		t.Errorf("Addrs = %v", got)
	}
	if n := pool.EvictIdle(time.Hour); n != 0 {
		t.Errorf("EvictIdle(1h) closed %d busy clients", n)
	}
	if n := pool.EvictIdle(0); n != 1 || len(pool.Addrs()) != 0 {
		t.Errorf("EvictIdle(0) closed %d, left %v", n, pool.Addrs())
	}

	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Client(s.Endpoint(redis.Auth{})); !errors.Is(err, redis.ErrPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestPoolClosesIdleClientsLazily(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{IdleClientTimeout: 50 * time.Millisecond})
	s1 := redistest.StartServer(t, redistest.ServerOptions{})
	s2 := redistest.StartServer(t, redistest.ServerOptions{})
	c1, _ := pool.Client(s1.Endpoint(redis.Auth{}))
	if err := c1.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := pool.Client(s2.Endpoint(redis.Auth{})); err != nil {
		t.Fatal(err)
	}
	if got := pool.Addrs(); len(got) != 1 || got[0] != s2.Addr() {
		t.Errorf("after idle timeout Addrs = %v, want only %s", got, s2.Addr())
	}
}

// IsAuthError tells credentials refused apart from every other failure. (A server without a
// password accepts any: its default user is "nopass".)
func TestIsAuthErrorOnlyForRefusedCredentials(t *testing.T) {
	ctx := t.Context()
	pool := redis.NewPool(redis.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	open := redistest.StartServer(t, redistest.ServerOptions{})
	offered, _ := pool.Client(open.Endpoint(redis.Auth{Password: "unexpected"}))
	if err := offered.Ping(ctx); err != nil {
		t.Errorf("a password offered to a server without one: %v", err)
	}
	gone, _ := pool.Client(redis.NewEndpoint("127.0.0.1", 1, redis.Auth{Password: "x"}))
	if err := gone.Ping(ctx); err == nil || redis.IsAuthError(err) {
		t.Errorf("connection refused is no auth error: %v", err)
	}
}

// A cluster node running a script past its busy-reply-threshold answers the operator's reads
// BUSY, which IsBusyError tells from a timeout or another error reply.
func TestBusyScriptIsToldFromOtherErrors(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	s := redistest.StartServer(t, redistest.ServerOptions{Cluster: true, Config: []string{"busy-reply-threshold 100"}})
	c, err := pool.Client(s.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.ObserveCluster(ctx); o.NodesErr != nil || redis.IsBusyError(o.NodesErr) {
		t.Fatalf("an idle node: %v", o.NodesErr)
	}
	stuck := goredis.NewClient(&goredis.Options{Addr: s.Addr(), ReadTimeout: -1})
	t.Cleanup(func() { _ = stuck.Close() })
	go func() { _ = stuck.Eval(context.Background(), "while true do end", nil).Err() }()
	var o redis.ClusterObservation
	redistest.WaitFor(t, 5*time.Second, "CLUSTER NODES answered BUSY", func() error {
		o = c.ObserveCluster(ctx)
		if !redis.IsBusyError(o.NodesErr) {
			return fmt.Errorf("CLUSTER NODES: %w", o.NodesErr)
		}
		return nil
	})
	if !redis.IsBusyError(o.RoleErr) || !redis.IsBusyError(o.InfoErr) {
		t.Errorf("ROLE %v, CLUSTER INFO %v: want BUSY", o.RoleErr, o.InfoErr)
	}
	if redis.IsBusyError(errors.New("BUSY but not a reply")) || redis.IsBusyError(context.DeadlineExceeded) {
		t.Error("IsBusyError took a client-side error for Redis's BUSY reply")
	}
	if err := stuck.Do(ctx, "SCRIPT", "KILL").Err(); err != nil { // on another of its pool's connections
		t.Fatal(err)
	}
	redistest.WaitFor(t, 5*time.Second, "the node answers again", func() error { return c.Ping(ctx) })
}
