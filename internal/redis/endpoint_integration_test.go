//go:build integration

package redis_test

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// TestClientReachesRedisOverIPv6 talks to a real redis-server listening on ::1 only: an IPv6
// pod address must reach Redis like an IPv4 one.
func TestClientReachesRedisOverIPv6(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	server := redistest.StartServer(t, redistest.ServerOptions{Host: "::1", Password: "v6-secret"})
	pool := newPool(t, redis.Options{})
	c, err := pool.Client(server.Endpoint(redis.Auth{Password: "v6-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr() != server.Endpoint(redis.Auth{}).Address() || !strings.HasPrefix(c.Addr(), "[::1]:") {
		t.Fatalf("client address %q", c.Addr())
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("PING over ::1: %v", err)
	}
	info, err := c.Info(ctx, "server")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info["tcp_port"], server.Endpoint(redis.Auth{}).Address(); !strings.HasSuffix(want, "]:"+got) {
		t.Errorf("INFO tcp_port %q, server at %s", got, want)
	}
}
