package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

const nodePortCluster = `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: external
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    service:
      serviceType: NodePort
`

// nodeAddresses are the InternalIPs of the sandbox's nodes, by node name.
func nodeAddresses(t *testing.T) map[string]string {
	t.Helper()
	var nodes corev1.NodeList
	if err := sb.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out[n.Name] = a.Address
			}
		}
	}
	return out
}

// podNodePorts are the client and bus node ports of the per-pod Services, by pod.
func (c *cluster) podNodePorts() map[string][2]int32 {
	c.t.Helper()
	out := map[string][2]int32{}
	for _, p := range c.pods(c.ctx) {
		svc := &corev1.Service{}
		if err := sb.Client.Get(c.ctx, client.ObjectKey{Namespace: c.ns, Name: p.Name}, svc); err != nil {
			c.t.Fatalf("Service of pod %s: %v", p.Name, err)
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != p.Name {
			c.t.Fatalf("Service %s: type %s, selector %v", p.Name, svc.Spec.Type, svc.Spec.Selector)
		}
		var ports [2]int32
		for _, sp := range svc.Spec.Ports {
			switch sp.Name {
			case "redis-client":
				ports[0] = sp.NodePort
			case "redis-bus":
				ports[1] = sp.NodePort
			}
		}
		if ports[0] == 0 || ports[1] == 0 {
			c.t.Fatalf("Service %s has node ports %v", p.Name, ports)
		}
		out[p.Name] = ports
	}
	return out
}

// externalClient is a cluster client on the host that knows one address only: a node's IP
// and the node port of one pod's Service. Every other address comes from the cluster.
func externalClient(t *testing.T, addr string) *goredis.ClusterClient {
	t.Helper()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{addr}, MaxRedirects: 8,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// assertSlotMapExternal checks that the slot map a client gets names, for every node, the IP
// of the Kubernetes node its pod runs on and the node port of its pod's Service, and in time
// every pod (a replica is listed once the others have heard of its replication offset).
func (c *cluster) assertSlotMapExternal(cc *goredis.ClusterClient) {
	c.t.Helper()
	nodes := nodeAddresses(c.t)
	want := map[string]string{} // address → pod
	for pod, ports := range c.podNodePorts() {
		p := c.pod(pod)
		if p.Status.HostIP != nodes[p.Spec.NodeName] {
			c.t.Errorf("pod %s: hostIP %s, its node %s has %s", pod, p.Status.HostIP, p.Spec.NodeName, nodes[p.Spec.NodeName])
		}
		want[net.JoinHostPort(p.Status.HostIP, strconv.Itoa(int(ports[0])))] = pod
	}
	sb.WaitFor(c.t, c.ns, "a slot map of node IPs and node ports naming every pod", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		ask, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		slots, err := cc.ClusterSlots(ask).Result() //nolint:staticcheck // the map go-redis's cluster client routes by
		if err != nil {
			// Say which of the addresses clients are sent to does not answer.
			var answers []string
			for addr, pod := range want {
				rdb := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
				pingCtx, cancelPing := context.WithTimeout(context.Background(), 2*time.Second)
				answers = append(answers, fmt.Sprintf("%s (%s): %v", addr, pod, rdb.Ping(pingCtx).Err()))
				cancelPing()
				_ = rdb.Close()
			}
			slices.Sort(answers)
			return false, "CLUSTER SLOTS: " + err.Error() + "; PING " + strings.Join(answers, ", "), nil
		}
		covered := 0
		seen := map[string]bool{}
		for _, s := range slots {
			covered += s.End - s.Start + 1
			for _, n := range s.Nodes {
				pod, ok := want[n.Addr]
				if !ok {
					return false, "", fmt.Errorf("slots %d-%d: node %s at %s is no node IP with a pod's node port (want one of %v)", s.Start, s.End, n.ID, n.Addr, want)
				}
				seen[pod] = true
			}
		}
		return covered == 16384 && len(seen) == len(want), fmt.Sprintf("%d slots, %d of %d pods: %+v", covered, len(seen), len(want), slots), nil
	})
}

// externalKeys is how many keys the NodePort tests write through an outside client.
const externalKeys = 300

// writeAndReadEveryShard writes externalKeys keys through the client, checks that every master holds
// some, and reads them back.
func (c *cluster) writeAndReadEveryShard(ctx context.Context, cc *goredis.ClusterClient, prefix string) {
	c.t.Helper()
	const n = externalKeys
	for i := range n {
		if err := cc.Set(ctx, fmt.Sprintf("%s-%d", prefix, i), i, 0).Err(); err != nil {
			c.t.Fatalf("SET %s-%d: %v", prefix, i, err)
		}
	}
	for _, p := range c.pods(ctx) {
		if role, err := c.redis(&p).Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
			continue
		}
		keys, err := c.redis(&p).DBSize(ctx).Result()
		if err != nil || keys == 0 {
			c.t.Errorf("master %s holds %d keys (%v): a shard was not written", p.Name, keys, err)
		}
		_ = c.redis(&p).Do(ctx, "WAIT", 1, 5000).Err()
	}
	c.readThrough(ctx, cc, prefix)
}

