//go:build integration

package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	operatorevents "github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/redis"
)

// livenessOperator is an operator as main starts it, with or without the liveness watcher,
// counting the Redis commands it sends by port (one port per resource in these tests).
type livenessOperator struct {
	*operator
	mu     sync.Mutex
	byPort map[int]int
}

func (op *livenessOperator) commandsTo(port int) int {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.byPort[port]
}

func startLivenessOperator(t *testing.T, namespace string, watch bool) *livenessOperator {
	t.Helper()
	op := &livenessOperator{operator: &operator{done: make(chan error, 1)}, byPort: map[int]int{}}
	cfg := restConfigCountingWrites(op.operator)
	op.pool = redis.NewPool(redis.Options{OnCommand: func(addr, command string) {
		if readOnlyCommands[command] {
			op.redisReads.Add(1)
		} else {
			op.redisWrites.Add(1)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		op.mu.Lock()
		op.byPort[port]++
		op.mu.Unlock()
	}})
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: testScheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
		Cache:      CacheOptions([]string{namespace}), Client: ClientOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var live *liveness.Watcher
	if watch {
		live = liveness.New(liveness.PoolPinger{Pool: op.pool}, liveness.Options{})
		if err := mgr.Add(live); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := operatorevents.NewRecorder(kube.EventsV1(), mgr.GetScheme(), "redis-operator")
	t.Cleanup(stopEvents)
	kubeClient := ReadNamedSecrets(mgr.GetClient(), mgr.GetAPIReader())
	memory := NewMemory()
	applier := apply.NewApplier(filepath.Base(os.Args[0]))
	deps := Dependencies{Client: kubeClient, Scheme: mgr.GetScheme(), Recorder: events, Redis: op.pool,
		Liveness: live, Memory: memory, Applier: applier}
	if err := (&RedisClusterReconciler{Dependencies: deps}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&RedisReconciler{Dependencies: deps}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(op.stop)
	return op
}

// restConfigCountingWrites is the test API server's config, counting op's writes as
// startOperator does.
func restConfigCountingWrites(op *operator) *rest.Config {
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				op.apiWrites.Add(1)
				op.writesMu.Lock()
				op.writes = append(op.writes, req.Method+" "+req.URL.Path)
				op.writesMu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// livenessResources are a standalone Redis and a three-leader RedisCluster in one namespace,
// their pods real redis-server processes.
type livenessResources struct {
	cluster    *clusterFixture
	standalone *v1beta2.Redis
	kubelet    *fakeKubelet // the standalone's
}

func newLivenessResources(t *testing.T) *livenessResources {
	t.Helper()
	f := newClusterFixture(t, 3, 0)
	kubelet := newFakeKubelet(t, f.c, builder.DefaultRedisPort)
	kubelet.standalone = true
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: f.ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}}}
	if err := f.c.Create(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	return &livenessResources{cluster: f, standalone: cr, kubelet: kubelet}
}

func (l *livenessResources) run() {
	l.cluster.runPods()
	l.kubelet.runStatefulSet(l.cluster.ctx, l.cluster.ns, "cache")
}

func (l *livenessResources) waitReady(t *testing.T) {
	t.Helper()
	l.cluster.waitReady(90 * time.Second)
	waitStandaloneReady(t, l.cluster.c, l.standalone)
}

// degradedNaming waits for conditions() to say Ready=False and Degraded=True with a message
// naming pod, and returns when Degraded turned True.
func degradedNaming(t *testing.T, what, pod string, conditions func() ([]metav1.Condition, error)) time.Time {
	t.Helper()
	var since time.Time
	waitUntil(t, 15*time.Second, what+" Degraded naming "+pod, func() error {
		conds, err := conditions()
		if err != nil {
			return err
		}
		degraded := meta.FindStatusCondition(conds, v1beta2.ConditionDegraded)
		if !meta.IsStatusConditionFalse(conds, v1beta2.ConditionReady) || degraded == nil || degraded.Status != metav1.ConditionTrue ||
			!strings.Contains(degraded.Message, pod) {
			return fmt.Errorf("conditions %s", describeConditions(conds))
		}
		since = degraded.LastTransitionTime.Time
		return nil
	})
	return since
}

// A pod that stops answering while Kubernetes still calls it Running and Ready (SIGSTOP: a hung
// process, a cut network) is on its resource's status within seconds, long before the 30 s
// periodic health check would find it, and the resource is Ready again soon after it answers.
func TestLivenessFrozenPodsAreDegradedWithinSeconds(t *testing.T) {
	t.Parallel()
	l := newLivenessResources(t)
	f := l.cluster
	op := startLivenessOperator(t, f.ns, true)
	l.run()
	l.waitReady(t)
	// The first Ready comes with a requeue 30 s on: stop a pod just after a reconcile, so that
	// only the watcher can tell of it before then.
	time.Sleep(time.Second)

	freeze := func(what string, p *fakePod, conditions func() ([]metav1.Condition, error), ready func()) {
		writes := op.apiWrites.Load()
		stopped := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		thawed := false
		thaw := func() {
			if !thawed {
				thawed = true
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
			}
		}
		t.Cleanup(thaw)
		since := degradedNaming(t, what, p.name, conditions)
		// Condition times have a second's resolution: round the stop down to match.
		took := since.Sub(stopped.Truncate(time.Second))
		t.Logf("%s: pod %s stopped answering; Degraded after %s (status written %d times)", what, p.name, took, op.apiWrites.Load()-writes)
		if took >= 10*time.Second {
			t.Errorf("%s: Degraded %s after the pod stopped answering: only the 30 s health check could have found it", what, took)
		}
		thawedAt := time.Now()
		thaw()
		ready()
		t.Logf("%s: Ready again %s after the pod answered", what, time.Since(thawedAt).Round(100*time.Millisecond))
	}

	standalone := func() ([]metav1.Condition, error) {
		err := f.c.Get(f.ctx, client.ObjectKeyFromObject(l.standalone), l.standalone)
		return l.standalone.Status.Conditions, err
	}
	freeze("Redis", l.kubelet.pod("cache-0"), standalone, func() { waitStandaloneReady(t, f.c, l.standalone) })

	cluster := func() ([]metav1.Condition, error) {
		cr := &v1beta2.RedisCluster{}
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, cr)
		return cr.Status.Conditions, err
	}
	freeze("RedisCluster", f.kubelet.pod("shards-leader-1"), cluster, func() { f.waitReady(30 * time.Second) })

	// Nothing in Kubernetes changed: the pods stayed Running and Ready throughout.
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if !podReady(&pods.Items[i]) {
			t.Errorf("pod %s is not Ready: the test meant Kubernetes to see nothing", pods.Items[i].Name)
		}
	}
}

