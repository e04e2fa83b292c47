//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// Quiet is what the operator does while nothing changes, with many resources present.
type Quiet struct {
	Redis    int `json:"standalone_redis"`
	Clusters int `json:"clusters_3x1_1"`
	Pods     int `json:"pods"`
	// StatefulSetsAloneSeconds: as many copies of a standalone Redis's StatefulSet as there
	// are Redis, created without the operator, until every pod is ready; RedisReadySeconds:
	// the Redis resources applied until every one is Ready; the ratio compares the two.
	StatefulSetsAloneSeconds float64 `json:"statefulsets_alone_ready_seconds"`
	RedisReadySeconds        float64 `json:"standalone_redis_ready_seconds"`
	RedisOverStatefulSets    float64 `json:"standalone_redis_over_statefulsets_alone"`
	// ClustersReadySeconds: the clusters applied, with the Redis present, until all are Ready.
	ClustersReadySeconds float64            `json:"clusters_ready_seconds"`
	IdleSeconds          float64            `json:"idle_seconds"`
	Reconciles           float64            `json:"idle_reconciles"`
	APIWrites            float64            `json:"idle_api_writes"`
	RESTRequests         map[string]float64 `json:"idle_rest_requests_by_verb"`
	RedisCommands        float64            `json:"idle_redis_commands"`
	RedisPerMinute       float64            `json:"idle_redis_commands_per_minute_per_resource"`
	RSSBytes             float64            `json:"operator_rss_bytes"`
	RSSPerResource       float64            `json:"operator_rss_bytes_per_resource"`
	CPUSeconds           float64            `json:"idle_operator_cpu_seconds"`
	// LeaderDeleted*: a leader pod of the first cluster deleted (kubectl delete pod) → the
	// cluster Ready again, with that cluster alone and then among all the others.
	LeaderDeletedAloneSeconds float64 `json:"leader_deleted_to_ready_alone_seconds"`
	LeaderDeletedAmongSeconds float64 `json:"leader_deleted_to_ready_among_all_seconds"`
	Machine                   string  `json:"machine"`
}