func (c *cluster) readThrough(ctx context.Context, cc *goredis.ClusterClient, prefix string) {
	c.t.Helper()
	const n = externalKeys
	for i := range n {
		got, err := cc.Get(ctx, fmt.Sprintf("%s-%d", prefix, i)).Int()
		if err != nil || got != i {
			c.t.Fatalf("GET %s-%d = %d, %v", prefix, i, got, err)
		}
	}
}

// objectLog records, in the API server's order (resource versions), the pods and Services of
// a namespace as they are added and deleted.
type objectLog struct {
	mu     sync.Mutex
	events []string // "ADDED Service/x", "DELETED Pod/x"
	stop   func()
}

func watchObjects(t *testing.T, ns string) *objectLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &objectLog{stop: cancel}
	var wg sync.WaitGroup
	for kind, w := range map[string]func() (watch.Interface, error){
		"Pod":     func() (watch.Interface, error) { return sb.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{}) },
		"Service": func() (watch.Interface, error) { return sb.Kube.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{}) },
	} {
		wi, err := w()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					obj, ok := ev.Object.(metav1.Object)
					if !ok || (ev.Type != watch.Added && ev.Type != watch.Deleted) {
						continue
					}
					rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
					l.mu.Lock()
					l.events = append(l.events, fmt.Sprintf("%020d %s %s/%s", rv, ev.Type, kind, obj.GetName()))
					l.mu.Unlock()
				}
			}
		}()
	}
	l.stop = func() { cancel(); wg.Wait() }
	return l
}

// waitFor waits until the watch has delivered event (e.g. "DELETED Service/x").
func (l *objectLog) waitFor(t *testing.T, event string, timeout time.Duration) {
	t.Helper()
	seen := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.ContainsFunc(l.events, func(e string) bool { return strings.HasSuffix(e, " "+event) })
	}
	for deadline := time.Now().Add(timeout); !seen(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not deliver %q within %s", event, timeout)
		}
	}
}

// before asserts that event a (e.g. "ADDED Service/x") happened, and before b.
func (l *objectLog) before(t *testing.T, a, b string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	events := slices.Clone(l.events)
	slices.Sort(events)
	ia := slices.IndexFunc(events, func(e string) bool { return strings.HasSuffix(e, " "+a) })
	ib := slices.IndexFunc(events, func(e string) bool { return strings.HasSuffix(e, " "+b) })
	if ia < 0 || ib < 0 || ia > ib {
		t.Errorf("want %q before %q, the API server saw:\n%s", a, b, strings.Join(events, "\n"))
	}
}