// The watcher's cost: the Redis commands a minute each Ready resource gets, without and with
// it, and the API writes of an idle operator (none either way).
func TestLivenessSteadyStateCommandsPerMinute(t *testing.T) {
	t.Parallel()
	// Longer than the 30 s re-check of a Ready resource, so that a write it made would show;
	// the counts are scaled to a minute.
	const window = 35 * time.Second
	l := newLivenessResources(t)
	f := l.cluster
	first := startLivenessOperator(t, f.ns, false)
	l.run()
	l.waitReady(t)
	measure := func(op *livenessOperator, label string) {
		time.Sleep(3 * time.Second) // the reconciles of a start settle
		cluster, standalone, start := op.commandsTo(f.port), op.commandsTo(builder.DefaultRedisPort), op.apiWrites.Load()
		time.Sleep(window)
		perMinute := func(n int) int { return int(int64(n) * int64(time.Minute) / int64(window)) }
		cluster, standalone = perMinute(op.commandsTo(f.port)-cluster), perMinute(op.commandsTo(builder.DefaultRedisPort)-standalone)
		writes := op.apiWrites.Load() - start
		t.Logf("%s: Redis commands a minute: RedisCluster (3 pods) %d, Redis (1 pod) %d; API writes %d", label, cluster, standalone, writes)
		if writes != 0 {
			t.Errorf("%s: an idle operator wrote to the API server: %v", label, op.writesSince(start))
		}
	}
	measure(first, "without the liveness watcher")
	first.stop()
	second := startLivenessOperator(t, f.ns, true)
	measure(second, "with the liveness watcher")
	l.waitReady(t)
}
