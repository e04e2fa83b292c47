package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/writecheck"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

const clusterReadyTimeout = 4 * time.Minute

// cluster is a RedisCluster under test.
type cluster struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	name string
	// password is the one clients authenticate with, "" for none; username the user they log
	// in as, "" for the default user.
	password, username string
	// tls, when set, is how clients reach a cluster that serves TLS only.
	tls *tls.Config
}

// faultTime waits for the next second and returns the time: the status's transition times have
// second precision, so a Ready older than the fault never passes for one after it.
func faultTime() time.Time {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
	return time.Now()
}

func sample(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sb.Repo(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (c *cluster) get() *v1beta2.RedisCluster {
	c.t.Helper()
	cr := &v1beta2.RedisCluster{}
	if err := sb.Client.Get(c.ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cr); err != nil {
		c.t.Fatal(err)
	}
	return cr
}

// waitReady waits for the status to say Ready, having become so after since (the status must
// have seen what the test did), and checks that it is true: every pod says cluster_state:ok,
// leader pods are masters and follower pods replicas.
func (c *cluster) waitReady(since time.Time) {
	c.t.Helper()
	sb.WaitFor(c.t, c.ns, "RedisCluster "+c.name+" Ready with designed roles", clusterReadyTimeout, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisCluster{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		seen := fmt.Sprintf("state=%s reason=%q ready=%+v", cr.Status.State, cr.Status.Reason, ready)
		if cr.Status.State != "Ready" || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != cr.Generation ||
			ready.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
			return false, seen, nil
		}
		for _, p := range c.pods(ctx) {
			role, err := c.redis(&p).Do(ctx, "ROLE").Slice()
			if err != nil {
				return false, seen, err
			}
			want := "master"
			if strings.Contains(p.Name, "-follower-") {
				want = "slave"
			}
			if role[0] != want {
				return false, fmt.Sprintf("%s; pod %s is %v", seen, p.Name, role[0]), nil
			}
			info, err := c.redis(&p).ClusterInfo(ctx).Result()
			if err != nil {
				return false, seen, err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false, fmt.Sprintf("%s; pod %s is not cluster_state:ok", seen, p.Name), nil
			}
		}
		return true, seen, nil
	})
}

func (c *cluster) pods(ctx context.Context) []corev1.Pod {
	var pods corev1.PodList
	if err := sb.Client.List(ctx, &pods, client.InNamespace(c.ns), client.MatchingLabels{"app.kubernetes.io/instance": c.name}); err != nil {
		c.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *cluster) pod(name string) *corev1.Pod {
	c.t.Helper()
	p := &corev1.Pod{}
	if err := sb.Client.Get(c.ctx, client.ObjectKey{Namespace: c.ns, Name: name}, p); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *cluster) redis(p *corev1.Pod) *goredis.Client {
	if c.tls != nil {
		return tlsClientAs(c.t, p.Status.PodIP, 6379, c.username, c.password, c.tls)
	}
	if c.username != "" {
		rdb := goredis.NewClient(&goredis.Options{Addr: p.Status.PodIP + ":6379", Username: c.username, Password: c.password, MaxRetries: -1,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
		c.t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	return sb.RedisWithPassword(c.t, p.Status.PodIP, 6379, c.password)
}

func (c *cluster) client() *goredis.ClusterClient {
	return c.clientWith(c.clientOptions())
}

// clientOptions are the options of a cluster client to the pods that run now.
func (c *cluster) clientOptions() *goredis.ClusterOptions {
	var addrs []string
	for _, p := range c.pods(c.ctx) {
		addrs = append(addrs, p.Status.PodIP+":6379")
	}
	opts := &goredis.ClusterOptions{Addrs: addrs, Username: c.username, Password: c.password, MaxRedirects: 8, DialTimeout: 2 * time.Second}
	if c.tls != nil {
		// A TLS cluster redirects clients by the pods' DNS names, which only the sandbox's
		// DNS server knows.
		opts.Dialer = tlsDialer(sandboxResolver(c.t), c.tls)
	}
	return opts
}

// clientWith opens a cluster client; it is closed when the test ends.
func (c *cluster) clientWith(opts *goredis.ClusterOptions) *goredis.ClusterClient {
	cc := goredis.NewClusterClient(opts)
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func (c *cluster) writeKeys(prefix string, n int) {
	c.t.Helper()
	cc := c.client()
	for i := 0; i < n; i++ {
		if err := cc.Set(c.ctx, fmt.Sprintf("%s-%d", prefix, i), i, 0).Err(); err != nil {
			c.t.Fatalf("SET %s-%d: %v", prefix, i, err)
		}
	}
	// Every master waits for its replica, so that no acknowledged write is lost to a failover.
	for _, p := range c.pods(c.ctx) {
		if strings.Contains(p.Name, "-leader-") {
			_ = c.redis(&p).Do(c.ctx, "WAIT", 1, 5000).Err()
		}
	}
}

func (c *cluster) readKeys(prefix string, n int) {
	c.t.Helper()
	c.readKeysDiagnosing(prefix, n, "scenario")
}

// readKeysDiagnosing reads prefix-0 … prefix-(n-1) through a new client; the first that reads
// wrong is diagnosed, read again after 5 s, and fails the test.
func (c *cluster) readKeysDiagnosing(prefix string, n int, what string) {
	c.t.Helper()
	cc := c.client()
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		got, err := cc.Get(c.ctx, key).Int()
		if err == nil && got == i {
			continue
		}
		c.diagnoseKey(key, what)
		time.Sleep(5 * time.Second)
		again, againErr := c.client().Get(c.ctx, key).Int()
		c.t.Fatalf("after the %s a new client read %s = %d, %v (want %d); 5 s later another read %d, %v", what, key, got, err, i, again, againErr)
	}
}

// diagnoseKey logs, for key's slot, the owner each pod's view names, and what each pod holds
// under key (replicas read with READONLY).
func (c *cluster) diagnoseKey(key, what string) {
	c.t.Helper()
	slot := writecheck.HashSlot(key)
	for _, p := range c.pods(c.ctx) {
		rdb := c.redis(&p)
		nodes, err := rdb.ClusterNodes(c.ctx).Result()
		owner := "?"
		if err == nil {
			owner = slotOwnerIn(nodes, slot)
		}
		conn := rdb.Conn()
		_ = conn.ReadOnly(c.ctx).Err()
		val, getErr := conn.Get(c.ctx, key).Result()
		_ = conn.Close()
		role, _ := rdb.Do(c.ctx, "ROLE").Slice()
		// A replica's ROLE names its master and its link's state.
		c.t.Logf("after the %s, key %s (slot %d) on pod %s (%s, ROLE %v): owner in its view %s; GET %q, %v",
			what, key, slot, p.Name, p.Status.PodIP, roleSummary(role), owner, val, getErr)
	}
}

// roleSummary is ROLE without a master's list of replicas: "master <offset>", or "slave
// <master ip> <port> <link state> <offset>".
func roleSummary(role []any) string {
	switch {
	case len(role) == 0:
		return "?"
	case role[0] == "master" && len(role) > 1:
		return fmt.Sprintf("master %v", role[1])
	}
	return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(role), "["), "]")
}

// slotOwnerIn names the node that CLUSTER NODES text maps slot to: its address, flags and epoch.
func slotOwnerIn(nodes string, slot int) string {
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA == nil && errB == nil && slot >= a && slot <= b {
				return fmt.Sprintf("%s %s %s epoch %s", f[0][:8], f[1], f[2], f[6])
			}
		}
	}
	return "none"
}

// assertShape checks CLUSTER INFO on every pod and the status counts of a 3×3 cluster.
func (c *cluster) assertShape() {
	c.t.Helper()
	c.assertShapeOf(3, 3)
}

// assertShapeOf checks CLUSTER INFO on every pod and the status counts.
func (c *cluster) assertShapeOf(leaders, followers int) {
	c.t.Helper()
	if pods := c.pods(c.ctx); len(pods) != leaders+followers {
		c.t.Errorf("%d pods, want %d", len(pods), leaders+followers)
	}
	for _, p := range c.pods(c.ctx) {
		text, err := c.redis(&p).ClusterInfo(c.ctx).Result()
		if err != nil {
			c.t.Fatal(err)
		}
		info, err := redis.ParseClusterInfo(text)
		if err != nil {
			c.t.Fatal(err)
		}
		if info.State != "ok" || info.SlotsOK != redis.SlotCount || info.KnownNodes != leaders+followers || info.Size != leaders {
			c.t.Errorf("pod %s: CLUSTER INFO %+v, want ok, %d slots, %d nodes, size %d", p.Name, info, redis.SlotCount, leaders+followers, leaders)
		}
	}
	cr := c.get()
	if int(cr.Status.ReadyLeaderReplicas) != leaders || int(cr.Status.ReadyFollowerReplicas) != followers {
		c.t.Errorf("status ready counts %d/%d, want %d/%d", cr.Status.ReadyLeaderReplicas, cr.Status.ReadyFollowerReplicas, leaders, followers)
	}
}

func newCluster(t *testing.T, manifest string) *cluster {
	t.Helper()
	ns := sb.Namespace(t, "cluster")
	sb.Apply(t, ns, manifest)
	name := "redis-cluster"
	if i := strings.Index(manifest, "name: "); i >= 0 {
		name = strings.Fields(manifest[i+len("name: "):])[0]
	}
	return &cluster{t: t, ctx: context.Background(), ns: ns, name: name}
}

func TestClusterSampleServesEverySlotAndHeals(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, sample(t, "redis_v1beta2_rediscluster_minimal.yaml"))
	c.waitReady(start)
	c.assertShape()
	c.writeKeys("a", 500)
	c.readKeys("a", 500)

	t.Run("leader process crashes", func(t *testing.T) {
		c.t = t
		fault := faultTime()
		if err := sb.Fault.CrashContainer(c.ctx, c.ns, c.name+"-leader-0", c.name+"-leader"); err != nil {
			t.Fatal(err)
		}
		c.waitReady(fault)
		c.assertShape()
		c.readKeys("a", 500)
	})
	t.Run("leader pod deleted", func(t *testing.T) {
		c.t = t
		before := c.pod(c.name + "-leader-1").Status.PodIP
		fault := faultTime()
		if err := sb.Client.Delete(c.ctx, c.pod(c.name+"-leader-1")); err != nil {
			t.Fatal(err)
		}
		sb.WaitFor(t, c.ns, "leader-1 back with a new IP", time.Minute, func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name + "-leader-1"}, p); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			return framework.PodReady(p) && p.Status.PodIP != before, p.Status.PodIP, nil
		})
		c.waitReady(fault)
		c.assertShape()
		c.readKeys("a", 500)
	})
	t.Run("follower replaced by an empty node", func(t *testing.T) {
		c.t = t
		fault := faultTime()
		if err := sb.Client.Delete(c.ctx, c.pod(c.name+"-follower-2")); err != nil {
			t.Fatal(err)
		}
		c.waitReady(fault)
		c.assertShape() // 6 known nodes: the old follower's ID is forgotten everywhere
		c.readKeys("a", 500)
	})
}

const persistentCluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: durable
spec:
  clusterSize: 3
  persistenceEnabled: true
  kubernetesConfig:
    image: redis:7.0.15
  storage:
    nodeConfVolume: true
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 100Mi}}
    nodeConfVolumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 10Mi}}
`

func TestOperatorKilledDuringBootstrapIsFinished(t *testing.T) {
	c := newCluster(t, strings.Replace(sample(t, "redis_v1beta2_rediscluster_minimal.yaml"), "name: redis-cluster", "name: interrupted", 1))
	sb.WaitFor(t, c.ns, "bootstrap under way", clusterReadyTimeout, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisCluster{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.State == "Bootstrap", cr.Status.State, nil
	})
	var pods corev1.PodList
	if err := sb.Client.List(c.ctx, &pods, client.InNamespace("redis-operator-system")); err != nil || len(pods.Items) == 0 {
		t.Fatalf("operator pod: %v (%d pods)", err, len(pods.Items))
	}
	if err := sb.Fault.CrashContainer(c.ctx, "redis-operator-system", pods.Items[0].Name, "manager"); err != nil {
		t.Fatal(err)
	}
	c.waitReady(time.Time{})
	c.assertShape()
	c.writeKeys("b", 200)
	c.readKeys("b", 200)
}

func TestStandaloneSampleServes(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "standalone")
	sb.Apply(t, ns, sample(t, "redis_v1beta2_redis_minimal.yaml"))
	ctx := context.Background()
	sb.WaitFor(t, ns, "Redis Ready", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.Redis{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-standalone"}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.State == "Ready", fmt.Sprintf("%s %s", cr.Status.State, cr.Status.Reason), nil
	})
	p := &corev1.Pod{}
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-standalone-0"}, p); err != nil {
		t.Fatal(err)
	}
	r := sb.Redis(t, p)
	if err := r.Set(ctx, "hello", "world", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Get(ctx, "hello").Result(); err != nil || v != "world" {
		t.Fatalf("GET hello = %q, %v", v, err)
	}
}
