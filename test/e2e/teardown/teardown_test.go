// Package teardown checks that `sandbox down` removes everything a sandbox made, even when
// the sandbox daemon crashed and left its control plane, pods, namespaces and links behind.
// It runs its own sandbox: it has to kill it.
package teardown

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/sandbox/cleanup"
	"github.com/rediskube/redis-operator/test/sandbox/network"
)

const pod = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: redis
spec:
  containers:
    - name: redis
      image: redis:7.0
      readinessProbe:
        exec: {command: ["redis-cli", "ping"]}
        periodSeconds: 1
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: data}
`

func TestDownAfterACrashLeavesNothingBehind(t *testing.T) {
	sb, err := framework.Start(framework.Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = sb.Stop()
		}
	}()
	sb.Apply(t, "default", pod)
	p := sb.WaitPodReady(t, "default", "redis", time.Minute)
	if err := sb.Redis(t, p).Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// Crash the daemon: no chance to stop its children or remove anything.
	if err := syscall.Kill(sb.Status.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, sb.Status.Pid)

	left := cleanup.Leftovers(sb.Inst, false)
	joined := strings.Join(left, "\n")
	for _, want := range []string{"network namespace", "link " + sb.Inst.Bridge(), "route", "processes", "state directory"} {
		if !strings.Contains(joined, want) {
			t.Errorf("after the crash, expected a leftover %q; leftovers:\n%s", want, joined)
		}
	}
	if len(network.Namespaces(sb.Inst)) == 0 {
		t.Error("the pod's network namespace should have survived the crash")
	}

	stopped = true
	if err := sb.Stop(); err != nil {
		t.Fatalf("sandbox down after a crash: %v", err)
	}
	if left := cleanup.Leftovers(sb.Inst, false); len(left) > 0 {
		t.Fatalf("left behind after down: %s", strings.Join(left, "; "))
	}
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s still exists (%v)", sb.Dir, err)
	}
	for name, pid := range sb.Status.Processes {
		if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
			t.Errorf("%s (pid %d) survived sandbox down", name, pid)
		}
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil || isZombie(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d did not die", pid)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
