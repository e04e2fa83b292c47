package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

const redisStatefulSet = `
apiVersion: v1
kind: Service
metadata:
  name: redis
spec:
  clusterIP: None
  selector: {app: redis}
  ports: [{name: redis, port: 6379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis
spec:
  serviceName: redis
  replicas: 3
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: redis}
  template:
    metadata:
      labels: {app: redis}
    spec:
      terminationGracePeriodSeconds: 10
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: redis}
      containers:
        - name: redis
          image: redis:7.0
          args: ["--appendonly", "yes", "--appendfsync", "always"]
          ports: [{name: redis, containerPort: 6379}]
          readinessProbe:
            exec:
              command: ["redis-cli", "ping"]
            periodSeconds: 1
          volumeMounts:
            - {name: data, mountPath: /data}
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
`

// A key written to each replica survives the deletion of its pod: the new pod, with a new
// IP and possibly on another node, finds it on the same PersistentVolumeClaim.
func TestStatefulSetKeepsDataWhenPodsAreRecreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "sts")
	sb.Apply(t, ns, redisStatefulSet)
	pods := sb.WaitPodsReady(t, ns, "app=redis", 3, 2*time.Minute)

	zones := map[string]bool{}
	for i := range pods {
		node, err := sb.Kube.CoreV1().Nodes().Get(ctx, pods[i].Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[node.Labels["topology.kubernetes.io/zone"]] = true
		if err := sb.Redis(t, &pods[i]).Set(ctx, "owner", pods[i].Name, 0).Err(); err != nil {
			t.Fatalf("SET on %s (%s): %v", pods[i].Name, pods[i].Status.PodIP, err)
		}
	}
	if len(zones) != 3 {
		t.Errorf("replicas should spread over zones a, b and c, got %v", zones)
	}

	// kubectl exec into a Redis pod runs redis-cli inside it.
	out, stderr, err := sb.Exec(ctx, ns, "redis-1", "redis", "redis-cli", "get", "owner")
	if err != nil || strings.TrimSpace(out) != "redis-1" {
		t.Fatalf("exec redis-cli get owner in redis-1: out=%q stderr=%q err=%v", out, stderr, err)
	}

	// Cluster DNS: the headless Service names each ready pod (once the EndpointSlice
	// controller has seen it ready, as on any cluster); the name follows the pod's IP.
	for i := range pods {
		name := pods[i].Name + ".redis"
		sb.WaitFor(t, ns, name+" to resolve in redis-1", 30*time.Second, func(ctx context.Context) (bool, string, error) {
			out, _, err := sb.Exec(ctx, ns, "redis-1", "redis", "getent", "hosts", name)
			return err == nil && strings.HasPrefix(out, pods[i].Status.PodIP+" "), out, nil
		})
	}
	if out, _, err := sb.Exec(ctx, ns, "redis-0", "redis", "redis-cli", "-h", "redis-1.redis."+ns+".svc.cluster.local", "get", "owner"); err != nil || strings.TrimSpace(out) != "redis-1" {
		t.Errorf("redis-cli from redis-0 to redis-1 by name: %q %v", out, err)
	}

	old := map[string]corev1.Pod{}
	for _, p := range pods {
		old[p.Name] = p
		if err := sb.Kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var recreated []corev1.Pod
	sb.WaitFor(t, ns, "all three pods recreated and ready", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		list, err := sb.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=redis"})
		if err != nil {
			return false, "", err
		}
		recreated = nil
		var seen []string
		for i := range list.Items {
			p := list.Items[i]
			seen = append(seen, framework.DescribePod(&p))
			if p.UID != old[p.Name].UID && framework.PodReady(&p) && p.DeletionTimestamp == nil {
				recreated = append(recreated, p)
			}
		}
		return len(recreated) == 3, strings.Join(seen, "; "), nil
	})
	for i := range recreated {
		p := &recreated[i]
		if p.Status.PodIP == old[p.Name].Status.PodIP {
			t.Errorf("%s came back with its old IP %s; a recreated pod gets a new IP", p.Name, p.Status.PodIP)
		}
		got, err := sb.Redis(t, p).Get(ctx, "owner").Result()
		if err != nil || got != p.Name {
			t.Errorf("GET owner on recreated %s (%s) = %q, %v; want %q", p.Name, p.Status.PodIP, got, err, p.Name)
		}
	}
	want := map[string]string{}
	for _, p := range recreated {
		want[p.Name] = p.Status.PodIP
	}
	sb.WaitFor(t, ns, "redis-0.redis to resolve to the new IP", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		out, _, err := sb.Exec(ctx, ns, "redis-1", "redis", "getent", "hosts", "redis-0.redis")
		return strings.HasPrefix(out, want["redis-0"]+" "), out, err
	})
}

