//go:build integration

package redis_test

import (
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

func TestSentinelMasterAndQuorum(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const (
		group    = "mymaster"
		password = "s3cret"
	)
	auth := redis.Auth{Password: password}
	var mu sync.Mutex
	seen := map[string]int{}
	pool := newPool(t, redis.Options{OnCommand: func(_, command string) {
		mu.Lock()
		defer mu.Unlock()
		seen[command]++
	}})
	master := redistest.StartServer(t, redistest.ServerOptions{Password: password})
	replica := redistest.StartServer(t, redistest.ServerOptions{Password: password})
	m, err := pool.Client(master.Endpoint(auth))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pool.Client(replica.Endpoint(auth))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ReplicaOf(ctx, master.Host, master.Port); err != nil {
		t.Fatal(err)
	}
	// Sentinels learn replicas from the master's INFO, which they read as soon as they connect.
	redistest.WaitFor(t, 30*time.Second, "the master to list its replica", func() error {
		role, err := m.Role(ctx)
		if err != nil {
			return err
		}
		if len(role.Replicas) != 1 || role.Replicas[0].Port != replica.Port {
			return fmt.Errorf("master role %s with %d replicas", role.Kind, len(role.Replicas))
		}
		return nil
	})

	sentinels := redistest.StartSentinels(t, 3, redistest.SentinelOptions{
		MasterPort: master.Port, Group: group, Quorum: 2, MasterPassword: password, Password: password,
	})
	clients := make([]*redis.Client, len(sentinels))
	for i, s := range sentinels {
		if clients[i], err = pool.Client(s.Endpoint(auth)); err != nil {
			t.Fatal(err)
		}
	}
	first := clients[0]

	host, port, known, err := first.SentinelMasterAddr(ctx, group)
	if err != nil || !known || host != master.Host || port != master.Port {
		t.Errorf("SentinelMasterAddr = %q %d %v %v, want %s true", host, port, known, err, master.Addr())
	}
	host, port, known, err = first.SentinelMasterAddr(ctx, "nosuchgroup")
	if err != nil || known || host != "" || port != 0 {
		t.Errorf("SentinelMasterAddr of an unknown group = %q %d %v %v", host, port, known, err)
	}

	fields, err := first.SentinelMaster(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if fields["name"] != group || fields["ip"] != master.Host || fields["port"] != strconv.Itoa(master.Port) ||
		!strings.Contains(fields["flags"], "master") || fields["quorum"] != "2" {
		t.Errorf("SentinelMaster = %v", fields)
	}
	if _, err := first.SentinelMaster(ctx, "nosuchgroup"); !redis.IsServerError(err) ||
		!strings.Contains(err.Error(), sentinels[0].Addr()) {
		t.Errorf("SentinelMaster of an unknown group: %v", err)
	}

	// Sentinels find each other through the master's hello channel, every 2s.
	redistest.WaitFor(t, 15*time.Second, "every sentinel to see the others, the replica and a quorum", func() error {
		for i, c := range clients {
			fields, err := c.SentinelMaster(ctx, group)
			if err != nil {
				return err
			}
			if fields["num-other-sentinels"] != "2" || fields["num-slaves"] != "1" {
				return fmt.Errorf("sentinel %d: num-other-sentinels %q num-slaves %q",
					i, fields["num-other-sentinels"], fields["num-slaves"])
			}
			if err := c.SentinelCkQuorum(ctx, group); err != nil {
				return err
			}
		}
		return nil
	})
	if hosts, err := first.SentinelReplicaHosts(ctx, group); err != nil || len(hosts) != 1 || hosts[0] != replica.Host {
		t.Errorf("SentinelReplicaHosts = %q, %v; want [%s]", hosts, err, replica.Host)
	}
	if _, err := first.SentinelReplicaHosts(ctx, "nosuchgroup"); !redis.IsServerError(err) {
		t.Errorf("SentinelReplicaHosts of an unknown group: %v", err)
	}

	mu.Lock()
	for _, command := range []string{"sentinel get-master-addr-by-name", "sentinel master", "sentinel ckquorum"} {
		if seen[command] == 0 {
			t.Errorf("OnCommand never saw %q: %v", command, seen)
		}
	}
	mu.Unlock()

	// RESP2 clients get a flat field/value array and must read the same state.
	pool2 := newPool(t, redis.Options{Protocol: 2})
	c2, err := pool2.Client(sentinels[0].Endpoint(auth))
	if err != nil {
		t.Fatal(err)
	}
	fields2, err := c2.SentinelMaster(ctx, group)
	if err != nil || fields2["ip"] != master.Host || fields2["port"] != strconv.Itoa(master.Port) ||
		fields2["num-other-sentinels"] != "2" {
		t.Errorf("SentinelMaster over RESP2 = %v, %v", fields2, err)
	}
	host, port, known, err = c2.SentinelMasterAddr(ctx, group)
	if err != nil || !known || host != master.Host || port != master.Port {
		t.Errorf("SentinelMasterAddr over RESP2 = %q %d %v %v", host, port, known, err)
	}
	if _, _, known, err := c2.SentinelMasterAddr(ctx, "nosuchgroup"); err != nil || known {
		t.Errorf("SentinelMasterAddr of an unknown group over RESP2 = %v %v", known, err)
	}

	// One sentinel left of three: neither the quorum of 2 nor a majority is reachable.
	sentinels[1].Stop(t)
	sentinels[2].Stop(t)
	var quorumErr error
	redistest.WaitFor(t, 15*time.Second, "the last sentinel to lose its quorum", func() error {
		quorumErr = first.SentinelCkQuorum(ctx, group)
		if quorumErr == nil {
			return errors.New("CKQUORUM still OK")
		}
		return nil
	})
	if !redis.IsServerError(quorumErr) || !strings.Contains(quorumErr.Error(), "NOQUORUM") ||
		!strings.Contains(quorumErr.Error(), sentinels[0].Addr()) {
		t.Errorf("CKQUORUM with 1 of 3 sentinels: %v", quorumErr)
	}

	// A restarted sentinel keeps what it learned and brings the quorum back.
	sentinels[1].Restart(t)
	redistest.WaitFor(t, 15*time.Second, "the quorum to come back", func() error {
		return first.SentinelCkQuorum(ctx, group)
	})
}

// A password rotation as the operator runs it under a sentinel: the server accepts old and new
// while the sentinel switches, then the new one alone; the sentinel, its links to the master
// cut afterwards, authenticates anew and keeps seeing the master up. No error carries a password.
func TestSentinelFollowsAPasswordRotation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const (
		group       = "mymaster"
		oldPassword = "old-s3cret"
		newPassword = "new-s3cret"
	)
	pool := newPool(t, redis.Options{})
	master := redistest.StartServer(t, redistest.ServerOptions{Password: oldPassword})
	sentinel := redistest.StartSentinel(t, redistest.SentinelOptions{MasterPort: master.Port, Group: group, Quorum: 1, MasterPassword: oldPassword})
	m, err := pool.Client(master.Endpoint(redis.Auth{Password: oldPassword}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := pool.Client(sentinel.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	up := func(what string) {
		t.Helper()
		redistest.WaitFor(t, 15*time.Second, what, func() error {
			fields, err := s.SentinelMaster(ctx, group)
			if err != nil {
				return err
			}
			if fields["flags"] != "master" || fields["last-ok-ping-reply"] == "" {
				return fmt.Errorf("flags %q", fields["flags"])
			}
			return nil
		})
	}
	up("the sentinel to see the master up")
	accepts := func(password string) bool {
		c := goredis.NewClient(&goredis.Options{Addr: master.Addr(), Password: password, MaxRetries: -1})
		defer func() { _ = c.Close() }()
		return c.Ping(ctx).Err() == nil
	}

	if err := m.AddUserPassword(ctx, redis.DefaultUser, newPassword); err != nil {
		t.Fatal(err)
	}
	if !accepts(oldPassword) || !accepts(newPassword) {
		t.Fatal("the master does not accept both passwords after ACL SETUSER default >new")
	}
	if err := s.SentinelSetAuthPass(ctx, group, newPassword); err != nil {
		t.Fatal(err)
	}
	if err := m.ConfigSet(ctx, "requirepass", newPassword); err != nil {
		t.Fatal(err)
	}
	if accepts(oldPassword) || !accepts(newPassword) {
		t.Fatal("after CONFIG SET requirepass the master must accept the new password alone")
	}
	// Cut the sentinel's links: it must authenticate again, with what it holds now.
	raw := goredis.NewClient(&goredis.Options{Addr: master.Addr(), Password: newPassword})
	t.Cleanup(func() { _ = raw.Close() })
	for _, typ := range []string{"normal", "pubsub"} {
		if err := raw.Do(ctx, "client", "kill", "type", typ).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // beyond down-after-milliseconds (1 s)
	up("the sentinel to see the master up with the new password")

	err = s.SentinelSetAuthPass(ctx, "nosuchgroup", newPassword)
	if !redis.IsServerError(err) || strings.Contains(err.Error(), newPassword) {
		t.Errorf("SENTINEL SET of an unknown group: %v (a server error without the password expected)", err)
	}
	if err := m.AddUserPassword(ctx, redis.DefaultUser, ""); err == nil {
		t.Error("an empty password was added")
	}
}

// A sentinel replaced by one with a new ID stays counted by the others, as a voter, until
// SENTINEL RESET of the group makes them forget it: they then find the running ones again.
func TestSentinelResetForgetsDepartedSentinels(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const group = "mymaster"
	pool := newPool(t, redis.Options{})
	master := redistest.StartServer(t, redistest.ServerOptions{})
	opts := redistest.SentinelOptions{MasterPort: master.Port, Group: group, Quorum: 2}
	sentinels := redistest.StartSentinels(t, 3, opts)
	clients := make([]*redis.Client, len(sentinels))
	for i, s := range sentinels {
		var err error
		if clients[i], err = pool.Client(s.Endpoint(redis.Auth{})); err != nil {
			t.Fatal(err)
		}
	}
	others := func(c *redis.Client) string {
		fields, err := c.SentinelMaster(ctx, group)
		if err != nil {
			return err.Error()
		}
		return fields["num-other-sentinels"]
	}
	waitOthers := func(c *redis.Client, want string) {
		t.Helper()
		redistest.WaitFor(t, 30*time.Second, "num-other-sentinels "+want, func() error {
			if got := others(c); got != want {
				return fmt.Errorf("num-other-sentinels %s", got)
			}
			return nil
		})
	}
	waitOthers(clients[0], "2")
	// The third sentinel goes; a new one (a new ID, another port) takes its place.
	sentinels[2].Stop(t)
	redistest.StartSentinel(t, opts)
	waitOthers(clients[0], "3")

	if err := clients[0].SentinelReset(ctx, group); err != nil {
		t.Fatal(err)
	}
	waitOthers(clients[0], "2")
	if err := clients[0].SentinelCkQuorum(ctx, group); err != nil {
		t.Errorf("CKQUORUM after the reset: %v", err)
	}
	for _, bad := range []string{"", "*", "my*", "g?", "[a]"} {
		if err := clients[0].SentinelReset(ctx, bad); err == nil {
			t.Errorf("SentinelReset(%q) was sent", bad)
		}
	}
}
