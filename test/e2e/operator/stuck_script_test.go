package operator

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

// runForever sends a Lua script that never ends to the Redis at ip:6379 and leaves it running:
// from then on the server answers nothing but BUSY, as one stuck in a user's script does. The
// connection is never read; it ends with the server's restart or the test.
func runForever(t *testing.T, ip string) {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(ip, "6379"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	const script = "while true do end"
	command := fmt.Sprintf("*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n", len(script), script)
	if _, err := conn.Write([]byte(command)); err != nil {
		t.Fatal(err)
	}
}

// restarts is how often the kubelet restarted the pod's first container.
func restarts(pod *corev1.Pod) int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerOf(pod) {
			return cs.RestartCount
		}
	}
	return 0
}

// A replication's master stuck in a script answers only BUSY: its liveness probe (a PING)
// fails and the kubelet restarts its container in place, at the same address, with no pod
// event, and from an emptyDir that holds only what its AOF had. The master moves to the
// replica that holds the most; the restarted pod starts as a replica waiting for its master,
// so the replicas that re-link to its address by themselves keep what they hold, and it
// rejoins as a replica of the new master. Every acknowledged key is on every pod.
func TestReplicationMasterStuckInAScriptIsRestartedAndReplaced(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "stuck-replication")
	ctx := context.Background()
	const name = "stuck"
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: stuck
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  livenessProbe:
    initialDelaySeconds: 5
    periodSeconds: 2
    timeoutSeconds: 1
    failureThreshold: 3
`)
	cr := &v1beta2.RedisReplication{}
	waitReady := func(why string, since time.Time, notMaster string) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication Ready "+why, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && !ready.LastTransitionTime.Time.Before(since.Truncate(time.Second)) &&
					cr.Status.MasterNode != "" && cr.Status.MasterNode != notMaster,
				fmt.Sprintf("master %q: %v", cr.Status.MasterNode, ready), nil
		})
	}
	waitReady("at first", time.Now().Add(-time.Hour), "")
	stuck := getPod(t, ns, cr.Status.MasterNode)
	m := sb.Redis(t, stuck)
	for i := range 100 {
		if err := m.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := m.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v", n, err)
	}

	fault := faultTime()
	runForever(t, stuck.Status.PodIP)
	sb.WaitFor(t, ns, "the liveness probe to restart "+stuck.Name, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := getPod(t, ns, stuck.Name)
		return restarts(p) >= 1 && p.Status.PodIP == stuck.Status.PodIP, fmt.Sprintf("%d restarts at %s", restarts(p), p.Status.PodIP), nil
	})
	waitReady("on another master", fault, stuck.Name)
	promoted := cr.Status.MasterNode
	for i := range 3 {
		pod := getPod(t, ns, fmt.Sprintf("%s-%d", name, i))
		rdb := sb.Redis(t, pod)
		sb.WaitFor(t, ns, "every key and its role on "+pod.Name, time.Minute, func(ctx context.Context) (bool, string, error) {
			info, err := rdb.Info(ctx, "replication").Result()
			if err != nil {
				return false, "", err
			}
			if pod.Name == promoted {
				if !strings.Contains(info, "role:master") {
					return false, "not master: " + info, nil
				}
			} else if !strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_host:"+getPod(t, ns, promoted).Status.PodIP+"\r") {
				return false, "not a linked replica of " + promoted + ": " + info, nil
			}
			for i := range 100 {
				if v, err := rdb.Get(ctx, "k"+strconv.Itoa(i)).Int(); err != nil || v != i {
					return false, fmt.Sprintf("k%d = %d, %v", i, v, err), nil
				}
			}
			return true, "", nil
		})
	}
}

// A cluster's leader stuck in a script answers its clients only BUSY, while its cluster bus
// still answers the other nodes' pings (Redis runs its event loop during a long script), so no
// node flags it and no replica takes its shard over by itself. The resource says so at once
// (Degraded, naming the pod); once the leader has answered BUSY for the operator's grace
// (15 s), the operator has its replica take the shard over with CLUSTER FAILOVER FORCE, long
// before the liveness probe (60 s here) gives up, and every key is read through the cluster
// while the leader is still stuck. The probe then restarts the container in place, the node
// comes back from its volume, takes its shard back, and every key is read again.
func TestClusterLeaderStuckInAScriptIsFailedOverThenRestartedByItsProbe(t *testing.T) {
	t.Parallel()
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: stuck-cluster
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisLeader:
    livenessProbe:
      initialDelaySeconds: 5
      periodSeconds: 10
      timeoutSeconds: 5
      failureThreshold: 6
`)
	c.waitReady(time.Now().Add(-time.Hour))
	c.writeKeys("stuck", 300)
	leader := c.pod("stuck-cluster-leader-0")
	var replica *corev1.Pod
	for _, p := range c.pods(c.ctx) {
		if role, err := redis.ParseRole(c.redis(&p).Do(c.ctx, "ROLE").Val()); err == nil && role.Kind == redis.RoleSlave && role.MasterIP == leader.Status.PodIP {
			replica = &p
		}
	}
	if replica == nil {
		t.Fatalf("no replica of %s", leader.Name)
	}

	fault := faultTime()
	runForever(t, leader.Status.PodIP)
	sb.WaitFor(t, c.ns, "the stuck "+leader.Name+" named on the resource", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisCluster{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cr); err != nil {
			return false, "", err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && strings.Contains(d.Message, leader.Name), fmt.Sprintf("%+v", d), nil
	})
	sb.WaitFor(t, c.ns, replica.Name+" taking the stuck shard over", 90*time.Second, func(ctx context.Context) (bool, string, error) {
		role, err := c.redis(replica).Do(ctx, "ROLE").Slice()
		if err != nil {
			return false, err.Error(), nil
		}
		return role[0] == "master", fmt.Sprintf("%s is %v", replica.Name, role[0]), nil
	})
	tookOver := time.Since(fault)
	if n := restarts(c.pod(leader.Name)); n != 0 {
		t.Errorf("%s restarted %d times before its replica took over: the probe, not the operator, moved the shard", leader.Name, n)
	}
	if !hasEvent(t, c.ns, "StuckMasterFailover") {
		t.Error("no StuckMasterFailover event")
	}
	c.readKeys("stuck", 300)
	t.Logf("%s took the shard over %s after the script started", replica.Name, tookOver.Round(time.Second))

	sb.WaitFor(t, c.ns, "the liveness probe to restart "+leader.Name, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := c.pod(leader.Name)
		return restarts(p) >= 1 && p.Status.PodIP == leader.Status.PodIP, fmt.Sprintf("%d restarts", restarts(p)), nil
	})
	c.waitReady(fault)
	c.readKeys("stuck", 300)
	c.assertShape()
}