const probesPod = `
apiVersion: v1
kind: Pod
metadata:
  name: gated
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: main
      image: busybox:1.36
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
      readinessProbe:
        exec:
          command: ["test", "-f", "/tmp/ready"]
        periodSeconds: 1
        failureThreshold: 1
      livenessProbe:
        exec:
          command: ["test", "!", "-f", "/tmp/die"]
        periodSeconds: 1
        failureThreshold: 2
---
apiVersion: v1
kind: Pod
metadata:
  name: tcp
spec:
  containers:
    - name: redis
      image: redis:7.0
      readinessProbe:
        tcpSocket:
          port: 6379
        periodSeconds: 1
`

// Readiness probes decide a pod's readiness, liveness probes restart its container.
func TestProbesGateReadinessAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "probes")
	sb.Apply(t, ns, probesPod)
	sb.WaitPodReady(t, ns, "tcp", time.Minute)

	running := func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil, framework.DescribePod(p), nil
	}
	sb.WaitFor(t, ns, "container of gated running", time.Minute, running)
	time.Sleep(2 * time.Second)
	p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if framework.PodReady(p) {
		t.Fatalf("gated is Ready although its readiness probe fails: %s", framework.DescribePod(p))
	}
	if _, _, err := sb.Exec(ctx, ns, "gated", "main", "touch", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	sb.WaitPodReady(t, ns, "gated", 30*time.Second)
	if _, _, err := sb.Exec(ctx, ns, "gated", "main", "rm", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "gated to become not ready", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return !framework.PodReady(p), framework.DescribePod(p), nil
	})

	// A failing liveness probe restarts the container; the new one starts with a fresh /tmp.
	if _, _, err := sb.Exec(ctx, ns, "gated", "main", "touch", "/tmp/die"); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "liveness probe to restart gated", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil, framework.DescribePod(p), nil
	})
	if _, _, err := sb.Exec(ctx, ns, "gated", "main", "test", "!", "-e", "/tmp/die"); err != nil {
		t.Errorf("the restarted container still has /tmp/die: %v", err)
	}
}

const hooksPods = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: hooks
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: graceful
spec:
  terminationGracePeriodSeconds: 30
  containers:
    - name: main
      image: busybox:1.36
      command: ["sh", "-c", "trap 'echo term >> /data/order; exit 0' TERM; echo started >> /data/order; while true; do sleep 0.2; done"]
      lifecycle:
        preStop:
          exec:
            command: ["sh", "-c", "echo prestop >> /data/order"]
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: hooks}
---
apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: 4
  containers:
    - name: main
      image: busybox:1.36
      command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.2; done"]
