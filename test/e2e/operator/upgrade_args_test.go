package operator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

// A replication left by an earlier release of the operator, whose containers set only args
// (`redis-server /etc/redis/redis.conf ...`, no command, no --replicaof: pods started as
// masters), is upgraded by this one under a writer whose writes a replica acknowledges: the
// role-aware rolling update replaces every pod with the current template (a command, pods
// that start waiting for their master), and every acknowledged write and every key written
// before is on the master at the end.
//
// The earlier release is made from this one's objects: with the replication skipped, its
// StatefulSet's template is turned into the args-only form and every pod started from it, the
// replicas pointed at the master by hand as that release did.
func TestReplicationOfAnArgsOnlyReleaseUpgradesUnderWrites(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "upgrade-args")
	ctx := context.Background()
	const name = "old"
	key := client.ObjectKey{Namespace: ns, Name: name}
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: old
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
`)
	cr := &v1beta2.RedisReplication{}
	waitReady := func(why string, since time.Time) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication Ready "+why, 6*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, key, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && !ready.LastTransitionTime.Time.Before(since.Truncate(time.Second)) &&
				cr.Status.ReadyReplicas == 3, fmt.Sprintf("%v", ready), nil
		})
	}
	waitReady("at first", time.Time{})
	master := getPod(t, ns, cr.Status.MasterNode)
	before := sb.Redis(t, master)
	for i := range 200 {
		if err := before.Set(ctx, "before-"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := before.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n < 2 {
		t.Fatalf("WAIT 2: %d replicas, %v", n, err)
	}

	skipReconcile(t, ns, key, true)
	var sts appsv1.StatefulSet
	if err := sb.Client.Get(ctx, key, &sts); err != nil {
		t.Fatal(err)
	}
	asEarlierRelease(t, &sts)
	applyAsOperator(t, &sts)
	for _, p := range replicationPods(t, ns, name) {
		if err := sb.Client.Delete(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	var pods []corev1.Pod
	sb.WaitFor(t, ns, "every pod started from the args-only template", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods = replicationPods(t, ns, name)
		running := 0
		for _, p := range pods {
			if p.Status.PodIP == "" || !argsOnly(&p) {
				continue
			}
			if err := sb.Redis(t, &p).Ping(ctx).Err(); err == nil {
				running++
			}
		}
		return running == 3, fmt.Sprintf("%d of %d pods args-only and answering", running, len(pods)), nil
	})
	// The earlier release's pods start as masters; it pointed the replicas at the master.
	master = getPod(t, ns, cr.Status.MasterNode)
	for _, p := range pods {
		if p.Name == master.Name {
			continue
		}
		if err := sb.Redis(t, &p).ReplicaOf(ctx, master.Status.PodIP, "6379").Err(); err != nil {
			t.Fatalf("REPLICAOF on %s: %v", p.Name, err)
		}
	}
	sb.WaitFor(t, ns, "the replicas linked to "+master.Name, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		linked := 0
		for _, p := range pods {
			if role, err := redis.ParseRole(sb.Redis(t, &p).Do(ctx, "ROLE").Val()); err == nil && role.Kind == redis.RoleSlave && role.LinkUp() {
				linked++
			}
		}
		return linked == 2, fmt.Sprintf("%d replicas linked", linked), nil
	})

	writes := startAcknowledgedWriter(t, ns, name+"-master", "")
	upgraded := time.Now()
	skipReconcile(t, ns, key, false)
	sb.WaitFor(t, ns, "every pod on the current template", 6*time.Minute, func(ctx context.Context) (bool, string, error) {
		current := 0
		for _, p := range replicationPods(t, ns, name) {
			if !argsOnly(&p) {
				current++
			}
		}
		return current == 3, fmt.Sprintf("%d of 3 pods on the current template", current), nil
	})
	waitReady("after the upgrade", upgraded)
	acknowledged, failures := writes()

	master = getPod(t, ns, cr.Status.MasterNode)
	reader := sb.Redis(t, master)
	var missing []string
	for i := range 200 {
		if err := reader.Get(ctx, "before-"+strconv.Itoa(i)).Err(); err != nil {
			missing = append(missing, "before-"+strconv.Itoa(i))
		}
	}
	for _, k := range acknowledged {
		if err := reader.Get(ctx, k).Err(); err != nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d keys missing on the master %s after the upgrade, first %v", len(missing), master.Name, missing[:min(5, len(missing))])
	}
	if len(acknowledged) < 20 {
		t.Errorf("only %d writes acknowledged during the upgrade (%d failed)", len(acknowledged), failures)
	}
	t.Logf("upgraded in %s: %d writes acknowledged, %d failed, master %s", time.Since(upgraded).Round(time.Second), len(acknowledged), failures, master.Name)
}

// A 3×(1+1) cluster left by an earlier release (args only: `redis-server ...` without the
// command, the shell that adds Redis 7's settings) is upgraded by this one under per-shard
// writers: every pod is replaced by the role-aware rolling update, no acknowledged write is
// lost, no shard's writes pause beyond the rolling update's bound, and the keys written
// before are read back. The earlier release is made as for the replication: the cluster skipped, its
// StatefulSets turned into the args-only form and their pods restarted one at a time from it,
// each rejoining by its volume's node ID at its new address.
func TestClusterOfAnArgsOnlyReleaseUpgradesUnderWrites(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: old
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
`)
	c.waitReady(start)
	c.writeKeys("before", 300)

	skipCluster(t, c, true)
	for _, role := range []string{"leader", "follower"} {
		var sts appsv1.StatefulSet
		if err := sb.Client.Get(c.ctx, client.ObjectKey{Namespace: c.ns, Name: c.name + "-" + role}, &sts); err != nil {
			t.Fatal(err)
		}
		asEarlierRelease(t, &sts)
		applyAsOperator(t, &sts)
	}
	for _, p := range c.pods(c.ctx) {
		if err := sb.Client.Delete(c.ctx, &p); err != nil {
			t.Fatal(err)
		}
		sb.WaitFor(t, c.ns, p.Name+" back from the args-only template, the cluster whole", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			back, settled := 0, 0
			for _, q := range c.pods(ctx) {
				if argsOnly(&q) {
					back += boolInt(q.Name == p.Name)
				}
				info, err := c.redis(&q).ClusterInfo(ctx).Result()
				if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:6") {
					nodes, err := c.redis(&q).ClusterNodes(ctx).Result()
					if err == nil && !strings.Contains(nodes, "fail") && !strings.Contains(nodes, "disconnected") {
						settled++
					}
				}
			}
			return back == 1 && settled == 6, fmt.Sprintf("%s back: %v; %d of 6 nodes see a whole cluster", p.Name, back == 1, settled), nil
		})
	}

	checker := c.startWriting("upgrade")
	upgraded := faultTime()
	skipCluster(t, c, false)
	c.waitRolledOut(6)
	c.waitReady(upgraded)
	for _, p := range c.pods(c.ctx) {
		if argsOnly(&p) {
			t.Errorf("pod %s still runs the args-only template", p.Name)
		}
	}
	c.requireWrites(checker, "during the upgrade", rollingUpdateShardPause)
	c.readKeys("before", 300)
}

