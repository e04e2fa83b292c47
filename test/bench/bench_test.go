//go:build bench

// Package bench measures the operator on the sandbox (`make bench`, not part of `make test`):
// how long a cluster takes to become Ready, to heal a crashed leader, how quiet a steady state
// is, and how long 50 standalone Redis take. It prints a table and writes the same figures as
// JSON to bench/results/latest.json. It measures; it asserts nothing about time.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Operator: true}, func(s *framework.Sandbox) {
		if err := v1beta2.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		sb = s
	})
}

// Results are the figures of one run.
type Results struct {
	ClusterPodsReadySeconds      float64 `json:"cluster_pods_ready_seconds"`
	ClusterAfterPodsReadySeconds float64 `json:"cluster_after_pods_ready_seconds"`
	ClusterTotalReadySeconds     float64 `json:"cluster_total_ready_seconds"`
	// ClusterAfterPodsReadyRuns are pods ready → Ready of the extra bootstraps BENCH_BOOTSTRAPS asks.
	ClusterAfterPodsReadyRuns    []float64 `json:"cluster_after_pods_ready_runs,omitempty"`
	LeaderCrashToReadySeconds    float64   `json:"leader_crash_to_ready_seconds"`
	LeaderCrashWritePauseSeconds float64   `json:"leader_crash_write_pause_seconds"`
	// A leader pod deleted gracefully (kubectl delete pod, a drain): its shard handed over
	// before the process stops, against the crash (SIGKILL) above.
	LeaderDeletedToReadySeconds    float64            `json:"leader_deleted_to_ready_seconds"`
	LeaderDeletedWritePauseSeconds float64            `json:"leader_deleted_write_pause_seconds"`
	SteadyStateSeconds             float64            `json:"steady_state_seconds"`
	SteadyStateReconciles          float64            `json:"steady_state_reconciles"`
	SteadyStateAPIWrites           float64            `json:"steady_state_api_writes"`
	SteadyStateRedisCommands       map[string]float64 `json:"steady_state_redis_commands"`
	APIWritesPerReconcile          float64            `json:"api_writes_per_reconcile"`
	RedisCommandsPerReconcile      float64            `json:"redis_commands_per_reconcile"`
	Standalone50ReadySeconds       float64            `json:"standalone_50_ready_seconds"`
	ReplicationReadySeconds        float64            `json:"replication_ready_seconds"`
	ReplicationMasterLostSeconds   float64            `json:"replication_master_lost_to_ready_seconds"`
	Resharding                     *Resharding        `json:"resharding"`
}

const cluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: bench
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
`

func TestBenchmark(t *testing.T) {
	ctx := context.Background()
	var r Results

	if want("bootstrap") || want("failures") || want("steady") {
		// (a) apply → pods ready → Ready.
		ns, start, podsReady, done := bootstrap(t)
		r.ClusterPodsReadySeconds = podsReady.Sub(start).Seconds()
		r.ClusterAfterPodsReadySeconds = done.Sub(podsReady).Seconds()
		r.ClusterTotalReadySeconds = done.Sub(start).Seconds()

		if want("failures") {
			// (b) a leader process killed → Ready again with the designed roles, after Redis and the
			// operator have seen the crash (the container restarted). The longest pause of writes to
			// its shard is measured beside.
			cc := clusterClient(t, ns, "bench")
			gap := framework.StartGapProbe(ctx, cc, keyServedBy(t, ns, "bench-leader-0"))
			restarts := restartCount(t, ns, "bench-leader-0")
			crash := time.Now()
			if err := sb.Fault.CrashContainer(ctx, ns, "bench-leader-0", "bench-leader"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Minute, "Ready after the crash", func() bool {
				return restartCount(t, ns, "bench-leader-0") > restarts && clusterReady(t, ns, "bench", time.Time{}) &&
					leadersAreMasters(t, ns, "bench") && allClusterStateOK(t, ns, "bench")
			})
			r.LeaderCrashToReadySeconds = time.Since(crash).Seconds()
			r.LeaderCrashWritePauseSeconds = gap.Stop().Seconds()

			// (b2) a leader pod deleted gracefully: its shard is handed over before the process stops,
			// the new pod (new IP, empty) takes it back.
			gap = framework.StartGapProbe(ctx, cc, keyServedBy(t, ns, "bench-leader-1"))
			old := pod(t, ns, "bench-leader-1")
			deleted := time.Now()
			if err := sb.Client.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Minute, "Ready after the deletion", func() bool {
				p := &corev1.Pod{}
				return sb.Client.Get(ctx, client.ObjectKeyFromObject(old), p) == nil && p.UID != old.UID && framework.PodReady(p) &&
					clusterReady(t, ns, "bench", deleted) && leadersAreMasters(t, ns, "bench") && allClusterStateOK(t, ns, "bench")
			})
			r.LeaderDeletedToReadySeconds = time.Since(deleted).Seconds()
			r.LeaderDeletedWritePauseSeconds = gap.Stop().Seconds()
			printTimeline(t, ns, "leader pod deleted (seconds after the deletion)", deleted)

		}

		if want("steady") {
			// (c) a steady-state minute, read from the operator's own metrics.
			time.Sleep(5 * time.Second)
			minute := time.Now()
			before := scrapeOperator(t)
			time.Sleep(time.Minute)
			after := scrapeOperator(t)
			r.SteadyStateSeconds = time.Since(minute).Seconds()
			r.SteadyStateReconciles = after.sum(`controller_runtime_reconcile_total{controller="rediscluster"`) - before.sum(`controller_runtime_reconcile_total{controller="rediscluster"`)
			// The reconcilers' writes, and the Events they record; Lease renewals of leader election
			// are not a reconcile's doing.
			r.SteadyStateAPIWrites = after.sum(`redis_operator_api_writes_total{`) - before.sum(`redis_operator_api_writes_total{`) +
				float64(eventsSince(t, ns, minute))
			r.SteadyStateRedisCommands = map[string]float64{}
			var commands float64
			for key, v := range after {
				if strings.HasPrefix(key, "redis_operator_redis_commands_total{") {
					if d := v - before[key]; d > 0 {
						r.SteadyStateRedisCommands[labelValue(key, "command")] = d
						commands += d
					}
				}
			}
			if r.SteadyStateReconciles > 0 {
				r.APIWritesPerReconcile = r.SteadyStateAPIWrites / r.SteadyStateReconciles
				r.RedisCommandsPerReconcile = commands / r.SteadyStateReconciles
			}

		}

	}

	// More bootstraps, each in a namespace of its own, for the spread of pods ready → Ready.
	for range bootstrapRepeats() {
		_, _, podsReady, done := bootstrap(t)
		r.ClusterAfterPodsReadyRuns = append(r.ClusterAfterPodsReadyRuns, done.Sub(podsReady).Seconds())
	}

	if want("standalone") {
		// (d) 50 standalone Redis.
		ns50 := sb.Namespace(t, "bench50")
		var manifests []string
		for i := 0; i < 50; i++ {
			manifests = append(manifests, fmt.Sprintf("apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: Redis\nmetadata: {name: r%02d}\nspec:\n  kubernetesConfig: {image: redis:7.0.15}\n", i))
		}
		start50 := time.Now()
		sb.Apply(t, ns50, strings.Join(manifests, "---\n"))
		waitFor(t, 10*time.Minute, "50 Redis Ready", func() bool {
			var list v1beta2.RedisList
			if err := sb.Client.List(ctx, &list, client.InNamespace(ns50)); err != nil {
				return false
			}
			ready := 0
			for _, item := range list.Items {
				if item.Status.State == "Ready" {
					ready++
				}
			}
			return ready == 50
		})
		r.Standalone50ReadySeconds = time.Since(start50).Seconds()

	}

	if want("replication") {
		// (e) a RedisReplication of 3: apply → Ready; its master pod deleted (no volume, so it comes
		// back empty) → Ready again on a replica that kept the data.
		nsr := sb.Namespace(t, "benchrepl")
		startRepl := time.Now()
		sb.Apply(t, nsr, replication)
		var master string
		waitFor(t, 5*time.Minute, "replication Ready", func() bool {
			master = replicationReady(t, nsr, "")
			return master != ""
		})
		r.ReplicationReadySeconds = time.Since(startRepl).Seconds()
		// Data first: with none, the replicas hold nothing the returning master lacks, and it rightly
		// stays master.
		var masterPod corev1.Pod
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: nsr, Name: master}, &masterPod); err != nil {
			t.Fatal(err)
		}
		rdb := sb.Redis(t, &masterPod)
		for i := range 100 {
			if err := rdb.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := rdb.Wait(ctx, 2, time.Second).Result(); err != nil || n != 2 {
			t.Fatalf("WAIT 2 = %d, %v", n, err)
		}
		lost := time.Now()
		if err := sb.Kube.CoreV1().Pods(nsr).Delete(ctx, master, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Minute, "replication Ready on another master", func() bool {
			return replicationReady(t, nsr, master) != ""
		})
		r.ReplicationMasterLostSeconds = time.Since(lost).Seconds()

	}

	// (f) resharding 1,000,000 keys 3→6→3, ours against redis-cli's rebalance.
	if want("resharding") {
		r.Resharding = measureResharding(t)
	}

	report(t, r)
}

// benchParts is BENCH_PARTS, a comma-separated choice among bootstrap, failures (a leader
// crashed, a leader pod deleted), steady, standalone, replication and resharding; empty runs
// them all. A partial run writes bench/results/partial.json and leaves latest.json alone.
var benchParts = os.Getenv("BENCH_PARTS")

func want(part string) bool {
	return benchParts == "" || slices.Contains(strings.Split(benchParts, ","), part)
}

func report(t *testing.T, r Results) {
	t.Helper()
	rows := [][2]string{
		{"cluster 3×3: apply → pods ready", fmt.Sprintf("%.1f s", r.ClusterPodsReadySeconds)},
		{"cluster 3×3: pods ready → Ready", fmt.Sprintf("%.1f s", r.ClusterAfterPodsReadySeconds)},
		{"leader process killed → Ready, designed roles", fmt.Sprintf("%.1f s", r.LeaderCrashToReadySeconds)},
		{"leader process killed: longest write pause", fmt.Sprintf("%.2f s", r.LeaderCrashWritePauseSeconds)},
		{"leader pod deleted → Ready, designed roles", fmt.Sprintf("%.1f s", r.LeaderDeletedToReadySeconds)},
		{"leader pod deleted: longest write pause", fmt.Sprintf("%.2f s", r.LeaderDeletedWritePauseSeconds)},
		{"steady state: reconciles in a minute", fmt.Sprintf("%.0f", r.SteadyStateReconciles)},
		{"steady state: API writes per reconcile", fmt.Sprintf("%.2f (%.0f in %.0f s)", r.APIWritesPerReconcile, r.SteadyStateAPIWrites, r.SteadyStateSeconds)},
		{"steady state: Redis commands per reconcile", fmt.Sprintf("%.1f %v", r.RedisCommandsPerReconcile, r.SteadyStateRedisCommands)},
		{"50 standalone Redis → Ready", fmt.Sprintf("%.1f s", r.Standalone50ReadySeconds)},
		{"replication of 3: apply → Ready", fmt.Sprintf("%.1f s", r.ReplicationReadySeconds)},
		{"replication: master pod deleted → Ready", fmt.Sprintf("%.1f s", r.ReplicationMasterLostSeconds)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-48s %s\n", "measure", "value")
	for _, row := range rows {
		fmt.Fprintf(&b, "%-48s %s\n", row[0], row[1])
	}
	fmt.Print(b.String())
	if r.Resharding != nil {
		printResharding(r.Resharding)
	}
	out := filepath.Join(sb.Repo(), "bench", "results", "latest.json")
	if benchParts != "" {
		out = filepath.Join(sb.Repo(), "bench", "results", "partial.json")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// Figures of other tests (TestQuietAtScale's "quiet_at_scale") stay.
	all := map[string]any{}
	if old, err := os.ReadFile(out); err == nil {
		_ = json.Unmarshal(old, &all)
	}
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	if data, err = json.MarshalIndent(all, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Println("written to", out)
}

const replication = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: bench
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
`

// replicationReady returns the master of a Ready replication whose master is not notMaster,
// or "" while there is none.
func replicationReady(t *testing.T, ns, notMaster string) string {
	t.Helper()
	cr := &v1beta2.RedisReplication{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bench"}, cr); err != nil {
		return ""
	}
	ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || cr.Status.ReadyReplicas != 3 || cr.Status.MasterNode == notMaster {
		return ""
	}
	return cr.Status.MasterNode
}

// clusterClient is a cluster client of the RedisCluster's live pods.
func clusterClient(t *testing.T, ns, name string) *goredis.ClusterClient {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			addrs = append(addrs, p.Status.PodIP+":6379")
		}
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, DialTimeout: time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func pod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyServedBy is a key in a slot that the master in the pod serves.
func keyServedBy(t *testing.T, ns, podName string) string {
	t.Helper()
	rdb := sb.Redis(t, pod(t, ns, podName))
	text, err := rdb.ClusterNodes(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := topo.Myself()
	for i := range 1000 {
		k := fmt.Sprintf("pause-%d", i)
		slot, err := rdb.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if me.OwnsSlot(int(slot)) {
			return k
		}
	}
	t.Fatalf("no key found in the slots of %s", podName)
	return ""
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	pollEvery(t, 50*time.Millisecond, timeout, what, cond)
}

func readyPods(t *testing.T, ns, name string) int {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) {
			n++
		}
	}
	return n
}

func clusterReady(t *testing.T, ns, name string, since time.Time) bool {
	t.Helper()
	cr := &v1beta2.RedisCluster{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
	return cr.Status.State == "Ready" && c != nil && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.Time.Before(since.Truncate(time.Second))
}

func leadersAreMasters(t *testing.T, ns, name string) bool {
	t.Helper()
	for i := 0; i < 3; i++ {
		p := &corev1.Pod{}
		if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-leader-%d", name, i)}, p); err != nil || p.Status.PodIP == "" {
			return false
		}
		role, err := sb.Redis(t, p).Do(context.Background(), "ROLE").Slice()
		if err != nil || role[0] != "master" {
			return false
		}
	}
	return true
}

// metrics are Prometheus samples keyed by name and labels.
type metrics map[string]float64

func (m metrics) sum(prefix string) float64 {
	var total float64
	for key, v := range m {
		if strings.HasPrefix(key, prefix) {
			total += v
		}
	}
	return total
}

func scrapeOperator(t *testing.T) metrics {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace("redis-operator-system")); err != nil || len(pods.Items) == 0 {
		t.Fatalf("operator pod: %v", err)
	}
	body, err := framework.OperatorMetrics(context.Background(), pods.Items[0].Status.PodIP, sb.MetricsToken(t))
	if err != nil {
		t.Fatalf("scrape the operator: %v", err)
	}
	out := metrics{}
	scanner := bufio.NewScanner(strings.NewReader(body))
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndex(line, " ")
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

func labelValue(key, label string) string {
	i := strings.Index(key, label+`="`)
	if i < 0 {
		return key
	}
	value, _, _ := strings.Cut(key[i+len(label)+2:], `"`)
	return value
}

func restartCount(t *testing.T, ns, pod string) int32 {
	t.Helper()
	p := &corev1.Pod{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

func allClusterStateOK(t *testing.T, ns, name string) bool {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if pods.Items[i].Status.PodIP == "" {
			return false
		}
		info, err := sb.Redis(t, &pods.Items[i]).ClusterInfo(context.Background()).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return len(pods.Items) == 6
}

// eventsSince counts the Events the operator recorded in ns since t0 (new ones, and repeats
// of old ones that the events API folds into a series).
func eventsSince(t *testing.T, ns string, t0 time.Time) int {
	t.Helper()
	return eventsOfSince(t, ns, t0, "RedisCluster")
}

// eventsOfSince counts the Events about resources of the kinds recorded in ns since t0.
func eventsOfSince(t *testing.T, ns string, t0 time.Time, kinds ...string) int {
	t.Helper()
	var events eventsv1.EventList
	if err := sb.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if !slices.Contains(kinds, e.Regarding.Kind) {
			continue
		}
		if e.EventTime.After(t0) || (e.Series != nil && e.Series.LastObservedTime.After(t0)) {
			n++
		}
	}
	return n
}

// bootstrap applies the 3×3 cluster in a new namespace and waits for Ready, printing where the
// time after the pods were ready went.
func bootstrap(t *testing.T) (ns string, start, podsReady, done time.Time) {
	t.Helper()
	ns = sb.Namespace(t, "bench")
	start = time.Now()
	sb.Apply(t, ns, cluster)
	waits, stateOK := &conditionLog{}, map[string]time.Time{}
	waitFor(t, 5*time.Minute, "cluster Ready", func() bool {
		if podsReady.IsZero() && readyPods(t, ns, "bench") == 6 {
			podsReady = time.Now()
		}
		waits.observe(ns, "bench")
		noteClusterStateOK(t, ns, "bench", stateOK)
		return !podsReady.IsZero() && clusterReady(t, ns, "bench", time.Time{})
	})
	done = time.Now()
	printTimeline(t, ns, "bootstrap timeline (seconds after every pod was ready)", podsReady)
	waits.print(podsReady)
	printStateOK(stateOK, podsReady)
	fmt.Printf("pods ready at %s, pods ready → Ready %.2f s\n", podsReady.Format("15:04:05.000"), done.Sub(podsReady).Seconds())
	return ns, start, podsReady, done
}

// bootstrapRepeats is BENCH_BOOTSTRAPS-1: how many more bootstraps than the first to measure.
func bootstrapRepeats() int {
	n, _ := strconv.Atoi(os.Getenv("BENCH_BOOTSTRAPS"))
	return max(n-1, 0)
}

// noteClusterStateOK notes when each pod of the cluster first reports cluster_state:ok.
func noteClusterStateOK(t *testing.T, ns, name string, seen map[string]time.Time) {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := seen[p.Name]; ok || p.Status.PodIP == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := sb.Redis(t, p).ClusterInfo(ctx).Result()
		nodes, _ := sb.Redis(t, p).ClusterNodes(ctx).Result()
		cancel()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			seen[p.Name] = time.Now()
		}
		if os.Getenv("BENCH_TRACE") != "" && err == nil {
			var brief []string
			for _, line := range strings.Split(info, "\n") {
				if strings.HasPrefix(line, "cluster_state") || strings.HasPrefix(line, "cluster_slots_ok") || strings.HasPrefix(line, "cluster_known_nodes") || strings.HasPrefix(line, "cluster_size") {
					brief = append(brief, strings.TrimSpace(line))
				}
			}
			for _, line := range strings.Split(nodes, "\n") {
				if f := strings.Fields(line); len(f) > 7 {
					brief = append(brief, f[1]+" "+f[2]+" "+f[7])
				}
			}
			if b := strings.Join(brief, " | "); traced[p.Name] != b {
				traced[p.Name] = b
				fmt.Printf("TRACE %s %s %s\n", time.Now().Format("15:04:05.000"), p.Name, b)
			}
		}
	}
}

// traced is the last line BENCH_TRACE=1 printed for each pod: with it set, the bootstrap prints
// every change of a pod's cluster_state, slots ok, known nodes and CLUSTER NODES flags.
var traced = map[string]string{}

func printStateOK(seen map[string]time.Time, ref time.Time) {
	fmt.Println("first cluster_state:ok (seconds after every pod was ready):")
	names := slices.Sorted(maps.Keys(seen))
	for _, n := range names {
		fmt.Printf("  %+6.2f  %s\n", seen[n].Sub(ref).Seconds(), n)
	}
}

// printTimeline shows the operator's Events of the bootstrap relative to all pods being ready,
// to tell where the time after it goes.
func printTimeline(t *testing.T, ns, title string, ref time.Time) {
	t.Helper()
	var events eventsv1.EventList
	if err := sb.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].EventTime.Time.Before(events.Items[j].EventTime.Time) })
	fmt.Printf("\n%s:\n", title)
	for _, e := range events.Items {
		if e.EventTime.IsZero() {
			continue // the kubelet's and controllers' events, of the core API
		}
		fmt.Printf("  %+6.2f  %-20s %s\n", e.EventTime.Time.Sub(ref).Seconds(), e.Reason, e.Note)
	}
}