`

// watchUntilDeleted starts watching pod ns/name; the returned function waits until the pod
// is gone and returns its last state. The watch starts before the caller deletes the pod,
// so no event is missed.
func watchUntilDeleted(ns, name string, timeout time.Duration) (func() (*corev1.Pod, error), error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	w, err := sb.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() (*corev1.Pod, error) {
		defer cancel()
		defer w.Stop()
		var last *corev1.Pod
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				last = p
			}
			if ev.Type == watch.Deleted {
				return last, nil
			}
		}
		return last, fmt.Errorf("pod %s/%s not deleted within %s", ns, name, timeout)
	}, nil
}

// Deleting a pod runs its preStop hook, then sends SIGTERM; a container that ignores
// SIGTERM is killed when the grace period ends.
func TestPreStopHookAndGracePeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "hooks")
	sb.Apply(t, ns, hooksPods)
	for _, name := range []string{"graceful", "stubborn"} {
		sb.WaitFor(t, ns, name+" running", time.Minute, func(ctx context.Context) (bool, string, error) {
			p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return framework.PodReady(p), framework.DescribePod(p), nil
		})
	}
	pvc, err := sb.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "hooks", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := sb.Kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.HostPath == nil {
		t.Fatalf("PV of claim hooks: %v %+v", err, pv)
	}

	type result struct {
		name string
		last *corev1.Pod
		err  error
	}
	results := make(chan result, 2)
	for _, name := range []string{"graceful", "stubborn"} {
		wait, err := watchUntilDeleted(ns, name, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			last, err := wait()
			results <- result{name, last, err}
		}()
	}
	for _, name := range []string{"graceful", "stubborn"} {
		if err := sb.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	exit := map[string]int32{}
	for range 2 {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.last == nil || len(r.last.Status.ContainerStatuses) != 1 || r.last.Status.ContainerStatuses[0].State.Terminated == nil {
				desc := "nothing"
				if r.last != nil {
					desc = framework.DescribePod(r.last)
				}
				t.Fatalf("last status of %s before deletion has no terminated container: %s", r.name, desc)
			}
			exit[r.name] = r.last.Status.ContainerStatuses[0].State.Terminated.ExitCode
		case <-time.After(90 * time.Second):
			t.Fatal("pods were not deleted")
		}
	}
	if exit["graceful"] != 0 {
		t.Errorf("graceful exited with %d, want 0 (its SIGTERM trap exits 0)", exit["graceful"])
	}
	if exit["stubborn"] != 137 {
		t.Errorf("stubborn exited with %d, want 137 (SIGKILL after the grace period)", exit["stubborn"])
	}
	order, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "order"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(order)); strings.Join(got, " ") != "started prestop term" {
		t.Errorf("events in the volume = %q, want started, prestop, term", got)
	}
}

const talkerPod = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: conf
data:
  key: one
  COLOR: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: s3cret
---
apiVersion: v1
kind: Pod
metadata:
  name: talker
  labels: {app: talker, tier: e2e}
spec:
  initContainers:
    - name: first
      image: busybox:1.36
      command: ["sh", "-c", "echo 1 > /shared/init"]
      volumeMounts: [{name: shared, mountPath: /shared}]
    - name: second
      image: busybox:1.36
      command: ["sh", "-c", "echo 2 >> /shared/init"]
      volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
    - name: main
      image: busybox:1.36
      command: ["sh", "-c"]
      args:
        - "echo '$(MESSAGE)'; echo ip=$POD_IP node=$NODE; echo oops >&2; trap 'exit 0' TERM; while true; do sleep 0.2; done"
      env:
        - {name: GREETING, value: hello}
        - {name: MESSAGE, value: "$(GREETING) world $$(GREETING)"}
        - name: POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: creds, key: password}}
        - name: MEMORY_LIMIT
          valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
      envFrom:
        - configMapRef: {name: conf}
      resources:
        limits: {memory: 64Mi}
      volumeMounts:
        - {name: shared, mountPath: /shared}
        - {name: conf, mountPath: /etc/conf}
        - {name: creds, mountPath: /etc/creds, readOnly: true}
        - {name: podinfo, mountPath: /etc/podinfo}
    - name: sidekick
      image: busybox:1.36
      command: ["sh", "-c", "trap 'exit 0' TERM; echo sidekick > /shared/sidekick; while true; do sleep 0.2; done"]
      volumeMounts: [{name: shared, mountPath: /shared}]
  volumes:
    - name: shared
      emptyDir: {}
    - name: conf
      configMap: {name: conf}
    - name: creds
      secret: {secretName: creds}
    - name: podinfo
      downwardAPI:
        items:
          - path: labels
            fieldRef: {fieldPath: metadata.labels}
`

