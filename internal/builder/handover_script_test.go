//go:build integration

package builder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// The preStop script, run by a real shell with redis-cli against real cluster-mode servers: a
// master that serves no slot (a scale-in's departing master) stops at once even though a
// replica still follows it, while a master serving slots with a replica waits for its
// hand-over.
func TestHandOverScriptLetsAnEmptyClusterMasterStop(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is needed (make packages installs redis-tools): %v", err)
	}
	servers := redistest.StartServers(t, 2, redistest.ServerOptions{Cluster: true})
	master, replica := servers[0], servers[1]
	ctx := context.Background()
	mc := goredis.NewClient(&goredis.Options{Addr: master.Addr()})
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	t.Cleanup(func() { _ = mc.Close(); _ = rc.Close() })
	masterID, err := mc.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "CLUSTER", "MEET", master.Host, master.Port, master.BusPort).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 20*time.Second, "the replica attached to the empty master", func() error {
		if err := rc.ClusterReplicate(ctx, masterID).Err(); err != nil {
			return err
		}
		info, err := mc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "connected_slaves:1") {
			return errors.New("no replica connected yet")
		}
		return nil
	})

	run := func(limit time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		script := handOverScript(int32(master.Port), "", nil, true, 60)
		out, err := exec.CommandContext(ctx, "/bin/sh", "-c", script).CombinedOutput()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			t.Fatalf("hook failed: %v %s", err, out)
		}
		return nil
	}
	started := time.Now()
	err = run(30 * time.Second)
	t.Logf("the empty master's hook returned after %v", time.Since(started))
	if err != nil {
		t.Fatalf("the hook of a master serving no slot, with a replica, still waited (%v): a scale-in would hold its pod for the whole wait", err)
	}
	if err := mc.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	if err := run(3 * time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the hook of a master serving slots, with a replica, did not wait for its hand-over: %v", err)
	}

	// A replica at the hook's first look (often a master the operator handed over before the
	// kubelet ran the hook) answers demotedLinger seconds more, so that its clients are
	// redirected rather than left to dial a pod that is gone, and then stops.
	started = time.Now()
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", handOverScript(int32(replica.Port), "", nil, true, 60)).CombinedOutput()
	took := time.Since(started)
	if err != nil {
		t.Fatalf("the replica's hook failed: %v %s", err, out)
	}
	if took < demotedLinger*time.Second-100*time.Millisecond || took > 20*time.Second {
		t.Fatalf("the replica's hook returned after %v, want about %d s", took, demotedLinger)
	}
}

// After an in-place password rotation the projected file lags behind the password Redis
// requires: the hook must hold on (reading the file again) instead of stopping at once, which
// would skip the hand-over; once the file is current it sees the master and, when it has
// become a replica, lets it stop.
func TestHandOverScriptHoldsOnWhileItsPasswordFileIsStale(t *testing.T) {
	servers := redistest.StartServers(t, 2, redistest.ServerOptions{Password: "new-pass"})
	master, replica := servers[0], servers[1]
	ctx := context.Background()
	mc := goredis.NewClient(&goredis.Options{Addr: master.Addr(), Password: "new-pass"})
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr(), Password: "new-pass"})
	t.Cleanup(func() { _ = mc.Close(); _ = rc.Close() })
	if err := rc.ReplicaOf(ctx, master.Host, fmt.Sprint(master.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 20*time.Second, "the replica connected", func() error {
		info, err := mc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "connected_slaves:1") {
			return errors.New("no replica connected yet")
		}
		return nil
	})
	dir := t.TempDir()
	files := &credentialFiles{password: filepath.Join(dir, "redis-password"), user: filepath.Join(dir, "redis-user")}
	if err := os.WriteFile(files.password, []byte("old-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	hookCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hook := exec.CommandContext(hookCtx, "/bin/sh", "-c", handOverScript(int32(master.Port), "", files, false, 25))
	done := make(chan error, 1)
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- hook.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the hook stopped at once on a refused login (%v): the hand-over of a master deleted after a rotation is skipped", err)
	case <-time.After(2 * time.Second):
	}
	// The kubelet catches up; the master hands over (here: it becomes a replica).
	if err := os.WriteFile(files.password, []byte("new-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the hook stopped while its Redis was still a master with a replica (%v)", err)
	case <-time.After(2 * time.Second):
	}
	if err := mc.ReplicaOf(ctx, replica.Host, fmt.Sprint(replica.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hook failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hook did not let the pod stop once its Redis was a replica")
	}
}

// The hook reads the projected password as the operator reads the Secret: without the
// whitespace around it, and every other character kept literally.
func TestHandOverScriptTrimsThePasswordFile(t *testing.T) {
	for _, c := range []struct{ content, want string }{
		{"pw\n", "pw"},
		{"  pw\t\r\n\n", "pw"},
		{"p w*?[x]\\$HOME", "p w*?[x]\\$HOME"},
		{" \n", ""},
		{"", ""},
	} {
		path := filepath.Join(t.TempDir(), "redis-password")
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(t.Context(), "/bin/sh", "-c", readTrimmed("REDISCLI_AUTH", path)+`; printf '%s' "$REDISCLI_AUTH"`).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v %s", c.content, err, out)
		}
		if string(out) != c.want {
			t.Errorf("file %q read as %q, want %q", c.content, out, c.want)
		}
	}
}

// A master that sentinels watch (their connections are named sentinel-...) is held up like any
// other master with a replica: the operator hands it over through the sentinels while the hook
// waits. The hook once let such a master stop at once, which left the hand-over to a race with
// the kubelet that the operator lost on a loaded machine (TestSentinelSamplesFailOver, CI).
func TestHandOverScriptHoldsASentinelWatchedMaster(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is needed (make packages installs redis-tools): %v", err)
	}
	servers := redistest.StartServers(t, 2, redistest.ServerOptions{})
	master, replica := servers[0], servers[1]
	ctx := context.Background()
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	sentinel := goredis.NewClient(&goredis.Options{Addr: master.Addr(), ClientName: "sentinel-2046013c-cmd", PoolSize: 1})
	t.Cleanup(func() { _ = rc.Close(); _ = sentinel.Close() })
	if err := rc.ReplicaOf(ctx, master.Host, fmt.Sprint(master.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 20*time.Second, "the replica linked and a sentinel's connection on the master", func() error {
		if err := sentinel.Ping(ctx).Err(); err != nil {
			return err
		}
		info, err := sentinel.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "connected_slaves:1") {
			return errors.New("no replica connected yet")
		}
		list, err := sentinel.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(list, "name=sentinel-") {
			return errors.New("no sentinel-named connection yet")
		}
		return nil
	})

	hookCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(hookCtx, "/bin/sh", "-c", handOverScript(int32(master.Port), "", nil, false, 60)).CombinedOutput()
	if hookCtx.Err() == nil {
		t.Fatalf("the hook of a sentinel-watched master with a replica returned at once (%v %s): its pod stops before the operator can hand it over", err, out)
	}
}
