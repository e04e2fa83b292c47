package operator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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

	skipResource(t, ns, "RedisReplication", name, true)
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
	skipResource(t, ns, "RedisReplication", name, false)
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

// A standalone Redis left by an earlier, args-only release is upgraded by this one under a
// writer: its StatefulSet (rolled by the StatefulSet controller) restarts the pod on the
// current template, and every write Redis answered OK before the restart is read back from
// the volume's append-only file (a graceful stop writes it out).
func TestStandaloneOfAnArgsOnlyReleaseUpgradesUnderWrites(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "upgrade-args")
	ctx := context.Background()
	const name = "old-redis"
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: old-redis
spec:
  kubernetesConfig:
    image: redis:7.0.15
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
`)
	waitStandaloneReady(t, ns, name, 1)
	skipResource(t, ns, "Redis", name, true)
	var sts appsv1.StatefulSet
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	asEarlierRelease(t, &sts)
	applyAsOperator(t, &sts)
	var pod *corev1.Pod
	sb.WaitFor(t, ns, "the pod started from the args-only template", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods := replicationPods(t, ns, name)
		if len(pods) != 1 || !argsOnly(&pods[0]) || pods[0].Status.PodIP == "" {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		pod = &pods[0]
		return sb.Redis(t, pod).Ping(ctx).Err() == nil, "", nil
	})
	before := sb.Redis(t, pod)
	// The pod answered a PING a moment ago; a write refused now (the pod replaced again, a
	// timeout on a loaded machine) is retried and logged, and every key is read back at the end.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 200; {
		err := before.Set(ctx, "before-"+strconv.Itoa(i), i, 0).Err()
		switch {
		case err == nil:
			i++
		case time.Now().After(deadline):
			t.Fatalf("write before-%d to %s before the upgrade: %v", i, pod.Name, err)
		default:
			t.Logf("write before-%d to %s before the upgrade: %v (retrying)", i, pod.Name, err)
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The writer writes to whichever pod runs, by the client Service.
	var svc corev1.Service
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
		t.Fatal(err)
	}
	writer := sb.RedisAt(t, svc.Spec.ClusterIP, 6379)
	stop, done := make(chan struct{}), make(chan []string)
	var acks atomic.Int64
	go func() {
		var acked []string
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- acked
				return
			default:
			}
			k := "w-" + strconv.Itoa(i)
			if writer.Set(ctx, k, i, 0).Err() == nil {
				acked = append(acked, k)
				acks.Add(1)
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	// The Service may still lead to the pod the StatefulSet controller replaced a moment ago:
	// the upgrade starts once writes through it are answered (once, a CI run's writer had one
	// acknowledged write in the second it was given).
	writesAnswered := func(why string, atLeast int64) {
		t.Helper()
		sb.WaitFor(t, ns, fmt.Sprintf("%d writes through the Service answered %s", atLeast, why), 2*time.Minute, func(context.Context) (bool, string, error) {
			n := acks.Load()
			return n >= atLeast, fmt.Sprintf("%d answered", n), nil
		})
	}
	writesAnswered("before the upgrade", 50)
	skipResource(t, ns, "Redis", name, false)
	sb.WaitFor(t, ns, "the pod on the current template", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods := replicationPods(t, ns, name)
		return len(pods) == 1 && !argsOnly(&pods[0]) && pods[0].Status.PodIP != "", fmt.Sprintf("%d pods", len(pods)), nil
	})
	waitStandaloneReady(t, ns, name, 1)
	writesAnswered("after the upgrade", acks.Load()+50)
	close(stop)
	acked := <-done
	reader := sb.Redis(t, &replicationPods(t, ns, name)[0])
	var missing []string
	for _, k := range acked {
		if err := reader.Get(ctx, k).Err(); err != nil {
			missing = append(missing, k)
		}
	}
	for i := range 200 {
		if err := reader.Get(ctx, "before-"+strconv.Itoa(i)).Err(); err != nil {
			missing = append(missing, "before-"+strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged keys missing after the upgrade, first %v", len(missing), len(acked)+200, missing[:min(5, len(missing))])
	}
	if len(acked) < 20 {
		t.Errorf("only %d writes acknowledged", len(acked))
	}
}

// The sentinels of a RedisSentinel left by an earlier, args-only release (redis-server
// --sentinel as args) are upgraded by this one while a writer writes to the replication they
// watch: every sentinel pod ends on the current template (redis-sentinel as the command), the
// RedisSentinel is Ready with every sentinel naming the master, the sentinels still fail over
// when the master's pod is deleted, and every write a replica acknowledged is on the new
// master.
func TestSentinelsOfAnArgsOnlyReleaseUpgradeAndStillFailOver(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "upgrade-args")
	ctx := context.Background()
	const name, sentinels = "old-watched", "old-sn"
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: old-watched
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: old-sn
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisSentinelConfig:
    redisReplicationName: old-watched
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
`)
	cr := &v1beta2.RedisReplication{}
	watched := sentinelWatched{ns: ns, name: name, sentinel: sentinels, cr: cr, timeout: 6 * time.Minute, sinceOnSentinel: true}
	watched.waitReady(t, "at first", time.Time{})

	skipResource(t, ns, "RedisSentinel", sentinels, true)
	var sts appsv1.StatefulSet
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sentinels + "-sentinel"}, &sts); err != nil {
		t.Fatal(err)
	}
	asEarlierRelease(t, &sts)
	applyAsOperator(t, &sts)
	app := sentinels + "-sentinel"
	sb.WaitFor(t, ns, "every sentinel started from the args-only template", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		running := 0
		for _, p := range replicationPods(t, ns, app) {
			if p.Status.PodIP != "" && argsOnly(&p) && sb.RedisAt(t, p.Status.PodIP, 26379).Ping(ctx).Err() == nil {
				running++
			}
		}
		return running == 3, fmt.Sprintf("%d of 3 args-only sentinels answer", running), nil
	})
	master := getPod(t, ns, cr.Status.MasterNode)
	sentinelsName(t, ns, app, "myMaster", master.Status.PodIP)

	writes := startAcknowledgedWriter(t, ns, name+"-master", "")
	upgraded := faultTime()
	skipResource(t, ns, "RedisSentinel", sentinels, false)
	sb.WaitFor(t, ns, "every sentinel on the current template", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		current := 0
		for _, p := range replicationPods(t, ns, app) {
			if !argsOnly(&p) && p.Status.PodIP != "" {
				current++
			}
		}
		return current == 3, fmt.Sprintf("%d of 3 sentinels on the current template", current), nil
	})
	watched.waitReady(t, "after the upgrade", upgraded)
	sentinelsName(t, ns, app, "myMaster", master.Status.PodIP)

	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the upgraded sentinels' failover away from "+master.Name, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != master.Name, "master " + cr.Status.MasterNode, nil
	})
	watched.waitReady(t, "after the failover", upgraded)
	acknowledged, failures := writes()
	promoted := getPod(t, ns, cr.Status.MasterNode)
	sentinelsName(t, ns, app, "myMaster", promoted.Status.PodIP)
	reader := sb.Redis(t, promoted)
	var missing []string
	for _, k := range acknowledged {
		if err := reader.Get(ctx, k).Err(); err != nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged writes missing on the new master %s, first %v", len(missing), len(acknowledged), promoted.Name, missing[:min(5, len(missing))])
	}
	if len(acknowledged) < 20 {
		t.Errorf("only %d writes acknowledged (%d failed)", len(acknowledged), failures)
	}
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

	skipResource(t, c.ns, "RedisCluster", c.name, true)
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
	skipResource(t, c.ns, "RedisCluster", c.name, false)
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