// Logs and exec go through the API server to the sandbox's kubelet; environment, init
// containers and volumes behave as on a node.
func TestLogsExecEnvAndVolumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "talk")
	sb.Apply(t, ns, talkerPod)
	pod := sb.WaitPodReady(t, ns, "talker", time.Minute)

	var logs string
	sb.WaitFor(t, ns, "talker's first log lines", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		var err error
		logs, err = sb.Logs(ctx, ns, "talker", "main", false)
		return strings.Contains(logs, "oops"), logs, err
	})
	for _, want := range []string{"hello world $(GREETING)", "ip=" + pod.Status.PodIP + " node=" + pod.Spec.NodeName, "oops"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs %q lack %q", logs, want)
		}
	}

	exec := func(cmd string) string {
		t.Helper()
		out, stderr, err := sb.Exec(ctx, ns, "talker", "main", "sh", "-c", cmd)
		if err != nil {
			t.Fatalf("exec %q: %v (stderr %q)", cmd, err, stderr)
		}
		return strings.TrimSpace(out)
	}
	checks := map[string]string{
		"echo $HOSTNAME":          "talker",
		"hostname":                "talker",
		"echo $PASSWORD":          "s3cret",
		"echo $COLOR":             "blue",
		"echo $MEMORY_LIMIT":      "64",
		"cat /shared/init":        "1\n2",
		"cat /etc/conf/key":       "one",
		"cat /etc/creds/password": "s3cret",
		"cat /var/run/secrets/kubernetes.io/serviceaccount/namespace": ns,
		"grep -c tier /etc/podinfo/labels":                            "1",
	}
	for cmd, want := range checks {
		if got := exec(cmd); got != want {
			t.Errorf("exec %q = %q, want %q", cmd, got, want)
		}
	}
	// The sidekick writes into the shared emptyDir once it runs.
	sb.WaitFor(t, ns, "the sidekick's file in the shared emptyDir", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		out, _, err := sb.Exec(ctx, ns, "talker", "main", "cat", "/shared/sidekick")
		return strings.TrimSpace(out) == "sidekick", out, err
	})
	if tok := exec("cat /var/run/secrets/kubernetes.io/serviceaccount/token"); strings.Count(tok, ".") != 2 {
		t.Errorf("service account token is not a JWT: %q", tok)
	}
	// The container sees its own files, not the sandbox's state or other pods'.
	if got := exec("ls " + sb.Dir + " 2>/dev/null | wc -l"); got != "0" {
		t.Errorf("the sandbox's state directory is visible in the container (%s entries)", got)
	}

	// The exit status of an exec'd command comes back.
	_, _, err := sb.Exec(ctx, ns, "talker", "main", "sh", "-c", "exit 3")
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Errorf("exec exit 3 returned %v, want exit status 3", err)
	}

	// A ConfigMap volume follows changes of the ConfigMap while mounted, on the kubelets'
	// next refresh, which the sandbox's status reports.
	if sb.VolumeRefresh() != volumeRefresh {
		t.Errorf("the sandbox refreshes volumes every %s, want the %s it was started with", sb.VolumeRefresh(), volumeRefresh)
	}
	cm, err := sb.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["key"] = "two"
	if _, err := sb.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the configMap volume to show the new value", 2*volumeRefresh+10*time.Second, func(ctx context.Context) (bool, string, error) {
		out, _, err := sb.Exec(ctx, ns, "talker", "main", "cat", "/etc/conf/key")
		return strings.TrimSpace(out) == "two", out, err
	})
}

// A cut pod is unreachable and fails its TCP readiness probe; healed, it serves again.
func TestNetworkCutIsSeenAndHealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "cut")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: island
spec:
  containers:
    - name: redis
      image: redis:7.0
      readinessProbe:
        tcpSocket: {port: 6379}
        periodSeconds: 1
        timeoutSeconds: 1
        failureThreshold: 2
