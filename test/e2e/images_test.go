package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// The images users run, as a kubelet runs them (shared/reference/images.md): the opstree
// entrypoints drop a container's args, the sentinel image has no redis-server, images run as
// their own user, the exporter image has no shell. A pod spec that works here only because
// the sandbox ran the host's programs with our arguments would fail on a real cluster.
func TestImagesRunAsAKubeletRunsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "images")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: master
spec:
  containers:
    - name: redis
      image: redis:7.0.15
      args: ["--port", "6379"]
---
apiVersion: v1
kind: Pod
metadata:
  name: opstree-redis
spec:
  containers:
    - name: redis
      image: quay.io/opstree/redis:v7.0.15
      # Dropped by the image's entrypoint: Redis listens on 6379 from its own file.
      args: ["redis-server", "--port", "7000"]
      env: [{name: REDIS_PASSWORD, value: from-env}]
`)
	master := sb.WaitPodReady(t, ns, "master", time.Minute)
	// Sentinels given the master by argument, as our StatefulSets did before they set a
	// command, and by command, as they do now; the configuration is a file in /data.
	sentinelPod := func(name, start string) string {
		return `
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  initContainers:
    - name: conf
      image: quay.io/opstree/redis-sentinel:v7.0.15
      command: ["sh", "-c", "printf 'port 26379\nsentinel monitor mymaster ` + master.Status.PodIP + ` 6379 1\n' > /data/sentinel.conf"]
      volumeMounts: [{name: data, mountPath: /data}]
  containers:
    - name: sentinel
      image: quay.io/opstree/redis-sentinel:v7.0.15
      ` + start + `
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`
	}
	sb.Apply(t, ns, sentinelPod("sentinel-args", `args: ["redis-server", "/data/sentinel.conf", "--sentinel"]`)+"---"+
		sentinelPod("sentinel-command", `command: ["redis-sentinel", "/data/sentinel.conf"]`))
	args := sb.WaitPodReady(t, ns, "sentinel-args", time.Minute)
	command := sb.WaitPodReady(t, ns, "sentinel-command", time.Minute)

	masterAddr := func(ip string) string {
		t.Helper()
		var got string
		sb.WaitFor(t, ns, "a sentinel at "+ip+" to answer", 30*time.Second, func(ctx context.Context) (bool, string, error) {
			addr, err := sb.RedisAt(t, ip, 26379).Do(ctx, "SENTINEL", "get-master-addr-by-name", "mymaster").StringSlice()
			got = strings.Join(addr, ":")
			return err == nil, got, nil
		})
		return got
	}
	if got := masterAddr(args.Status.PodIP); got != "0.0.0.0:6379" {
		t.Errorf("a sentinel given its file by args watches %q, want the image's own 0.0.0.0:6379 (args are dropped)", got)
	}
	if got, want := masterAddr(command.Status.PodIP), master.Status.PodIP+":6379"; got != want {
		t.Errorf("a sentinel given its file by command watches %q, want %q", got, want)
	}
	if out, _, err := sb.Exec(ctx, ns, "sentinel-command", "sentinel", "sh", "-c", "command -v redis-server || echo absent"); err != nil || strings.TrimSpace(out) != "absent" {
		t.Errorf("the sentinel image has redis-server: %q %v", out, err)
	}

	// The opstree Redis image: its own file, the password appended from its environment,
	// the arguments gone, run as uid 1000.
	opstree := sb.WaitPodReady(t, ns, "opstree-redis", time.Minute)
	if err := sb.RedisWithPassword(t, opstree.Status.PodIP, 6379, "from-env").Ping(ctx).Err(); err != nil {
		t.Errorf("opstree redis on 6379 with the password of its environment: %v", err)
	}
	if out, _, err := sb.Exec(ctx, ns, "opstree-redis", "redis", "sh", "-c", "id -u; grep '^Uid' /proc/1/status"); err != nil ||
		!strings.HasPrefix(out, "1000\n") || !strings.Contains(out, "\t1000\t") {
		t.Errorf("opstree redis runs as %q (%v), want uid 1000", out, err)
	}
	// The official image: started as root, the server drops to uid 999.
	if out, _, err := sb.Exec(ctx, ns, "master", "redis", "grep", "^Uid", "/proc/1/status"); err != nil || !strings.Contains(out, "\t999\t") {
		t.Errorf("the official image's redis-server runs as %q (%v), want uid 999", out, err)
	}

	// The exporter image has no shell: a probe or hook with sh fails there.
	sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: exporter
spec:
  containers:
    - name: exporter
      image: quay.io/opstree/redis-exporter:v1.44.0
      env: [{name: REDIS_ADDR, value: "redis://`+master.Status.PodIP+`:6379"}]
`)
	sb.WaitPodReady(t, ns, "exporter", time.Minute)
	if out, stderr, err := sb.Exec(ctx, ns, "exporter", "exporter", "sh", "-c", "true"); err == nil {
		t.Errorf("sh ran in the exporter image: %q %q", out, stderr)
	}

	// A command the image lacks fails the container as it would on a node.
	sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: no-server
spec:
  restartPolicy: Never
  containers:
    - name: sentinel
      image: quay.io/opstree/redis-sentinel:v7.0.15
      command: ["redis-server", "--sentinel"]
`)
	sb.WaitFor(t, ns, "redis-server not found in the sentinel image", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "no-server", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil && strings.Contains(cs[0].State.Terminated.Message, "not found"),
			framework.DescribePod(p), nil
	})
}
