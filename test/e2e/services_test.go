package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// Two Redis pods running as uid 1000 with their data on PVCs, behind a headless, a ClusterIP
// (port 7000 to the named port "redis"), a NodePort, a one-pod and a node-local Service, and
// a Service that selects nothing; a client pod with the tools images.
const servicesManifest = `
apiVersion: v1
kind: Service
metadata:
  name: redis-headless
spec:
  clusterIP: None
  selector: {app: redis}
  ports: [{name: redis, port: 6379}]
---
apiVersion: v1
kind: Service
metadata:
  name: redis
spec:
  selector: {app: redis}
  ports: [{name: redis, port: 7000, targetPort: redis}]
---
apiVersion: v1
kind: Service
metadata:
  name: redis-nodeport
spec:
  type: NodePort
  selector: {app: redis}
  ports: [{name: redis, port: 6379, targetPort: 6379}]
---
apiVersion: v1
kind: Service
metadata:
  name: redis-0-only
spec:
  selector: {statefulset.kubernetes.io/pod-name: redis-0}
  ports: [{name: redis, port: 6379}]
---
apiVersion: v1
kind: Service
metadata:
  name: redis-local
spec:
  internalTrafficPolicy: Local
  selector: {app: redis}
  ports: [{name: redis, port: 6379}]
---
apiVersion: v1
kind: Service
metadata:
  name: lonely
spec:
  selector: {app: nobody}
  ports: [{name: redis, port: 6379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis
spec:
  serviceName: redis-headless
  replicas: 2
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: redis}
  template:
    metadata:
      labels: {app: redis}
    spec:
      terminationGracePeriodSeconds: 5
      securityContext:
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        runAsNonRoot: true
      containers:
        - name: redis
          image: redis:7.2
          args: ["--appendonly", "yes"]
          ports: [{name: redis, containerPort: 6379}]
          readinessProbe:
            exec:
              command: [redis-cli, ping]
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
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: busybox
      image: busybox:1.36
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    - name: alpine
      image: alpine:3.20
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    - name: debian
      image: debian:bookworm-slim
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    - name: redis
      image: redis:7.2
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
`

