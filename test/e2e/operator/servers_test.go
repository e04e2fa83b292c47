package operator

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// server is one Redis or Valkey release users run, as an image reference and what its INFO
// server must say (the sandbox runs each from its own root: hack/sandbox/README.md, Images).
type server struct {
	name  string
	image string
	// version is the INFO server line that names the release.
	version string
	// cli is the image's command-line client.
	cli string
	// coveredElsewhere are the kinds other tests of make e2e already run on this server
	// (bootstrap, keys, a failover): the table in make e2e runs the others.
	coveredElsewhere map[string]bool
}

var servers = []server{
	{name: "redis-7.0", image: "redis:7.0.15", version: "redis_version:7.0.15", cli: "redis-cli",
		coveredElsewhere: map[string]bool{kindCluster: true, kindReplication: true, kindStandalone: true}},
	{name: "redis-8.0", image: "redis:8.0.2", version: "redis_version:8.0.2", cli: "redis-cli"},
	{name: "valkey-8.0", image: "valkey/valkey:8.0.1", version: "valkey_version:8.0.1", cli: "valkey-cli",
		coveredElsewhere: map[string]bool{kindCluster: true, kindReplication: true}},
	{name: "valkey-8.1", image: "valkey/valkey:8.1.1", version: "valkey_version:8.1.1", cli: "valkey-cli"},
}

const (
	kindCluster     = "RedisCluster"
	kindReplication = "RedisReplication"
	kindStandalone  = "Redis"
)

// TestEveryServerRunsEveryKind runs each kind on each server at least once in make e2e: a
// cluster through a leader pod's deletion, a replication watched by sentinels of the same image
// through its master pod's deletion, a standalone Redis with a password (also reached by the
// image's own client in the pod, without -a); each pod's INFO server names the release. Kinds
// other tests already run on a server are left to them.
func TestEveryServerRunsEveryKind(t *testing.T) {
	t.Parallel()
	for _, s := range servers {
		for _, kind := range []string{kindCluster, kindReplication, kindStandalone} {
			if s.coveredElsewhere[kind] {
				continue
			}
			t.Run(s.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				runKindOnServer(t, kind, s)
			})
		}
	}
}

func runKindOnServer(t *testing.T, kind string, s server) {
	t.Helper()
	switch kind {
	case kindCluster:
		c := clusterWithImage(t, s.image, "")
		for _, p := range c.pods(c.ctx) {
			requireRelease(t, c.redis(&p).Info(c.ctx, "server").Val(), p.Name, s)
		}
	case kindReplication:
		master := replicationWithSentinels(t, "srv-replication", s.image, "", s.image)
		requireRelease(t, sb.Redis(t, master).Info(context.Background(), "server").Val(), master.Name, s)
	case kindStandalone:
		standaloneOnServer(t, s)
	default:
		t.Fatalf("unknown kind %s", kind)
	}
}

func requireRelease(t *testing.T, info, pod string, s server) {
	t.Helper()
	if !strings.Contains(info, s.version+"\r\n") && !strings.Contains(info, s.version+"\n") {
		t.Errorf("INFO server of %s does not say %s:\n%s", pod, s.version, info)
	}
}

// standaloneOnServer runs a Redis with a password on s: keys written and read, the release in
// INFO server, and `kubectl exec POD -- <cli> ping` answered without -a (the pod's REDISCLI_AUTH).
func standaloneOnServer(t *testing.T, s server) {
	t.Helper()
	ctx := context.Background()
	ns := sb.Namespace(t, "srv-standalone")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: standalone-auth
stringData:
  password: server-pw
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: standalone
spec:
  kubernetesConfig:
    image: `+s.image+`
    imagePullPolicy: IfNotPresent
    redisSecret:
      name: standalone-auth
      key: password
`)
	waitStandaloneReady(t, ns, "standalone", 1)
	pod := getPod(t, ns, "standalone-0")
	rdb := sb.RedisWithPassword(t, pod.Status.PodIP, 6379, "server-pw")
	for _, k := range []string{"a", "b", "c"} {
		if err := rdb.Set(ctx, k, k+"-value", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		if got, err := rdb.Get(ctx, k).Result(); err != nil || got != k+"-value" {
			t.Errorf("GET %s = %q, %v", k, got, err)
		}
	}
	requireRelease(t, rdb.Info(ctx, "server").Val(), pod.Name, s)
	for _, cli := range []string{"redis-cli", s.cli} {
		out, stderr, err := sb.Exec(ctx, ns, pod.Name, containerOf(pod), cli, "ping")
		if err != nil || strings.TrimSpace(out) != "PONG" {
			t.Errorf("kubectl exec %s -- %s ping: %q %q %v, want PONG without -a", pod.Name, cli, out, stderr, err)
		}
	}
}

// containerOf is the pod's Redis container: its first.
func containerOf(pod *corev1.Pod) string { return pod.Spec.Containers[0].Name }
