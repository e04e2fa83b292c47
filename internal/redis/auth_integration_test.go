//go:build integration

package redis_test

import (
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// commandTally counts, by name, the commands a pool sends (logins included).
type commandTally struct {
	mu   sync.Mutex
	seen map[string]int
}

func (t *commandTally) onCommand(_, command string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	t.seen[command]++
}

func (t *commandTally) count(command string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[command]
}

// A client with a second user logs in as whichever of the two the server accepts: the
// operator's own ACL user appears (or the default user is turned off) only once a pod has
// loaded its new aclfile, and the client follows without being rebuilt, the command that met
// the refusal included.
func TestClientFallsBackToItsSecondUser(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const password = "s3cret"
	server := redistest.StartServer(t, redistest.ServerOptions{Password: password})
	admin := goredis.NewClient(&goredis.Options{Addr: server.Addr(), Password: password})
	t.Cleanup(func() { _ = admin.Close() })

	// The server knows only the default user: the operator's user is refused, and the same
	// PING is sent again as the default user.
	var tally commandTally
	pool := newPool(t, redis.Options{OnCommand: tally.onCommand})
	c, err := pool.Client(server.Endpoint(redis.Auth{Username: "redis-operator", Password: password, OrUsername: redis.DefaultUser}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("first PING, the operator's user unknown: %v", err)
	}
	if pings, logins := tally.count("ping"), tally.count("hello"); pings != 2 || logins != 2 {
		t.Errorf("first PING: %d PING tries and %d logins, want 2 and 2 (one refused, one accepted)", pings, logins)
	}

	// The aclfile now adds the operator's user and turns the default user off: a client that
	// tries the default user first moves to the operator's.
	if err := admin.Do(ctx, "acl", "setuser", "redis-operator", "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "acl", "setuser", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	tally = commandTally{}
	c, err = newPool(t, redis.Options{OnCommand: tally.onCommand}).Client(server.Endpoint(redis.Auth{Password: password, OrUsername: "redis-operator"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("first PING, the default user off: %v", err)
	}
	for range 3 { // the connection logged in as the user that worked is kept
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("PING as redis-operator: %v", err)
		}
	}
	if logins := tally.count("hello"); logins != 2 {
		t.Errorf("%d logins for 4 PINGs, want 2", logins)
	}

	// A pipeline's first login is refused the same way, and its commands are sent once more.
	c, err = newPool(t, redis.Options{}).Client(server.Endpoint(redis.Auth{Password: password, OrUsername: "redis-operator"}))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.ObserveCluster(ctx); o.RoleErr != nil || o.Role.Kind != redis.RoleMaster || redis.IsAuthError(o.NodesErr) {
		t.Errorf("first pipeline, the default user off: role %v, %v; CLUSTER NODES: %v", o.Role.Kind, o.RoleErr, o.NodesErr)
	}
}

// Credentials neither user logs in with fail: the command is tried once as each user, not in
// a loop, and a pipeline's commands each carry the refusal rather than an empty success.
func TestClientWithWrongPasswordFailsAfterOneRetry(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	server := redistest.StartServer(t, redistest.ServerOptions{Password: "s3cret"})
	var tally commandTally
	wrong, err := newPool(t, redis.Options{OnCommand: tally.onCommand}).Client(server.Endpoint(redis.Auth{Password: "wrong", OrUsername: "redis-operator"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := wrong.Ping(ctx); err == nil || !redis.IsAuthError(err) {
			t.Fatalf("PING with a wrong password = %v, want an authentication error", err)
		}
		if pings, logins := tally.count("ping"), tally.count("hello"); pings != 2*i || logins != 2*i {
			t.Errorf("after %d PINGs with a wrong password: %d PING tries and %d logins, want %d each", i, pings, logins, 2*i)
		}
	}
	if o := wrong.ObserveCluster(ctx); !redis.IsAuthError(o.RoleErr) || !redis.IsAuthError(o.NodesErr) || !redis.IsAuthError(o.InfoErr) {
		t.Errorf("pipeline with a wrong password: ROLE %v, CLUSTER NODES %v, CLUSTER INFO %v; want authentication errors", o.RoleErr, o.NodesErr, o.InfoErr)
	}

	// Without a second user there is nothing to retry, and a pipeline fails the same.
	tally = commandTally{}
	single, err := newPool(t, redis.Options{OnCommand: tally.onCommand}).Client(server.Endpoint(redis.Auth{Password: "wrong"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := single.Ping(ctx); err == nil || !redis.IsAuthError(err) || tally.count("ping") != 1 {
		t.Errorf("PING with a wrong password and one user = %v after %d tries, want an authentication error after 1", err, tally.count("ping"))
	}
	if o := single.ObserveCluster(ctx); !redis.IsAuthError(o.RoleErr) {
		t.Errorf("pipeline with a wrong password and one user: ROLE %v, want an authentication error", o.RoleErr)
	}
}
