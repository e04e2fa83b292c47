package redis_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

func TestSentinelArgumentChecks(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	// Nothing listens there: every call below must fail before dialing.
	c, err := pool.Client(redis.NewEndpoint("127.0.0.1", 1, redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{"ckquorum": c.SentinelCkQuorum(ctx, "")}
	_, _, _, checks["get-master-addr-by-name"] = c.SentinelMasterAddr(ctx, "")
	_, checks["master"] = c.SentinelMaster(ctx, "")
	for name, err := range checks {
		var rerr *redis.Error
		if err == nil || !errors.As(err, &rerr) || rerr.Addr != "127.0.0.1:1" || redis.IsServerError(err) {
			t.Errorf("%s without a group: err = %v", name, err)
		}
	}
	if c.CommandCount() != 0 {
		t.Errorf("invalid calls sent %d commands", c.CommandCount())
	}
}