`)
	pod := sb.WaitPodReady(t, ns, "island", time.Minute)
	rdb := sb.Redis(t, pod)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Fault.Cut(ctx, ns, "island"); err != nil {
		t.Fatal(err)
	}
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = sb.Fault.Heal(context.Background(), ns, "island")
		}
	})
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	if err := sb.RedisAt(t, pod.Status.PodIP, 6379).Ping(pingCtx).Err(); err == nil {
		t.Error("PING reached a pod that is cut off the network")
	}
	cancel()
	sb.WaitFor(t, ns, "the cut pod to fail its readiness probe", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "island", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return !framework.PodReady(p), framework.DescribePod(p), nil
	})
	st, err := sb.Fault.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Pods {
		if p.Namespace == ns && p.Name == "island" && !p.Cut {
			t.Error("sandbox status does not show island as cut")
		}
	}
	if err := sb.Fault.Heal(ctx, ns, "island"); err != nil {
		t.Fatal(err)
	}
	healed = true
	sb.WaitPodReady(t, ns, "island", 30*time.Second)
	if err := sb.RedisAt(t, pod.Status.PodIP, 6379).Ping(ctx).Err(); err != nil {
		t.Errorf("PING after heal: %v", err)
	}
}

// A crashed container is restarted in place: same pod, same IP, one more restart.
func TestCrashedContainerIsRestarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "crash")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: fragile
spec:
  containers:
    - name: redis
      image: redis:7.0
      readinessProbe:
        exec: {command: ["redis-cli", "ping"]}
        periodSeconds: 1
`)
	pod := sb.WaitPodReady(t, ns, "fragile", time.Minute)
	if err := sb.Fault.CrashContainer(ctx, ns, "fragile", "redis"); err != nil {
		t.Fatal(err)
	}
	var after *corev1.Pod
	sb.WaitFor(t, ns, "fragile restarted after the crash", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "fragile", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		after = p
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && framework.PodReady(p), framework.DescribePod(p), nil
	})
	last := after.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 {
		t.Errorf("last state of the crashed container = %+v, want terminated with exit code 137", last)
	}
	if after.Status.PodIP != pod.Status.PodIP {
		t.Errorf("a container restart changed the pod IP from %s to %s", pod.Status.PodIP, after.Status.PodIP)
	}
	if err := sb.Redis(t, after).Ping(ctx).Err(); err != nil {
		t.Errorf("PING after restart: %v", err)
	}
	logs, err := sb.Logs(ctx, ns, "fragile", "redis", true)
	if err != nil || !strings.Contains(logs, "Ready to accept connections") {
		t.Errorf("logs of the previous container: %v %q", err, logs)
	}
}

// An image the sandbox cannot run leaves the container waiting as a failed pull would: an
// image it does not know, and a tag that no release of a known image has (a registry answers
// "manifest unknown", it never runs another version instead).
func TestUnknownImageWaitsLikeAFailedPull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, image, says string }{
		{"unknown-image", "registry.example.com/team/unknown:1.0", "image table"},
		{"unknown-tag", "redis:6.9.9", "manifest unknown"},
		{"unknown-valkey-tag", "valkey/valkey:9.9", "manifest unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := sb.Namespace(t, "image")
			sb.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata:
  name: nowhere
spec:
  containers:
    - name: main
      image: `+tc.image+`
`)
			sb.WaitFor(t, ns, "nowhere waiting with an image pull reason", time.Minute, func(ctx context.Context) (bool, string, error) {
				p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "nowhere", metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				cs := p.Status.ContainerStatuses
				if len(cs) != 1 || cs[0].State.Waiting == nil {
					return false, framework.DescribePod(p), nil
				}
				w := cs[0].State.Waiting
				ok := (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, tc.says)
				return ok && p.Status.Phase == corev1.PodPending, framework.DescribePod(p), nil
			})
		})
	}
}

// A stopped node goes NotReady and its pods' processes die; started again, it runs its
// pods anew, with new IPs. Not parallel: a stopped node would block other tests' pods.
func TestStoppedNodeGoesNotReadyAndComesBack(t *testing.T) {
	ctx := context.Background()
	ns := sb.Namespace(t, "node")
	const node = "sandbox-c"
	sb.Apply(t, ns, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: pinned
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  containers:
    - name: redis
      image: redis:7.0
      readinessProbe:
        exec: {command: ["redis-cli", "ping"]}
        periodSeconds: 1
`, node))
	pod := sb.WaitPodReady(t, ns, "pinned", time.Minute)
	if err := sb.Fault.StopNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = sb.Fault.StartNode(context.Background(), node)
		}
	})
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	if err := sb.RedisAt(t, pod.Status.PodIP, 6379).Ping(pingCtx).Err(); err == nil {
		t.Error("the pod of a stopped node still answers")
	}
	cancel()
	nodeReady := func(want corev1.ConditionStatus) framework.Condition {
		return func(ctx context.Context) (bool, string, error) {
			n, err := sb.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return (c.Status == corev1.ConditionTrue) == (want == corev1.ConditionTrue), string(c.Status) + " " + c.Reason, nil
				}
			}
			return false, "no Ready condition", nil
		}
	}
	sb.WaitFor(t, ns, node+" NotReady", time.Minute, nodeReady(corev1.ConditionFalse))
	if err := sb.Fault.StartNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	started = true
	sb.WaitFor(t, ns, node+" Ready again", time.Minute, nodeReady(corev1.ConditionTrue))
	var back *corev1.Pod
	sb.WaitFor(t, ns, "pinned running again on a new IP", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		back = p
		return framework.PodReady(p) && p.Status.PodIP != pod.Status.PodIP, framework.DescribePod(p), nil
	})
	if rc := back.Status.ContainerStatuses[0].RestartCount; rc < 1 {
		t.Errorf("restart count after the node restart = %d, want at least 1", rc)
	}
	if err := sb.Redis(t, back).Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the node restart: %v", err)
	}
	// The taints the node lifecycle controller put on the node go away.
	sb.WaitFor(t, ns, node+" untainted", time.Minute, func(ctx context.Context) (bool, string, error) {
		n, err := sb.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return len(n.Spec.Taints) == 0, fmt.Sprint(n.Spec.Taints), nil
	})
}

