package redis_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestClientArgumentChecks(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	// Nothing listens there: every call below must fail before dialing.
	c, err := pool.Client(redis.NewEndpoint("127.0.0.1", 1, redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	const id = "7bcf39e4f06614da599a25eeefc7bff3ac751ea3"
	checks := map[string]error{
		"meet without ip":     c.ClusterMeet(ctx, "", 6379, 16379),
		"meet bad port":       c.ClusterMeet(ctx, "127.0.0.1", 70000, 0),
		"addslots bad range":  c.ClusterAddSlotsRange(ctx, redis.SlotRange{Start: 10, End: 16384}),
		"replicate bad id":    c.ClusterReplicate(ctx, "nope"),
		"forget bad id":       c.ClusterForget(ctx, "nope"),
		"failover bad mode":   c.ClusterFailover(ctx, "gently"),
		"setslot bad slot":    c.ClusterSetSlot(ctx, -1, redis.SlotNode, id),
		"setslot no node":     c.ClusterSetSlot(ctx, 1, redis.SlotImporting, ""),
		"setslot stable node": c.ClusterSetSlot(ctx, 1, redis.SlotStable, id),
		"setslot bad state":   c.ClusterSetSlot(ctx, 1, "moving", id),
		"replicaof no host":   c.ReplicaOf(ctx, "", 6379),
	}
	_, checks["countkeys bad slot"] = c.ClusterCountKeysInSlot(ctx, 16384)
	_, checks["getkeys bad count"] = c.ClusterGetKeysInSlot(ctx, 1, 0)
	_, checks["migrate bad target"] = c.MigrateKeys(ctx, 1, "", 6379, redis.MigrateOptions{})
	for name, err := range checks {
		var rerr *redis.Error
		if err == nil || !errors.As(err, &rerr) || rerr.Addr != "127.0.0.1:1" {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if c.CommandCount() != 0 {
		t.Errorf("invalid calls sent %d commands", c.CommandCount())
	}
	if err := c.ClusterAddSlotsRange(ctx); err != nil {
		t.Errorf("no ranges: %v", err)
	}
	if _, err := pool.Client(redis.NewEndpoint("no-port", 0, redis.Auth{})); err == nil {
		t.Error("endpoint without port accepted")
	}
	if _, err := pool.Client(redis.NewEndpoint("", 6379, redis.Auth{})); err == nil {
		t.Error("endpoint without host accepted")
	}
}

func TestTimeoutsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// A peer that accepts connections and never answers, like a frozen pod.
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})

	pool := newPool(t, redis.Options{ReadTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
	listening := l.Addr().(*net.TCPAddr)
	c, _ := pool.Client(redis.NewEndpoint(listening.IP.String(), listening.Port, redis.Auth{}))
	done := make(chan error, 1)
	go func() { done <- c.Ping(ctx) }()
	select {
	case err := <-done:
		var nerr net.Error
		if err == nil || !errors.As(err, &nerr) || !nerr.Timeout() || !strings.Contains(err.Error(), l.Addr().String()) {
			t.Errorf("PING to a silent peer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("PING to a silent peer did not time out")
	}

	// A closed port fails at once, naming the address.
	closed, _ := pool.Client(redis.NewEndpoint("127.0.0.1", 1, redis.Auth{}))
	if err := closed.Ping(ctx); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || redis.IsServerError(err) {
		t.Errorf("PING to a closed port: %v", err)
	}
}