// skipCluster sets or removes the cluster's skip-reconcile annotation and, when setting it,
// waits until the operator says it skips the cluster.
func skipCluster(t *testing.T, c *cluster, skip bool) {
	t.Helper()
	cr := c.get()
	patch := client.MergeFrom(cr.DeepCopy())
	if skip {
		metav1.SetMetaDataAnnotation(&cr.ObjectMeta, "rediscluster.opstreelabs.in/skip-reconcile", "true")
	} else {
		delete(cr.Annotations, "rediscluster.opstreelabs.in/skip-reconcile")
	}
	if err := sb.Client.Patch(c.ctx, cr, patch); err != nil {
		t.Fatal(err)
	}
	if skip {
		sb.WaitFor(t, c.ns, "the operator to skip the cluster", 30*time.Second, func(ctx context.Context) (bool, string, error) {
			cr := c.get()
			p := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionProgressing)
			return p != nil && p.Reason == "SkipReconcile", fmt.Sprintf("%+v", p), nil
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// asEarlierRelease turns the Redis container of a StatefulSet's template into the form the
// releases before the command used: redis-server and its arguments as args alone, without
// the --replicaof that makes a replication's pod start waiting for its master (those
// releases' pods started as masters) and without a cluster pod's shell, which asks the
// server's version before it adds Redis 7's start-up settings.
func asEarlierRelease(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	for i := range sts.Spec.Template.Spec.Containers {
		c := &sts.Spec.Template.Spec.Containers[i]
		var args []string
		switch {
		case len(c.Command) > 0 && c.Command[0] == "redis-server":
			args = slices.Concat(c.Command, c.Args)
		case len(c.Command) > 2 && c.Command[0] == "/bin/sh" && slices.Contains(c.Command, "redis-server"):
			// sh -c SCRIPT redis-server ARGS...: the script's $0 and $@ are the server's command.
			args = slices.Concat(c.Command[slices.Index(c.Command, "redis-server"):], c.Args)
		default:
			continue
		}
		if j := slices.Index(args, "--replicaof"); j >= 0 && j+2 < len(args) {
			args = slices.Delete(args, j, j+3)
		}
		c.Command, c.Args = nil, args
		return
	}
	t.Fatalf("StatefulSet %s has no container that runs redis-server", sts.Name)
}

// applyAsOperator writes the StatefulSet as the earlier release did: a server-side apply of
// the whole object under the operator's field manager, so that this release's apply, which
// leaves args out, removes them as a field its own manager set before (an update under
// another manager would keep them beside the command, a broken template no release wrote).
func applyAsOperator(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	obj := sts.DeepCopy()
	obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	obj.ManagedFields, obj.ResourceVersion, obj.Status = nil, "", appsv1.StatefulSetStatus{}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	config := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	if err := sb.Client.Apply(context.Background(), config, client.FieldOwner("redis-operator"), client.ForceOwnership); err != nil {
		t.Fatalf("apply StatefulSet %s as the earlier release: %v", sts.Name, err)
	}
}

// argsOnly: the pod's Redis container runs redis-server from args alone.
func argsOnly(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool {
		return len(c.Command) == 0 && len(c.Args) > 0 && strings.HasSuffix(c.Args[0], "redis-server")
	})
}

// replicationPods lists the pods of StatefulSet name that are not being deleted.
func replicationPods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := sb.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}