// Services work as on a real cluster: by DNS name from client pods of every tools image,
// through ClusterIPs with port mapping and load balancing, through headless Services, to the
// caller's node only with internalTrafficPolicy Local, from
// the host, on NodePorts of every node address, back to the calling pod itself (hairpin),
// and they follow a recreated pod, whose containers get the Services' variables. Redis runs as
// uid 1000 and writes its PVC.
func TestServicesAndDNS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "svc")
	sb.Apply(t, ns, servicesManifest)
	pods := sb.WaitPodsReady(t, ns, "app=redis", 2, 2*time.Minute)
	sb.WaitPodReady(t, ns, "client", time.Minute)

	sh := func(pod, container, script string) (string, error) {
		out, stderr, err := sb.Exec(ctx, ns, pod, container, "sh", "-c", script)
		if err != nil {
			return out, fmt.Errorf("%w (stderr %q)", err, stderr)
		}
		return out, nil
	}
	runIDs := map[string]string{} // run_id -> pod
	for i := range pods {
		id, err := sb.Redis(t, &pods[i]).InfoMap(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		runIDs[id["Server"]["run_id"]] = pods[i].Name
	}
	fqdn := "redis." + ns + ".svc.cluster.local"

	// The Service's endpoints follow readiness within moments; then every name form works
	// from every tools image.
	sb.WaitFor(t, ns, "the ClusterIP Service to answer by name", 30*time.Second, func(context.Context) (bool, string, error) {
		out, err := sh("client", "busybox", "redis-cli -h "+fqdn+" -p 7000 ping")
		return strings.TrimSpace(out) == "PONG", out, err
	})
	for _, c := range []struct{ container, script, want string }{
		{"busybox", "redis-cli -h redis -p 7000 ping", "PONG"},
		{"alpine", "redis-cli -h redis." + ns + " -p 7000 ping", "PONG"},
		{"debian", "redis-cli -h " + fqdn + " -p 7000 ping", "PONG"},
		{"redis", "redis-cli -h redis-headless." + ns + ".svc.cluster.local ping", "PONG"},
		{"debian", "getent hosts redis-1.redis-headless." + ns + ".svc.cluster.local | cut -d' ' -f1", pods[1].Status.PodIP},
		{"debian", "nslookup redis-0.redis-headless." + ns + ".svc.cluster.local | grep -c '^Address: " + pods[0].Status.PodIP + "$'", "1"},
		{"alpine", "curl -sk https://kubernetes.default.svc/healthz", "ok"},
		// Anything outside the cluster fails at once, without leaving the machine.
		{"busybox", "getent hosts example.com || echo unknown", "unknown"},
		// A Service without endpoints refuses connections.
		{"busybox", "redis-cli -h lonely ping 2>&1 | grep -c refused", "1"},
	} {
		// Endpoints and DNS records follow readiness eventually, as on any cluster: each
		// check gets a few seconds to come true.
		if err := sb.Poll(c.container+": "+c.script+" to print "+c.want, 20*time.Second, func(context.Context) (bool, string, error) {
			out, err := sh("client", c.container, c.script)
			return strings.TrimSpace(out) == c.want, out, err
		}); err != nil {
			t.Error(err)
		}
	}

	// The ClusterIP spreads connections over both pods, once both are among its endpoints
	// (a pod's readiness reaches the EndpointSlice a moment after the pod's status).
	if err := sb.Poll("24 connections through the ClusterIP to reach both pods", 20*time.Second, func(context.Context) (bool, string, error) {
		out, err := sh("client", "redis", "for i in $(seq 1 24); do redis-cli -h redis -p 7000 info server | grep run_id; done")
		seen := map[string]bool{}
		for _, line := range strings.Fields(out) {
			if pod, ok := runIDs[strings.TrimPrefix(line, "run_id:")]; ok {
				seen[pod] = true
			}
		}
		return len(seen) == 2, fmt.Sprintf("reached %v", seen), err
	}); err != nil {
		t.Error(err)
	}

	// Hairpin: redis-0 reaches itself through a Service whose only endpoint it is.
	if err := sb.Poll("redis-0 to reach itself through its own Service", 20*time.Second, func(context.Context) (bool, string, error) {
		out, err := sh("redis-0", "redis", "redis-cli -h redis-0-only info server | grep run_id")
		return runIDs[strings.TrimPrefix(strings.TrimSpace(out), "run_id:")] == "redis-0", out, err
	}); err != nil {
		t.Error(err)
	}

	// Every node has its own kube-proxy: with internalTrafficPolicy Local, a pod reaches only
	// the endpoints on its own node.
	for _, p := range pods {
		local := map[string]bool{}
		for id, name := range runIDs {
			for _, q := range pods {
				if q.Name == name && q.Spec.NodeName == p.Spec.NodeName {
					local[id] = true
				}
			}
		}
		var ids []string
		if err := sb.Poll(p.Name+" to reach redis-local 6 times", 20*time.Second, func(context.Context) (bool, string, error) {
			out, err := sh(p.Name, "redis", "for i in 1 2 3 4 5 6; do redis-cli -h redis-local info server | grep run_id; done")
			ids = strings.Fields(out)
			return len(ids) == 6, out, err
		}); err != nil {
			t.Error(err)
		}
		for _, line := range ids {
			if !local[strings.TrimPrefix(line, "run_id:")] {
				t.Errorf("%s on %s reached %s through an internalTrafficPolicy Local Service (pods %v)", p.Name, p.Spec.NodeName, line, runIDs)
			}
		}
	}

	// From the host: the ClusterIP, and the NodePort on every node's address, also from a pod.
	svc, err := sb.Kube.CoreV1().Services(ns).Get(ctx, "redis", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.RedisAt(t, svc.Spec.ClusterIP, 7000).Ping(ctx).Err(); err != nil {
		t.Errorf("PING the ClusterIP %s:7000 from the host: %v", svc.Spec.ClusterIP, err)
	}
	np, err := sb.Kube.CoreV1().Services(ns).Get(ctx, "redis-nodeport", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := int(np.Spec.Ports[0].NodePort)
	nodes, err := sb.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		var addr string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				addr = a.Address
			}
		}
		if err := sb.RedisAt(t, addr, nodePort).Ping(ctx).Err(); err != nil {
			t.Errorf("PING NodePort %s of node %s from the host: %v", net.JoinHostPort(addr, strconv.Itoa(nodePort)), n.Name, err)
		}
		if out, err := sh("client", "busybox", fmt.Sprintf("redis-cli -h %s -p %d ping", addr, nodePort)); strings.TrimSpace(out) != "PONG" {
			t.Errorf("PING NodePort %s:%d of node %s from a pod: %q %v", addr, nodePort, n.Name, out, err)
		}
	}

	// Redis runs as uid 1000 and writes its PVC, owned by the fsGroup.
	if err := sb.RedisAt(t, svc.Spec.ClusterIP, 7000).Set(ctx, "through", "service", 0).Err(); err != nil {
		t.Errorf("SET through the ClusterIP: %v", err)
	}
	for _, p := range pods {
		out, err := sh(p.Name, "redis", "redis-cli save >/dev/null && id -u && stat -c '%u %g' /data/dump.rdb && ls /data/appendonlydir | grep -c aof")
		if f := strings.Fields(out); len(f) != 4 || f[0] != "1000" || f[1] != "1000" || f[2] != "1000" || f[3] == "0" {
			t.Errorf("%s: uid, owner of dump.rdb on the PVC, AOF files = %q (%v); want uid 1000 writing files owned by 1000:1000", p.Name, out, err)
		}
	}

	// A recreated pod: its name resolves to its new IP, and the Service reaches it.
	old := pods[0]
	if err := sb.Kube.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var fresh *corev1.Pod
	sb.WaitFor(t, ns, "redis-0 recreated and ready", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		fresh = p
		return p.UID != old.UID && p.DeletionTimestamp == nil && framework.PodReady(p), p.Status.PodIP, nil
	})
	if fresh.Status.PodIP == old.Status.PodIP {
		t.Errorf("redis-0 came back with its old IP %s", old.Status.PodIP)
	}
	name := "redis-0.redis-headless." + ns + ".svc.cluster.local"
	sb.WaitFor(t, ns, name+" to resolve to the new IP "+fresh.Status.PodIP, 30*time.Second, func(context.Context) (bool, string, error) {
		out, err := sh("client", "busybox", "getent hosts "+name)
		return strings.HasPrefix(out, fresh.Status.PodIP+" "), out, err
	})
	// Containers started after the Services get their variables, as from a kubelet.
	if out, err := sh(old.Name, "redis", "echo $REDIS_SERVICE_HOST $REDIS_SERVICE_PORT_REDIS $REDIS_PORT $KUBERNETES_SERVICE_HOST"); strings.TrimSpace(out) !=
		fmt.Sprintf("%s 7000 tcp://%s:7000 %s", svc.Spec.ClusterIP, svc.Spec.ClusterIP, sb.Inst.KubernetesServiceIP()) {
		t.Errorf("Service variables in the recreated redis-0: %q (%v)", out, err)
	}
	info, err := sb.Redis(t, fresh).InfoMap(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	freshID := info["Server"]["run_id"]
	sb.WaitFor(t, ns, "the one-pod Service to reach the new redis-0", 30*time.Second, func(context.Context) (bool, string, error) {
		out, err := sh("client", "redis", "redis-cli -h redis-0-only info server | grep run_id")
		return strings.TrimSpace(out) == "run_id:"+freshID, out, err
	})
}
