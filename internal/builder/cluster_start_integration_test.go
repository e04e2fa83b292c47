//go:build integration

package builder

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// Alpine's sh (the opstree images) is busybox's: the start script behaves there as under dash.
func TestClusterStartScriptUnderBusybox(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Fatalf("busybox is needed (make packages installs it): %v", err)
	}
	checkStartScript(t, []string{"busybox", "sh"})
}

// The pod's command run for real against the servers this machine has, Redis 7.0 and Valkey 8
// (as the Valkey images have it, under the name redis-server): each comes up as the process the
// command started, announcing its hostname and redirecting by it from its start.
func TestClusterStartScriptStartsRealServersWithTheirHostname(t *testing.T) {
	redisServer := redistest.Binary(t)
	valkey, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatalf("valkey-server is needed (make packages installs it): %v", err)
	}
	inCluster := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: tlsCluster(minimalCluster())}))
	nodePorts := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: tlsCluster(nodePortCluster()), NodePorts: testNodePorts(3, 3)}))
	const hostname = "shards-leader-1.shards-leader-headless.redis-ns.svc.cluster.local"
	// shards-leader-1's node ports are 30002 (client) and 30003 (bus).
	inClusterWant := map[string]string{"cluster-announce-hostname": hostname, "cluster-preferred-endpoint-type": "hostname",
		"cluster-announce-ip": "10.1.2.3"}
	nodePortWant := map[string]string{"cluster-announce-hostname": hostname, "cluster-preferred-endpoint-type": "ip",
		"cluster-announce-ip": "192.0.2.9", "cluster-announce-port": "30002", "cluster-announce-bus-port": "30003",
		"cluster-announce-tls-port": "30002"}
	for _, tc := range []struct {
		name, binary string
		shell        []string
		objects      *Objects
		want         map[string]string
	}{
		{"redis", redisServer, []string{"sh"}, inCluster, inClusterWant},
		{"valkey", valkey, []string{"sh"}, inCluster, inClusterWant},
		{"redis under busybox", redisServer, []string{"busybox", "sh"}, inCluster, inClusterWant},
		{"redis behind node ports", redisServer, []string{"sh"}, nodePorts, nodePortWant},
		{"valkey behind node ports", valkey, []string{"sh"}, nodePorts, nodePortWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.Symlink(tc.binary, filepath.Join(bin, "redis-server")); err != nil {
				t.Fatal(err)
			}
			data := t.TempDir()
			port := freeTCPPort(t)
			conf := filepath.Join(data, "redis.conf")
			if err := os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
				"cluster-enabled yes\ncluster-config-file %s/nodes.conf\nsave \"\"\nappendonly no\n", port, data, data)), 0o600); err != nil {
				t.Fatal(err)
			}
			np := t.TempDir()
			if cm := tc.objects.ConfigMap(NodePortsConfigMapName("shards-leader")); cm != nil {
				for name, content := range cm.Data {
					if err := os.WriteFile(filepath.Join(np, name), []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := container(t, tc.objects.StatefulSet("shards-leader").Spec.Template.Spec, "shards-leader")
			cmd := startRun{shell: tc.shell, path: bin, nodePorts: np, conf: conf}.command(t, c)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if t.Failed() {
					t.Logf("server output:\n%s", out.String())
				}
			})
			rdb := goredis.NewClient(&goredis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
			t.Cleanup(func() { _ = rdb.Close() })
			ctx := context.Background()
			var info string
			redistest.WaitFor(t, 20*time.Second, "the server answers", func() (err error) {
				info, err = rdb.Info(ctx, "server").Result()
				return err
			})
			if want := "process_id:" + strconv.Itoa(cmd.Process.Pid) + "\r\n"; !strings.Contains(info, want) {
				t.Errorf("the server is not the process the command started (%s):\n%s", want, info)
			}
			for name, want := range tc.want {
				got, err := rdb.ConfigGet(ctx, name).Result()
				if err != nil {
					t.Fatal(err)
				}
				if got[name] != want {
					t.Errorf("%s is %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
