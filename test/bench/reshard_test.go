//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/writecheck"
)

// The resharding comparison: the same data set on a cluster of ours and on plain Redis
// processes of the same settings driven by redis-cli, scaled 3→6 masters and back.
const (
	reshardKeys      = 1_000_000
	reshardValueSize = 100
)

// Reshard is one resharding measured: the keys that changed master and the time they took.
type Reshard struct {
	KeysMoved     int64   `json:"keys_moved"`
	Seconds       float64 `json:"seconds"`
	KeysPerSecond float64 `json:"keys_per_second"`
	// FirstMoveSeconds: from the start of the count to the first key on a new master (ours).
	FirstMoveSeconds float64 `json:"first_move_seconds,omitempty"`
}

func newReshard(moved int64, d time.Duration) *Reshard {
	return &Reshard{KeysMoved: moved, Seconds: d.Seconds(), KeysPerSecond: float64(moved) / d.Seconds()}
}

// Resharding compares the operator with redis-cli --cluster rebalance on one machine in one run.
type Resharding struct {
	Keys      int    `json:"keys"`
	ValueSize int    `json:"value_bytes"`
	Machine   string `json:"machine"`
	// Ours: scale-out from the new leader pods Ready to the resource Ready; scale-in from the
	// patch to the resource Ready (departing pods gone). redis-cli: its rebalance command.
	OperatorOut *Reshard `json:"operator_3_to_6"`
	RedisCLIOut *Reshard `json:"redis_cli_3_to_6"`
	OperatorIn  *Reshard `json:"operator_6_to_3"`
	RedisCLIIn  *Reshard `json:"redis_cli_6_to_3"`
	SpeedupOut  float64  `json:"speedup_3_to_6"`
	SpeedupIn   float64  `json:"speedup_6_to_3"`
	// Writes a light writer made meanwhile on our cluster; none acknowledged may be lost.
	WritesAcknowledged int `json:"writes_acknowledged"`
}

// TestResharding runs only the resharding comparison (the whole benchmark runs it too).
func TestResharding(t *testing.T) {
	r := measureResharding(t)
	printResharding(r)
}

func measureResharding(t *testing.T) *Resharding {
	t.Helper()
	r := &Resharding{Keys: reshardKeys, ValueSize: reshardValueSize, Machine: machine()}
	measureOperatorResharding(t, r)
	measureRedisCLIResharding(t, r)
	r.SpeedupOut = r.OperatorOut.KeysPerSecond / r.RedisCLIOut.KeysPerSecond
	r.SpeedupIn = r.OperatorIn.KeysPerSecond / r.RedisCLIIn.KeysPerSecond
	return r
}

func printResharding(r *Resharding) {
	fmt.Printf("\nresharding %d keys of %d bytes on %s\n", r.Keys, r.ValueSize, r.Machine)
	for _, row := range []struct {
		what string
		m    *Reshard
	}{{"operator 3→6 (new pods Ready → Ready)", r.OperatorOut}, {"redis-cli rebalance 3→6", r.RedisCLIOut},
		{"operator 6→3 (patch → Ready)", r.OperatorIn}, {"redis-cli rebalance 6→3", r.RedisCLIIn}} {
		fmt.Printf("  %-40s %8d keys in %6.1f s = %8.0f keys/s\n", row.what, row.m.KeysMoved, row.m.Seconds, row.m.KeysPerSecond)
	}
	fmt.Printf("  speed-up 3→6 %.2f×, 6→3 %.2f×; %d writes acknowledged meanwhile, none lost\n", r.SpeedupOut, r.SpeedupIn, r.WritesAcknowledged)
}

const reshardCluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: reshard
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
`

func measureOperatorResharding(t *testing.T, r *Resharding) {
	t.Helper()
	ctx := context.Background()
	ns := sb.Namespace(t, "reshard")
	sb.Apply(t, ns, reshardCluster)
	waitFor(t, 5*time.Minute, "cluster Ready", func() bool { return readyForGeneration(t, ns, "reshard") })
	cc := clusterClientOf(t, clusterPodAddrs(t, ns))
	loadKeys(t, cc)

	checker, err := writecheck.Start(ctx, cc, lightWriter)
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Stop()

	// 3 → 6.
	patchSize(t, ns, "reshard", 6)
	var newReady, firstMove time.Time
	waits := &conditionLog{}
	waitFor(t, 10*time.Minute, "six masters Ready", func() bool {
		if newReady.IsZero() && podsReady(ns, "reshard-leader-3", "reshard-leader-4", "reshard-leader-5") {
			newReady = time.Now()
		}
		if !newReady.IsZero() && firstMove.IsZero() && dbSizes(t, ns, "reshard-leader-3") > 0 {
			firstMove = time.Now()
		}
		waits.observe(ns, "reshard")
		return !newReady.IsZero() && readyForGeneration(t, ns, "reshard")
	})
	took := time.Since(newReady)
	printTimeline(t, ns, "scale-out 3→6 (seconds after the new leader pods were ready)", newReady)
	waits.print(newReady)
	moved := dbSizes(t, ns, "reshard-leader-3", "reshard-leader-4", "reshard-leader-5")
	r.OperatorOut = newReshard(moved, took)
	if !firstMove.IsZero() {
		r.OperatorOut.FirstMoveSeconds = firstMove.Sub(newReady).Seconds()
	}
	t.Logf("operator 3→6: %+v", *r.OperatorOut)
	readKeys(t, clusterClientOf(t, clusterPodAddrs(t, ns)))

	// 6 → 3.
	moved = dbSizes(t, ns, "reshard-leader-3", "reshard-leader-4", "reshard-leader-5")
	start := time.Now()
	patchSize(t, ns, "reshard", 3)
	shrinking := &conditionLog{}
	waitFor(t, 10*time.Minute, "three masters Ready, the others gone", func() bool {
		shrinking.observe(ns, "reshard")
		return readyForGeneration(t, ns, "reshard") && len(clusterPodAddrs(t, ns)) == 6
	})
	r.OperatorIn = newReshard(moved, time.Since(start))
	printTimeline(t, ns, "scale-in 6→3 (seconds after the patch)", start)
	shrinking.print(start)
	t.Logf("operator 6→3: %+v", *r.OperatorIn)
	cc = clusterClientOf(t, clusterPodAddrs(t, ns))
	readKeys(t, cc)
	r.WritesAcknowledged = checker.StopAndRequire(ctx, t, cc, "while resharding").Acknowledged

	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.Regarding.Kind == "RedisCluster" {
			t.Errorf("Warning event %s: %s", e.Reason, e.Note)
		}
	}
}

// measureRedisCLIResharding runs the same data set on twelve plain Redis pods with the settings
// the operator's pods have (no persistence, diskless sync without delay): a cluster of three
// masters with a replica each made by redis-cli, three more masters with replicas added, and
// redis-cli's rebalance timed to six masters and back to three.
func measureRedisCLIResharding(t *testing.T, r *Resharding) {
	t.Helper()
	ctx := context.Background()
	ns := sb.Namespace(t, "rediscli")
	var manifests []string
	for i := 0; i < 12; i++ {
		manifests = append(manifests, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: cli-%02d, labels: {app: cli}}
spec:
  containers:
  - name: redis
    image: redis:7.0.15
    args: [--port, "6379", --protected-mode, "no", --appendonly, "no", --cluster-enabled, "yes",
      --cluster-config-file, /data/nodes.conf, --repl-diskless-sync-delay, "0", --dir, /data]
    readinessProbe:
      tcpSocket: {port: 6379}
      periodSeconds: 1
`, i))
	}
	sb.Apply(t, ns, strings.Join(manifests, "---\n"))
	pods := sb.WaitPodsReady(t, ns, "app=cli", 12, 5*time.Minute)
	addr := func(i int) string { return pods[i].Status.PodIP + ":6379" }
	for i := range pods {
		// save "" as the operator's pods have it (an empty argument does not survive the pod spec).
		c := goredis.NewClient(&goredis.Options{Addr: addr(i)})
		err := c.ConfigSet(ctx, "save", "").Err()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	var first []string
	for i := 0; i < 6; i++ {
		first = append(first, addr(i))
	}
	redisCLI(t, append(append([]string{"--cluster", "create"}, first...), "--cluster-replicas", "1", "--cluster-yes")...)
	waitClusterOK(t, first)
	cc := clusterClientOf(t, first)
	loadKeys(t, cc)
	checker, err := writecheck.Start(ctx, cc, lightWriter)
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Stop()

	// The new nodes join as redis-cli's add-node would have them (it refuses to run while
	// gossip still spreads the previous one): met, then the replicas attached.
	var newIDs []string
	for i := 6; i < 12; i++ {
		meet(t, addr(i), pods[0].Status.PodIP)
		if i < 9 {
			newIDs = append(newIDs, nodeID(t, addr(i)))
		}
	}
	waitKnown(t, addr(0), 12)
	for i := 9; i < 12; i++ {
		replicate(t, addr(i), newIDs[i-9])
	}
	var all []string
	for i := 0; i < 12; i++ {
		all = append(all, addr(i))
	}
	// Every node must know every other: redis-cli sends SETSLOT NODE to all masters, and one
	// that has not heard of the target yet refuses it ("Unknown node").
	for _, a := range all {
		waitKnown(t, a, 12)
	}
	waitClusterOK(t, all)
	waitAgreed(t, addr(0))

	start := time.Now()
	redisCLI(t, "--cluster", "rebalance", addr(0), "--cluster-use-empty-masters", "--cluster-pipeline", "1000")
	took := time.Since(start)
	r.RedisCLIOut = newReshard(dbSizesAt(t, addr(6), addr(7), addr(8)), took)
	t.Logf("redis-cli 3→6: %+v", *r.RedisCLIOut)
	readKeys(t, clusterClientOf(t, all))

	moved := dbSizesAt(t, addr(6), addr(7), addr(8))
	weights := []string{"--cluster", "rebalance", addr(0), "--cluster-pipeline", "1000", "--cluster-weight"}
	for _, id := range newIDs {
		weights = append(weights, id+"=0")
	}
	// redis-cli's rebalance fails ("Please use SETSLOT only with masters") when an emptied
	// master turns itself into a replica; the operator's setting avoids that for it too.
	for i := 6; i < 12; i++ {
		c := goredis.NewClient(&goredis.Options{Addr: addr(i)})
		err := c.ConfigSet(ctx, "cluster-allow-replica-migration", "no").Err()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	waitAgreed(t, addr(0))
	start = time.Now()
	redisCLI(t, weights...)
	took = time.Since(start)
	if left := dbSizesAt(t, addr(6), addr(7), addr(8)); left != 0 {
		t.Errorf("redis-cli left %d keys on the masters it emptied", left)
	}
	r.RedisCLIIn = newReshard(moved, took)
	t.Logf("redis-cli 6→3: %+v", *r.RedisCLIIn)
	readKeys(t, cc)
	checker.StopAndRequire(ctx, t, cc, "while redis-cli resharded")
}

// lightWriter: one client writing about a hundred keys a second, checked for lost writes.
var lightWriter = writecheck.Options{Prefix: "light", Writers: 1, Interval: 10 * time.Millisecond}

// conditionLog records each new message of the Ready condition, to tell what a scaling waited on.
type conditionLog struct {
	last  string
	times []time.Time
	lines []string
}

func (l *conditionLog) observe(ns, name string) {
	cr := &v1beta2.RedisCluster{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
		return
	}
	c := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
	if c == nil || c.Message == l.last {
		return
	}
	l.last = c.Message
	l.times = append(l.times, time.Now())
	l.lines = append(l.lines, c.Reason+": "+c.Message)
}

func (l *conditionLog) print(ref time.Time) {
	fmt.Println("Ready condition messages (seconds after the same time):")
	for i, line := range l.lines {
		fmt.Printf("  %+6.2f  %.160s\n", l.times[i].Sub(ref).Seconds(), line)
	}
}

func redisCLI(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func meet(t *testing.T, addr, ip string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	if err := c.ClusterMeet(context.Background(), ip, "6379").Err(); err != nil {
		t.Fatal(err)
	}
}

func replicate(t *testing.T, addr, masterID string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	waitFor(t, time.Minute, addr+" to replicate "+masterID, func() bool {
		return c.ClusterReplicate(context.Background(), masterID).Err() == nil
	})
}

// waitAgreed waits for redis-cli's own cluster check to pass: every node agrees on the slots.
func waitAgreed(t *testing.T, addr string) {
	t.Helper()
	waitFor(t, time.Minute, "redis-cli --cluster check "+addr, func() bool {
		out, err := exec.Command("redis-cli", "--cluster", "check", addr).CombinedOutput()
		return err == nil && !strings.Contains(string(out), "[ERR]")
	})
}

func nodeID(t *testing.T, addr string) string {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	id, err := c.ClusterMyID(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func waitKnown(t *testing.T, addr string, n int) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	waitFor(t, time.Minute, fmt.Sprintf("%s to know %d nodes", addr, n), func() bool {
		// Nodes still in handshake are listed under a temporary ID: not known yet.
		text, err := c.ClusterNodes(context.Background()).Result()
		known := 0
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			if line != "" && !strings.Contains(line, "handshake") {
				known++
			}
		}
		return err == nil && known == n
	})
}

func waitClusterOK(t *testing.T, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a})
		waitFor(t, time.Minute, a+" cluster_state:ok", func() bool {
			info, err := c.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		_ = c.Close()
	}
}

func clusterClientOf(t *testing.T, addrs []string) *goredis.ClusterClient {
	t.Helper()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func value(i int) string {
	v := strconv.Itoa(i)
	return v + strings.Repeat("v", reshardValueSize-len(v))
}

// loadKeys writes the data set, pipelined from a few goroutines.
func loadKeys(t *testing.T, cc *goredis.ClusterClient) {
	t.Helper()
	forKeys(t, cc, func(ctx context.Context, pipe goredis.Pipeliner, i int) {
		pipe.Set(ctx, fmt.Sprintf("k:%d", i), value(i), 0)
	}, nil)
}

// readKeys reads every key of the data set back.
func readKeys(t *testing.T, cc *goredis.ClusterClient) {
	t.Helper()
	forKeys(t, cc, func(ctx context.Context, pipe goredis.Pipeliner, i int) { pipe.Get(ctx, fmt.Sprintf("k:%d", i)) },
		func(i int, cmd goredis.Cmder) error {
			got, err := cmd.(*goredis.StringCmd).Result()
			if err != nil || got != value(i) {
				return fmt.Errorf("GET k:%d = %.20q: %w", i, got, err)
			}
			return nil
		})
}

// forKeys queues a command per key of the data set, in pipelines from a few goroutines, and
// checks each reply (nil: only that the pipeline succeeded).
func forKeys(t *testing.T, cc *goredis.ClusterClient, queue func(context.Context, goredis.Pipeliner, int), check func(int, goredis.Cmder) error) {
	t.Helper()
	const workers, batch = 8, 2000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for from := w * batch; from < reshardKeys; from += workers * batch {
				pipe := cc.Pipeline()
				to := min(from+batch, reshardKeys)
				for i := from; i < to; i++ {
					queue(ctx, pipe, i)
				}
				cmds, err := pipe.Exec(ctx)
				if err != nil && check == nil {
					errs <- err
					return
				}
				for j, cmd := range cmds {
					if check == nil {
						continue
					}
					if err := check(from+j, cmd); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func patchSize(t *testing.T, ns, name string, size int) {
	t.Helper()
	cr := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := fmt.Sprintf(`{"spec":{"clusterSize":%d}}`, size)
	if err := sb.Client.Patch(context.Background(), cr, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// readyForGeneration: the operator says Ready for the resource's current spec.
func readyForGeneration(t *testing.T, ns, name string) bool {
	t.Helper()
	cr := &v1beta2.RedisCluster{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
	return cr.Status.State == "Ready" && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == cr.Generation
}

func podsReady(ns string, names ...string) bool {
	for _, name := range names {
		p := &corev1.Pod{}
		if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false
		}
		if !podReadyNow(p) {
			return false
		}
	}
	return true
}

func podReadyNow(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// clusterPodAddrs are the Redis addresses of the live pods of the RedisCluster "reshard".
func clusterPodAddrs(t *testing.T, ns string) []string {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "reshard"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out = append(out, p.Status.PodIP+":6379")
		}
	}
	return out
}

func dbSizes(t *testing.T, ns string, pods ...string) int64 {
	t.Helper()
	var addrs []string
	for _, name := range pods {
		p := &corev1.Pod{}
		if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, p.Status.PodIP+":6379")
	}
	return dbSizesAt(t, addrs...)
}

func dbSizesAt(t *testing.T, addrs ...string) int64 {
	t.Helper()
	var total int64
	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a})
		n, err := c.DBSize(context.Background()).Result()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// machine names the CPU and core count the figures were measured on.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s/%s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}
