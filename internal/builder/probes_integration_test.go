//go:build integration

package builder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// The PING probe, run by a real shell with redis-cli against a real redis-server: an answering
// server passes (also when the projected password is stale, a refused login being an answer),
// a server busy in a script fails, as does one that is gone. (A frozen server, which accepts
// connections and never answers, fails by the probe's timeout, which the kubelet enforces.)
func TestPingProbeSeesAServerThatDoesNotAnswer(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is needed (make packages installs redis-tools): %v", err)
	}
	srv := redistest.StartServers(t, 1, redistest.ServerOptions{Password: "pw"})[0]
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	dir := t.TempDir()
	files := &credentialFiles{password: filepath.Join(dir, "redis-password"), user: filepath.Join(dir, "redis-user")}
	write := func(pw string) {
		t.Helper()
		if err := os.WriteFile(files.password, []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probe := func(port int, liveness bool) (bool, string) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		out, err := exec.CommandContext(pctx, "/bin/sh", "-c", pingScript(int32(port), "", files, liveness)).CombinedOutput()
		return err == nil, strings.TrimSpace(string(out))
	}
	write("pw")
	if ok, out := probe(srv.Port, true); !ok {
		t.Errorf("liveness of an answering server failed: %s", out)
	}
	if ok, out := probe(srv.Port, false); !ok {
		t.Errorf("readiness of an answering server failed: %s", out)
	}
	write("stale")
	if ok, out := probe(srv.Port, true); !ok {
		t.Errorf("a stale password file failed the probe (%s): a rotation would restart every pod", out)
	}
	write("pw")

	// A script that never ends: Redis answers BUSY to everything else.
	if err := rdb.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = rdb.Eval(ctx, "while true do end", nil).Err() }()
	time.Sleep(500 * time.Millisecond)
	if ok, out := probe(srv.Port, true); ok {
		t.Errorf("liveness passed on a server busy in a script: %s", out)
	}
	killer := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Password: "pw"})
	t.Cleanup(func() { _ = killer.Close() })
	if err := killer.ScriptKill(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT KILL: %v", err)
	}

	// Gone: connection refused.
	srv.Stop(t)
	if ok, out := probe(srv.Port, true); ok {
		t.Errorf("liveness passed with no server: %s", out)
	}
}