// TestQuietAtScale (not part of make bench: it runs hundreds of pods) creates QUIET_REDIS
// standalone Redis (100) and QUIET_CLUSTERS RedisClusters of 3 leaders and 3 followers (20),
// waits for all to be Ready, then counts over QUIET_IDLE_SECONDS (120) what the operator does
// while nothing changes, from its own /metrics: reconciles, its API writes and REST requests
// by verb, Redis commands, resident memory and CPU. The figures go into
// bench/results/latest.json under "quiet_at_scale", beside the others.
func TestQuietAtScale(t *testing.T) {
	q := Quiet{Redis: envInt("QUIET_REDIS", 100), Clusters: envInt("QUIET_CLUSTERS", 20), Machine: machine()}
	idle := time.Duration(envInt("QUIET_IDLE_SECONDS", 120)) * time.Second
	ns := sb.Namespace(t, "quiet")
	clusterManifest := func(i int) string {
		return fmt.Sprintf("apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: RedisCluster\nmetadata: {name: c%02d}\nspec:\n  clusterSize: 3\n  kubernetesConfig: {image: redis:7.0.15}\n", i)
	}
	if q.Clusters > 0 {
		// The first cluster alone: how long a deleted leader takes to come back, for comparison.
		sb.Apply(t, ns, clusterManifest(0))
		waitFor(t, 5*time.Minute, "c00 Ready", func() bool { return clusterReady(t, ns, "c00", time.Time{}) })
		q.LeaderDeletedAloneSeconds = deleteLeaderUntilReady(t, ns, "c00")
	}
	q.Pods = q.Redis + 6*q.Clusters
	if q.Redis > 0 {
		q.StatefulSetsAloneSeconds = statefulSetsAlone(t, q.Redis)
		var manifests []string
		for i := range q.Redis {
			manifests = append(manifests, fmt.Sprintf("apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: Redis\nmetadata: {name: r%03d}\nspec:\n  kubernetesConfig: {image: redis:7.0.15}\n", i))
		}
		q.RedisReadySeconds = applyUntilReady(t, ns, strings.Join(manifests, "---\n"), q.Redis, min(q.Clusters, 1)) // c00 is there
		q.RedisOverStatefulSets = q.RedisReadySeconds / q.StatefulSetsAloneSeconds
	}
	if q.Clusters > 0 {
		var manifests []string
		for i := range q.Clusters { // c00 is there already; applying it again changes nothing
			manifests = append(manifests, clusterManifest(i))
		}
		q.ClustersReadySeconds = applyUntilReady(t, ns, strings.Join(manifests, "---\n"), q.Redis, q.Clusters)
	}

	// Let the last status writes and their events settle, then count.
	time.Sleep(10 * time.Second)
	before := scrapeOperator(t)
	begin := time.Now()
	time.Sleep(idle)
	after := scrapeOperator(t)
	q.IdleSeconds = time.Since(begin).Seconds()
	delta := func(prefix string) float64 { return after.sum(prefix) - before.sum(prefix) }
	q.Reconciles = delta(`controller_runtime_reconcile_total{`)
	q.APIWrites = delta(`redis_operator_api_writes_total{`) + float64(eventsOfSince(t, ns, begin, "Redis", "RedisCluster"))
	q.RESTRequests = map[string]float64{}
	for key, v := range after {
		if strings.HasPrefix(key, "rest_client_requests_total{") {
			if d := v - before[key]; d > 0 {
				q.RESTRequests[labelValue(key, "method")] += d
			}
		}
	}
	q.RedisCommands = delta(`redis_operator_redis_commands_total{`)
	q.RedisPerMinute = q.RedisCommands / q.IdleSeconds * 60 / float64(q.Redis+q.Clusters)
	q.RSSBytes = after.sum("process_resident_memory_bytes")
	q.RSSPerResource = q.RSSBytes / float64(q.Redis+q.Clusters)
	q.CPUSeconds = delta("process_cpu_seconds_total")
	if q.Clusters > 0 {
		q.LeaderDeletedAmongSeconds = deleteLeaderUntilReady(t, ns, "c00")
	}

	fmt.Printf("\n%d standalone Redis Ready after %.1f s, %.2f× the %.1f s of their StatefulSets alone\n",
		q.Redis, q.RedisReadySeconds, q.RedisOverStatefulSets, q.StatefulSetsAloneSeconds)
	fmt.Printf("%d clusters 3×(1+1) Ready %.1f s after their apply; %d pods in all; over %.0f idle s:\n",
		q.Clusters, q.ClustersReadySeconds, q.Pods, q.IdleSeconds)
	fmt.Printf("  reconciles %.0f, API writes %.0f, REST requests %v\n", q.Reconciles, q.APIWrites, q.RESTRequests)
	fmt.Printf("  Redis commands %.0f (%.2f per minute per resource)\n", q.RedisCommands, q.RedisPerMinute)
	fmt.Printf("  operator RSS %.1f MB (%.2f MB per resource), CPU %.2f s\n", q.RSSBytes/1e6, q.RSSPerResource/1e6, q.CPUSeconds)
	fmt.Printf("  a deleted leader → Ready: %.1f s with its cluster alone, %.1f s among all\n", q.LeaderDeletedAloneSeconds, q.LeaderDeletedAmongSeconds)
	mergeResult(t, "quiet_at_scale", q)
}

// deleteLeaderUntilReady deletes the first leader pod of cluster name (gracefully, as kubectl
// delete pod does) and returns the seconds until the cluster is Ready again with a new pod.
func deleteLeaderUntilReady(t *testing.T, ns, name string) float64 {
	t.Helper()
	ctx := context.Background()
	old := pod(t, ns, name+"-leader-0")
	start := time.Now()
	if err := sb.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Minute, name+" Ready after its leader's deletion", func() bool {
		var p corev1.Pod
		err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: old.Name}, &p)
		return err == nil && p.UID != old.UID && framework.PodReady(&p) && clusterReady(t, ns, name, start)
	})
	return time.Since(start).Seconds()
}

