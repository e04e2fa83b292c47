package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/redis"
)

// A node drain (cordon, then every pod of the node evicted at once, each retried while a
// PodDisruptionBudget refuses it, as kubectl drain does): before it, every shard runs on two
// nodes (a follower left on its master's node is swapped away); during it, each master on the
// node hands its shard to its replica elsewhere before it stops. The cluster comes back Ready
// with no acknowledged write lost, and no shard's writes pause longer than a hand-over's bound.
func TestNodeDrainHandsEachShardOver(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: drain
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisLeader:
    pdb: {enabled: true, maxUnavailable: 1}
  redisFollower:
    pdb: {enabled: true, maxUnavailable: 1}
`)
	c.waitReady(start)
	c.writeKeys("d", 300)

	shards := c.shardsByNode()
	for master, nodes := range shards {
		if len(nodes) < 2 {
			t.Fatalf("the shard of %s runs on one node only (%v): a drain would take it whole", master, nodes)
		}
	}
	// Drain the node that runs the most masters.
	masters := map[string][]corev1.Pod{}
	for _, p := range c.pods(c.ctx) {
		if _, ok := shards[p.Name]; ok {
			masters[p.Spec.NodeName] = append(masters[p.Spec.NodeName], p)
		}
	}
	node := ""
	for n, ps := range masters {
		if node == "" || len(ps) > len(masters[node]) {
			node = n
		}
	}
	checker := c.startWriting("drain")

	fault := faultTime()
	drained := drainNode(t, c.ctx, c.ns, node, c.pods(c.ctx))
	c.waitReady(fault)
	c.requireWrites(checker, "during the drain of "+node, handOverPause)
	c.readKeys("d", 300)
	for _, p := range c.pods(c.ctx) {
		if p.Spec.NodeName == node {
			t.Errorf("pod %s runs on the cordoned node %s", p.Name, node)
		}
	}
	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	for _, m := range masters[node] {
		handedOver := false
		for _, e := range events.Items {
			handedOver = handedOver || (e.Reason == "HandOver" && strings.Contains(e.Note, m.Name))
		}
		if !handedOver {
			t.Errorf("no HandOver event names %s, a master on the drained node", m.Name)
		}
	}
	t.Logf("drained %s: evicted %v", node, drained)
}

// shardsByNode maps each master pod of the cluster to the nodes its shard's pods run on.
func (c *cluster) shardsByNode() map[string][]string {
	c.t.Helper()
	pods := c.pods(c.ctx)
	byID := map[string]corev1.Pod{}
	self := map[string]redis.Node{}
	for _, p := range pods {
		text, err := c.redis(&p).ClusterNodes(c.ctx).Result()
		if err != nil {
			c.t.Fatal(err)
		}
		topo, err := redis.ParseClusterNodes(text)
		if err != nil {
			c.t.Fatal(err)
		}
		me, ok := topo.Myself()
		if !ok {
			c.t.Fatalf("%s: no myself line", p.Name)
		}
		byID[me.ID], self[p.Name] = p, me
	}
	out := map[string][]string{}
	for _, p := range pods {
		me := self[p.Name]
		master := p
		if me.IsReplica() {
			master = byID[me.MasterID]
		}
		if !slices.Contains(out[master.Name], p.Spec.NodeName) {
			out[master.Name] = append(out[master.Name], p.Spec.NodeName)
		}
	}
	return out
}

// drainNode does what kubectl drain does for the given pods on the node: cordon it, evict
// them all at once, retry each eviction a PodDisruptionBudget refuses, and wait for each pod
// to be gone. The node is uncordoned when the test ends. It returns the pods evicted.
func drainNode(t *testing.T, ctx context.Context, ns, node string, pods []corev1.Pod) []string {
	t.Helper()
	setUnschedulable := func(ctx context.Context, v bool) error {
		patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, v)
		_, err := sb.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := setUnschedulable(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setUnschedulable(context.Background(), false); err != nil {
			t.Errorf("uncordon %s: %v", node, err)
		}
	})
	var names []string
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for _, p := range pods {
		if p.Spec.NodeName != node {
			continue
		}
		names = append(names, p.Name)
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			errs <- evictUntilGone(ctx, ns, p)
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// evictUntilGone evicts the pod, again every second while a disruption budget refuses it (429),
// then waits until the pod (that one, not its replacement) no longer exists.
func evictUntilGone(ctx context.Context, ns string, p corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		err := sb.Kube.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}})
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if !apierrors.IsTooManyRequests(err) {
			return fmt.Errorf("evict %s: %w", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("evict %s: refused until the timeout: %w", p.Name, err)
		case <-time.After(time.Second):
		}
	}
	for {
		live, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && live.UID != p.UID) {
			return nil
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("wait for %s to go: %w", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still there after its eviction: %w", p.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