// securityContext users and fsGroup apply to containers, their volumes and exec sessions,
// readOnlyRootFilesystem leaves only volumes writable, and runAsNonRoot without a user is
// refused as for a root image.
func TestSecurityContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "security")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: tls
stringData:
  key: private
---
apiVersion: v1
kind: Pod
metadata:
  name: unprivileged
spec:
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    fsGroup: 2000
  containers:
    - name: main
      image: busybox:1.36
      command: ["sh", "-c", "id -u > /scratch/uid; trap 'exit 0' TERM; while true; do sleep 0.2; done"]
      securityContext:
        readOnlyRootFilesystem: true
      volumeMounts:
        - {name: scratch, mountPath: /scratch}
        - {name: tls, mountPath: /etc/tls}
  volumes:
    - name: scratch
      emptyDir: {}
    - name: tls
      secret: {secretName: tls, defaultMode: 0400}
---
apiVersion: v1
kind: Pod
metadata:
  name: refused
spec:
  containers:
    - name: main
      image: busybox:1.36
      command: ["sleep", "infinity"]
      securityContext:
        runAsNonRoot: true
`)
	sb.WaitPodReady(t, ns, "unprivileged", time.Minute)
	exec := func(cmd string) string {
		t.Helper()
		out, stderr, err := sb.Exec(ctx, ns, "unprivileged", "main", "sh", "-c", cmd)
		if err != nil {
			t.Fatalf("exec %q: %v (stderr %q)", cmd, err, stderr)
		}
		return strings.TrimSpace(out)
	}
	sb.WaitFor(t, ns, "the container to record its uid", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		out, _, err := sb.Exec(ctx, ns, "unprivileged", "main", "cat", "/scratch/uid")
		return strings.TrimSpace(out) == "1000", out, err
	})
	if got := exec("id -u; id -G"); got != "1000\n1000 2000" {
		t.Errorf("exec runs as %q, want uid 1000 with groups 1000 2000", got)
	}
	if got := exec("cat /etc/tls/key"); got != "private" {
		t.Errorf("the fsGroup cannot read its 0400 secret: %q", got)
	}
	if got := exec("touch /tmp/x 2>/dev/null && echo writable || echo read-only"); got != "read-only" {
		t.Errorf("readOnlyRootFilesystem: /tmp is %s", got)
	}
	sb.WaitFor(t, ns, "refused waiting with CreateContainerConfigError", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "refused", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs[0].State.Waiting.Message, "runAsNonRoot"), framework.DescribePod(p), nil
	})
}