// skipResource sets or removes the skip-reconcile annotation of the resource of kind (a
// v1beta2 kind) named name, <kind in lower case>.opstreelabs.in/skip-reconcile, and, when
// setting it, waits until the operator says it skips the resource.
func skipResource(t *testing.T, ns, kind, name string, skip bool) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: ns, Name: name}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1beta2.GroupVersion.WithKind(kind))
	if err := sb.Client.Get(ctx, key, u); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(u.DeepCopy())
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotation := strings.ToLower(kind) + ".opstreelabs.in/skip-reconcile"
	if skip {
		annotations[annotation] = "true"
	} else {
		delete(annotations, annotation)
	}
	u.SetAnnotations(annotations)
	if err := sb.Client.Patch(ctx, u, patch); err != nil {
		t.Fatal(err)
	}
	if !skip {
		return
	}
	sb.WaitFor(t, ns, "the operator to skip "+kind+" "+name, 30*time.Second, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, key, u); err != nil {
			return false, "", err
		}
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == v1beta2.ConditionProgressing {
				return m["reason"] == "SkipReconcile", fmt.Sprintf("%v", m), nil
			}
		}
		return false, "no Progressing condition", nil
	})
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
		case len(c.Command) > 0 && c.Command[0] == "redis-sentinel":
			// redis-server in sentinel mode, as those releases ran it.
			args = slices.Concat([]string{"redis-server"}, c.Command[1:], c.Args, []string{"--sentinel"})
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

// replicationPods lists the pods labelled app: name (a StatefulSet's) that are not being
// deleted.
func replicationPods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := sb.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}
