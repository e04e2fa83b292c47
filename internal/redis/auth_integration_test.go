package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A client with a second user logs in as whichever of the two the server accepts: the
// operator's own ACL user appears (or the default user is turned off) only once a pod has
// loaded its new aclfile, and the client follows without being rebuilt.
func TestClientFallsBackToItsSecondUser(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const password = "s3cret"
	server := redistest.StartServer(t, redistest.ServerOptions{Password: password})
	admin := goredis.NewClient(&goredis.Options{Addr: server.Addr(), Password: password})
	t.Cleanup(func() { _ = admin.Close() })

	// The server knows only the default user: the operator's user is refused, then the
	// default user is used.
	pool := newPool(t, redis.Options{})
	c, err := pool.Client(server.Endpoint(redis.Auth{Username: "redis-operator", Password: password, OrUsername: redis.DefaultUser}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err == nil || !redis.IsAuthError(err) {
		t.Fatalf("first PING as an unknown user = %v, want an authentication error", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("PING as the default user: %v", err)
	}

	// The aclfile now adds the operator's user and turns the default user off: a client that
	// tries the default user first moves to the operator's.
	if err := admin.Do(ctx, "acl", "setuser", "redis-operator", "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "acl", "setuser", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	other := newPool(t, redis.Options{})
	c, err = other.Client(server.Endpoint(redis.Auth{Password: password, OrUsername: "redis-operator"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err == nil || !redis.IsAuthError(err) {
		t.Fatalf("first PING as the disabled default user = %v, want an authentication error", err)
	}
	for range 3 { // the next connections keep the user that worked
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("PING as redis-operator: %v", err)
		}
	}
	// Wrong credentials are refused as both users, never taken as some other login.
	wrong, err := newPool(t, redis.Options{}).Client(server.Endpoint(redis.Auth{Password: "wrong", OrUsername: "redis-operator"}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := wrong.Ping(ctx); err == nil || !redis.IsAuthError(err) {
			t.Fatalf("PING with a wrong password = %v, want an authentication error", err)
		}
	}
}
