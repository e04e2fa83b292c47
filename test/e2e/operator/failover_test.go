package operator

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// kubectlRedis runs the plugin built into bin/ (make kubectl-redis) against the sandbox.
func kubectlRedis(t *testing.T, args ...string) string {
	t.Helper()
	// The kubeconfig flag goes before a "--": what follows it is a command for Redis.
	at := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		at = i
	}
	args = slices.Concat(args[:at], []string{"--kubeconfig", sb.Inst.Kubeconfig()}, args[at:])
	out, err := exec.Command(filepath.Join(sb.Repo(), "bin", "kubectl-redis"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl redis %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// failoverCondition waits for the Failover condition to say done and the request annotation
// to be gone.
func waitFailoverDone(t *testing.T, ns string, obj client.Object, conditions func() []metav1.Condition) {
	t.Helper()
	sb.WaitFor(t, ns, "the requested failover done", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(conditions(), "Failover")
		_, pending := obj.GetAnnotations()["redis.opstreelabs.in/failover"]
		return c != nil && c.Status == metav1.ConditionTrue && !pending, fmt.Sprintf("condition %+v, annotation pending %v", c, pending), nil
	})
}

// kubectl redis failover on a RedisReplication hands the master role to the replica the
// operator picks (FAILOVER TO), and every acknowledged key is read back from the new master;
// asked again towards a pod that is not in sync, it is refused with a Warning.
func TestRequestedReplicationFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "failover")
	sb.Apply(t, ns, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: moving
spec:
  clusterSize: 2
  kubernetesConfig:
    image: redis:7.0.15
`)
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moving"}}
	sb.WaitFor(t, ns, "RedisReplication Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && cr.Status.MasterNode != "", fmt.Sprintf("%+v", c), nil
	})
	before := cr.Status.MasterNode
	rdb := sb.Redis(t, getPod(t, ns, before))
	for i := range 100 {
		if err := rdb.Set(ctx, "k-"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rdb.Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}

	out := kubectlRedis(t, "failover", "moving", "-n", ns)
	t.Log(out)
	waitFailoverDone(t, ns, cr, func() []metav1.Condition { return cr.Status.Conditions })
	sb.WaitFor(t, ns, "the master moved off "+before, time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return false, "", err
		}
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != before, cr.Status.MasterNode, nil
	})
	master := sb.Redis(t, getPod(t, ns, cr.Status.MasterNode))
	role, err := master.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("%s answers ROLE %v, %v", cr.Status.MasterNode, role, err)
	}
	for i := range 100 {
		if v, err := master.Get(ctx, "k-"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("k-%d = %d, %v on the new master", i, v, err)
		}
	}
	if err := master.Set(ctx, "after", "failover", 0).Err(); err != nil {
		t.Errorf("the new master takes writes: %v", err)
	}

	// A pod that is not the replication's: refused with a Warning, the request dropped, the
	// master unmoved.
	moved := cr.Status.MasterNode
	t.Log(kubectlRedis(t, "failover", "moving", "moving-7", "-n", ns))
	sb.WaitFor(t, ns, "the request for moving-7 refused", time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(cr.Status.Conditions, "Failover")
		_, pending := cr.Annotations["redis.opstreelabs.in/failover"]
		return c != nil && c.Reason == "FailoverInvalid" && c.Status == metav1.ConditionFalse && !pending, fmt.Sprintf("%+v pending %v", c, pending), nil
	})
	var events corev1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, e := range events.Items {
		warned = warned || e.Type == corev1.EventTypeWarning && e.Reason == "FailoverInvalid" && strings.Contains(e.Message, "moving-7")
	}
	if !warned {
		t.Error("no Warning FailoverInvalid event naming moving-7")
	}
	if cr.Status.MasterNode != moved {
		t.Errorf("the master moved to %s on a refused request", cr.Status.MasterNode)
	}
}

// kubectl redis failover on a RedisCluster naming a leader pod: its replica takes the shard
// over with CLUSTER FAILOVER, keeps it (the leader pod does not take it back), and every key
// is read back.
func TestRequestedClusterFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, sample(t, "redis_v1beta2_rediscluster_minimal.yaml"))
	c.waitReady(start)
	c.writeKeys("f", 300)

	out := kubectlRedis(t, "failover", c.name, c.name+"-leader-1", "-n", c.ns)
	t.Log(out)
	cr := c.get()
	waitFailoverDone(t, c.ns, cr, func() []metav1.Condition { return cr.Status.Conditions })
	chosen := cr.Annotations["redis.opstreelabs.in/failover-target"]
	if !strings.HasPrefix(chosen, c.name+"-follower-") {
		t.Fatalf("failover-target %q, want a follower pod", chosen)
	}
	isMaster := func(pod string) bool {
		role, err := c.redis(c.pod(pod)).Do(c.ctx, "ROLE").Slice()
		return err == nil && role[0] == "master"
	}
	// It stays so: the operator does not hand the shard back to the leader pod.
	time.Sleep(10 * time.Second)
	if !isMaster(chosen) || isMaster(c.name+"-leader-1") {
		t.Fatalf("after the failover %s master %v, leader-1 master %v", chosen, isMaster(chosen), isMaster(c.name+"-leader-1"))
	}
	sb.WaitFor(t, c.ns, "the cluster Ready with the shard on "+chosen, time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := c.get()
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", ready), nil
	})
	c.readKeys("f", 300)
}
