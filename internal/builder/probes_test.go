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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A probe that sets only timings keeps them and gets the server's check (a PING for Redis, a
// TCP connect for sentinels); a probe with its own handler is the user's as given; none gives
// the defaults.
func TestProbes(t *testing.T) {
	timings := &corev1.Probe{InitialDelaySeconds: 1, PeriodSeconds: 7, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1}
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 5}
	r, l := probes(timings, own)
	sentinel := &workload{server: sentinelServer, port: 26379}
	if p := sentinel.withCheck(r, false); p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(26379) || p.PeriodSeconds != 7 || p.InitialDelaySeconds != 1 {
		t.Errorf("a sentinel's timings-only readiness probe became %+v", p)
	}
	redis := &workload{server: redisServer, port: 6380}
	if p := redis.withCheck(r, false); p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "-p 6380 ping") || p.PeriodSeconds != 7 {
		t.Errorf("a Redis timings-only readiness probe became %+v", p)
	}
	if p := redis.withCheck(l, true); !equalStrings(p.Exec.Command, []string{"true"}) || p.PeriodSeconds != 5 {
		t.Errorf("the user's liveness probe became %+v", p)
	}
	if timings.TCPSocket != nil || timings.Exec != nil {
		t.Error("the spec's probe was modified")
	}
	r, l = probes(nil, nil)
	if r.PeriodSeconds != defaultProbePeriodSeconds || l.FailureThreshold != defaultLivenessFailureThresh || hasCheck(r) || hasCheck(l) {
		t.Errorf("defaults %+v %+v", r, l)
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

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