// mergeResult sets one key of bench/results/latest.json, keeping the others.
func mergeResult(t *testing.T, key string, value any) {
	t.Helper()
	out := filepath.Join(sb.Repo(), "bench", "results", "latest.json")
	all := map[string]any{}
	if data, err := os.ReadFile(out); err == nil {
		if err := json.Unmarshal(data, &all); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
	}
	all[key] = value
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Println("written to", out, "under", key)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// applyUntilReady applies manifests in ns and returns the seconds until ns holds wantRedis
// Ready standalone Redis and wantClusters Ready clusters.
func applyUntilReady(t *testing.T, ns, manifests string, wantRedis, wantClusters int) float64 {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	sb.Apply(t, ns, manifests)
	pollEvery(t, 250*time.Millisecond, 30*time.Minute, "every resource Ready", func() bool {
		var redises v1beta2.RedisList
		var clusters v1beta2.RedisClusterList
		if sb.Client.List(ctx, &redises, client.InNamespace(ns)) != nil || sb.Client.List(ctx, &clusters, client.InNamespace(ns)) != nil {
			return false
		}
		readyRedis, readyClusters := 0, 0
		for _, r := range redises.Items {
			if r.Status.State == "Ready" {
				readyRedis++
			}
		}
		for _, c := range clusters.Items {
			if c.Status.State == "Ready" {
				readyClusters++
			}
		}
		return readyRedis == wantRedis && readyClusters == wantClusters
	})
	return time.Since(start).Seconds()
}

// statefulSetsAlone is the baseline the operator's standalone Redis are compared with: it
// lets the operator make one standalone Redis, then creates n copies of that StatefulSet
// (same pod template, same configuration objects, no owner) and returns the seconds until
// every copy's pod is ready. The copies are deleted, and their pods gone, before it returns.
func statefulSetsAlone(t *testing.T, n int) float64 {
	t.Helper()
	ctx := context.Background()
	ns := sb.Namespace(t, "quiet-sts")
	sb.Apply(t, ns, "apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: Redis\nmetadata: {name: template}\nspec:\n  kubernetesConfig: {image: redis:7.0.15}\n")
	pollEvery(t, 250*time.Millisecond, 5*time.Minute, "the template Redis Ready", func() bool {
		var r v1beta2.Redis
		return sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "template"}, &r) == nil && r.Status.State == "Ready"
	})
	var template appsv1.StatefulSet
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "template"}, &template); err != nil {
		t.Fatal(err)
	}
	// Labels of their own only: the operator maps pods to resources by their labels.
	copyLabels := map[string]string{"bench": "statefulsets-alone"}
	start := time.Now()
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: copyLabels},
			Spec:       *template.Spec.DeepCopy(),
		}
		podLabels := map[string]string{"bench": copyLabels["bench"], "copy": name}
		sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: podLabels}
		sts.Spec.Template.Labels = podLabels
		if err := sb.Client.Create(ctx, sts); err != nil {
			t.Fatal(err)
		}
	}
	pollEvery(t, 250*time.Millisecond, 30*time.Minute, "every copied StatefulSet ready", func() bool {
		var list appsv1.StatefulSetList
		if sb.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(copyLabels)) != nil {
			return false
		}
		ready := 0
		for _, s := range list.Items {
			if s.Status.ReadyReplicas == 1 {
				ready++
			}
		}
		return ready == n
	})
	took := time.Since(start).Seconds()
	if err := sb.Client.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(ns), client.MatchingLabels(copyLabels),
		client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	pollEvery(t, time.Second, 10*time.Minute, "the copies' pods gone", func() bool {
		var pods corev1.PodList
		return sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(copyLabels)) == nil && len(pods.Items) == 0
	})
	return took
}

// pollEvery is waitFor with a slower poll, for conditions that list hundreds of objects.
func pollEvery(t *testing.T, interval, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(interval)
	}
}
