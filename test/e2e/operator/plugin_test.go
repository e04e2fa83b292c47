package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The plugin's on-call commands against a running cluster, as a user types them: cli runs a
// command on the master and on a named replica through the API server's port-forward;
// report writes a bundle with each pod's CLUSTER NODES; restart has the operator roll every
// pod, after which the cluster is Ready in its shape with every key.
func TestPluginCLIReportAndRestartOnACluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, sample(t, "redis_v1beta2_rediscluster_minimal.yaml"))
	c.waitReady(start)
	c.writeKeys("plugin", 200)

	if out := kubectlRedis(t, "cli", c.name, "--master", "-n", c.ns, "--", "PING"); !strings.Contains(out, "PONG") {
		t.Errorf("kubectl redis cli --master -- PING printed %q, want PONG", out)
	}
	follower := c.name + "-follower-0"
	if out := kubectlRedis(t, "cli", c.name, follower, "-n", c.ns, "--", "ROLE"); !strings.Contains(out, "slave") {
		t.Errorf("kubectl redis cli %s -- ROLE printed %q, want a replica's role", follower, out)
	}

	dir := filepath.Join(t.TempDir(), "bundle")
	out := kubectlRedis(t, "report", c.name, "-n", c.ns, "-o", dir)
	if !strings.Contains(out, dir) {
		t.Errorf("kubectl redis report printed %q, want the bundle's directory %s", out, dir)
	}
	for _, f := range []string{"resource.yaml", filepath.Join("pods", c.name+"-leader-0", "cluster-nodes.txt"), filepath.Join("pods", follower, "role.txt")} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("the bundle lacks %s: %v", f, err)
			continue
		}
		if strings.HasSuffix(f, "cluster-nodes.txt") && !strings.Contains(string(b), "myself") {
			t.Errorf("%s holds no CLUSTER NODES answer:\n%s", f, b)
		}
	}

	since := faultTime()
	t.Log(kubectlRedis(t, "restart", c.name, "-n", c.ns))
	c.waitRolledOut(6)
	c.waitReady(since)
	c.assertShape()
	c.readKeys("plugin", 200)
}