// A NodePort cluster is used from the host as from outside Kubernetes: a cluster client that
// knows one node IP and node port is sent to node IPs and node ports only, writes and reads
// every shard, and keeps doing so across a failover (the new pod may run on another node) and
// a scale-out and scale-in, whose pods' Services come before them and go after them.
func TestNodePortClusterServesClientsOutsideTheCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, nodePortCluster)
	c.waitReady(start)
	c.assertShape()

	ports := c.podNodePorts()
	entry := c.pod(c.name + "-leader-0")
	cc := externalClient(t, net.JoinHostPort(entry.Status.HostIP, strconv.Itoa(int(ports[entry.Name][0]))))
	c.assertSlotMapExternal(cc)
	c.writeAndReadEveryShard(c.ctx, cc, "np")
	outer := t // clients the subtests share are closed when the test ends, not a subtest

	t.Run("leader pod deleted", func(t *testing.T) {
		c.t = t
		fault := faultTime()
		if err := sb.Client.Delete(c.ctx, c.pod(c.name+"-leader-1")); err != nil {
			t.Fatal(err)
		}
		c.waitReady(fault)
		c.assertShape()
		c.assertSlotMapExternal(cc)
		c.readThrough(c.ctx, cc, "np")
		c.writeAndReadEveryShard(c.ctx, cc, "after-failover")
	})

	// Deleted at once (a forced deletion, as after a lost node): no hand-over, and the pod,
	// which keeps nodes.conf on no volume, comes back as an empty node at the very node IP
	// and node ports where the cluster knows its master. Its replica must take the shard
	// over and keep every key: it syncs from no empty node, and the new pod joins as a replica.
	t.Run("leader pod lost without a hand-over", func(t *testing.T) {
		c.t = t
		// A master: the operator may have moved a shard to spread masters over nodes since.
		var lost *corev1.Pod
		for i := 2; i >= 0 && lost == nil; i-- {
			p := c.pod(fmt.Sprintf("%s-leader-%d", c.name, i))
			if role, err := c.redis(p).Do(c.ctx, "ROLE").Slice(); err == nil && role[0] == "master" {
				lost = p
			}
		}
		if lost == nil {
			t.Fatal("no leader pod is a master")
		}
		t.Logf("deleting master %s at once", lost.Name)
		fault := faultTime()
		if err := sb.Client.Delete(c.ctx, lost, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		c.waitReady(fault)
		c.assertShape()
		if back := c.pod(lost.Name); back.UID == lost.UID {
			t.Fatalf("pod %s was not replaced", back.Name)
		}
		c.assertSlotMapExternal(cc)
		c.readThrough(c.ctx, cc, "np")
		c.readThrough(c.ctx, cc, "after-failover")
	})

	t.Run("Service recreated with other node ports", func(t *testing.T) {
		c.t = t
		pod := c.name + "-leader-2"
		before := c.podNodePorts()[pod]
		if err := sb.Client.Delete(c.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: pod}}); err != nil {
			t.Fatal(err)
		}
		// The running node is told its new ports at once; it is not restarted.
		restarts := c.pod(pod).Status.ContainerStatuses[0].RestartCount
		sb.WaitFor(t, c.ns, pod+" announces its new node ports", time.Minute, func(ctx context.Context) (bool, string, error) {
			svc := &corev1.Service{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: pod}, svc); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			var now int32
			for _, p := range svc.Spec.Ports {
				if p.Name == "redis-client" {
					now = p.NodePort
				}
			}
			nodes, err := c.redis(c.pod(c.name + "-leader-0")).ClusterNodes(ctx).Result()
			if err != nil {
				return false, "", err
			}
			want := fmt.Sprintf("%s:%d@", c.pod(pod).Status.HostIP, now)
			return now != 0 && now != before[0] && strings.Contains(nodes, want), "leader-0 sees\n" + nodes + "want " + want, nil
		})
		if got := c.pod(pod).Status.ContainerStatuses[0].RestartCount; got != restarts {
			t.Errorf("%s restarted (%d, then %d)", pod, restarts, got)
		}
		c.waitReady(start)
		// The old node port refuses connections now: a client that starts now is sent to the
		// new one.
		cc = externalClient(outer, net.JoinHostPort(entry.Status.HostIP, strconv.Itoa(int(ports[entry.Name][0]))))
		c.assertSlotMapExternal(cc)
		c.readThrough(c.ctx, cc, "np")
		c.readThrough(c.ctx, cc, "after-failover")
	})

	t.Run("scale-out and scale-in", func(t *testing.T) {
		c.t = t
		objects := watchObjects(t, c.ns)
		since := faultTime()
		c.resize(4)
		c.waitReady(since)
		c.assertShapeOf(4, 4)
		for _, pod := range []string{c.name + "-leader-3", c.name + "-follower-3"} {
			objects.before(t, "ADDED Service/"+pod, "ADDED Pod/"+pod)
			for _, cs := range c.pod(pod).Status.ContainerStatuses {
				if cs.RestartCount != 0 {
					t.Errorf("pod %s container %s restarted %d times: it started before its node ports were known", pod, cs.Name, cs.RestartCount)
				}
			}
		}
		c.assertSlotMapExternal(cc)
		c.readThrough(c.ctx, cc, "np")

		since = faultTime()
		c.resize(3)
		c.waitReady(since)
		c.assertShapeOf(3, 3)
		for _, pod := range []string{c.name + "-leader-3", c.name + "-follower-3"} {
			// Waited for on the watch, not by a GET: a GET can see the Service gone before
			// the watch delivers its deletion (one full run failed so).
			objects.waitFor(t, "DELETED Service/"+pod, time.Minute)
		}
		objects.stop()
		for _, pod := range []string{c.name + "-leader-3", c.name + "-follower-3"} {
			objects.before(t, "DELETED Pod/"+pod, "DELETED Service/"+pod)
		}
		// A client that kept the four-shard map would be sent to the removed pods' addresses,
		// which refuse connections as their pod IPs would: a client that starts now knows
		// only the three shards.
		cc = externalClient(t, net.JoinHostPort(entry.Status.HostIP, strconv.Itoa(int(ports[entry.Name][0]))))
		c.assertSlotMapExternal(cc)
		c.readThrough(c.ctx, cc, "np")
		c.readThrough(c.ctx, cc, "after-failover")
	})
}

// A NodePort cluster that serves TLS only is used from the host as from outside Kubernetes,
// with a certificate that names the Kubernetes nodes' IPs: a cluster client that knows one
// node IP and node port, and verifies every server's certificate against the IP it dials, is
// sent to node IPs and TLS node ports only (never to pod names, which it could neither
// resolve nor verify), and writes and reads every shard, also after a leader pod is deleted.
func TestNodePortTLSClusterServesVerifyingClientsOutsideTheCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: external-tls
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    service:
      serviceType: NodePort
  TLS:
    secret:
      secretName: redis-tls
`)
	ca := redistest.NewCA(t, "redis-ca")
	var nodeIPs []string
	for _, ip := range nodeAddresses(t) {
		nodeIPs = append(nodeIPs, ip)
	}
	c.tls = tlsSecret(t, c.ns, ca.CertPEM, ca.Issue(t, nodeIPs...))
	c.waitReady(start)
	c.assertShape()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	verifying := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(nodeIPs, host) {
			return nil, fmt.Errorf("sent to %s, which is no node's IP", addr)
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second},
			Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
		return d.DialContext(ctx, network, addr)
	}
	ports := c.podNodePorts()
	entry := c.pod(c.name + "-leader-0")
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs: []string{net.JoinHostPort(entry.Status.HostIP, strconv.Itoa(int(ports[entry.Name][0])))}, Dialer: verifying,
		MaxRedirects: 8, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	c.assertSlotMapExternal(cc)
	c.writeAndReadEveryShard(c.ctx, cc, "np-tls")

	fault := faultTime()
	if err := sb.Client.Delete(c.ctx, c.pod(c.name+"-leader-1")); err != nil {
		t.Fatal(err)
	}
	c.waitReady(fault)
	c.assertSlotMapExternal(cc)
	c.readThrough(c.ctx, cc, "np-tls")
}
