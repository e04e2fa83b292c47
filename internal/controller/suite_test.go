//go:build integration

package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	operatorevents "github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/testenv"
)

var (
	restConfig *rest.Config
	testScheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	goredis.SetLogger(quietLogger{}) // dial failures to stopped pods are expected here
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if err := v1beta2.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	env := testenv.NewWithCRDs()
	// The package's tests create hundreds of Services, and nothing deletes a namespace's
	// objects here (no namespace controller runs): the default /24 range ran out of IPs.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	os.Exit(testenv.Run(m, env, &restConfig))
}

// operator is one running instance of the operator's manager, as main starts it.
type operator struct {
	cancel context.CancelFunc
	done   chan error
	pool   *redis.Pool
	// apiWrites counts the requests of the operator that change something in the API server.
	apiWrites atomic.Int64
	writesMu  sync.Mutex
	writes    []string // method and path of each write, to name them when a test fails
	// redisWrites counts the Redis commands the operator sent that are not read-only.
	redisWrites atomic.Int64
	redisReads  atomic.Int64
	// promotions counts the REPLICAOF NO ONE sent.
	promotions atomic.Int64
	// failoverAsks are the CLUSTER FAILOVERs sent, by the address of the node asked.
	askMu        sync.Mutex
	failoverAsks map[string][]time.Time
}

var readOnlyCommands = map[string]bool{
	"ping": true, "cluster nodes": true, "cluster info": true, "cluster shards": true, "cluster myid": true,
	"role": true, "info": true, "config get": true, "hello": true, "client setinfo": true, "client": true,
	"sentinel": true, "acl users": true,
}

// operatorSettings are what tests change of the operator startOperator starts.
type operatorSettings struct {
	stuckAfter time.Duration // 0: the default
	liveness   bool
	clock      clock.PassiveClock // the schedules' clock; nil: the real one
	// storeRetries are the backups' waits between attempts; nil: the default.
	storeRetries []time.Duration
	// stores makes the backups' stores; nil: S3Stores.
	stores BackupStores
	// logger, when set, is the manager's logger (its controllers' too): a test reads what the
	// operator logged. Unset: the process's, as ctrl.SetLogger set it.
	logger *logr.Logger
}

type operatorOption func(*operatorSettings)

// stuckAfter shortens the bound of the waits (DefaultStuckAfter) of the operator it is given to.
func stuckAfter(bound time.Duration) operatorOption {
	return func(o *operatorSettings) { o.stuckAfter = bound }
}

// withClock gives the backup schedules of the operator a clock the test moves.
func withClock(c clock.PassiveClock) operatorOption {
	return func(o *operatorSettings) { o.clock = c }
}

// withStoreRetries sets the waits between a backup's attempts after a transient store failure.
func withStoreRetries(waits ...time.Duration) operatorOption {
	return func(o *operatorSettings) { o.storeRetries = waits }
}

// withStores makes the backups' stores with stores instead of S3Stores.
func withStores(stores BackupStores) operatorOption {
	return func(o *operatorSettings) { o.stores = stores }
}

// withLogger gives the operator's manager, and so its reconcilers, that logger.
func withLogger(l logr.Logger) operatorOption {
	return func(o *operatorSettings) { o.logger = &l }
}

// withLiveness runs the liveness watcher for the RedisReplications and RedisClusters, as main does.
func withLiveness(o *operatorSettings) { o.liveness = true }

func startOperator(t *testing.T, namespace string, options ...operatorOption) *operator {
	t.Helper()
	var settings operatorSettings
	for _, o := range options {
		o(&settings)
	}
	bound := settings.stuckAfter
	op := &operator{done: make(chan error, 1)}
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
	op.pool = redis.NewPool(redis.Options{OnCommand: func(addr, command string) {
		if command == "cluster failover" {
			op.askMu.Lock()
			if op.failoverAsks == nil {
				op.failoverAsks = map[string][]time.Time{}
			}
			op.failoverAsks[addr] = append(op.failoverAsks[addr], time.Now())
			op.askMu.Unlock()
		}
		if command == "replicaof no one" {
			op.promotions.Add(1)
		}
		if readOnlyCommands[command] {
			op.redisReads.Add(1)
		} else {
			op.redisWrites.Add(1)
		}
	}})
	skip := true
	mgrOptions := ctrl.Options{
		Scheme:     testScheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
		// Each test's operator sees only its own namespace: objects of earlier tests stay in
		// the API server (envtest runs no namespace controller).
		// Secrets as in main: only the operator's own cached, the others read by name and
		// watched by their metadata.
		Cache:  CacheOptions([]string{namespace}),
		Client: ClientOptions(),
	}
	if settings.logger != nil {
		mgrOptions.Logger = *settings.logger
	}
	mgr, err := ctrl.NewManager(cfg, mgrOptions)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := operatorevents.NewRecorder(kube.EventsV1(), mgr.GetScheme(), "redis-operator")
	t.Cleanup(stopEvents)
	secretWatch, err := NewSecretWatch(mgr, []string{namespace})
	if err != nil {
		t.Fatal(err)
	}
	kubeClient := ReadNamedSecrets(mgr.GetClient(), mgr.GetAPIReader())
	// One memory for this operator's reconcilers, as in main; a later operator of the same
	// test starts with none of it, as a restarted process would.
	memory := NewMemory()
	// One applier, as main builds it: the fields written under the program's name (here the
	// test binary's, which the tests' own clients also write under) are handed to the apply manager.
	applier := apply.NewApplier(filepath.Base(os.Args[0]))
	var live *liveness.Watcher
	if settings.liveness {
		live = liveness.New(liveness.PoolPinger{Pool: op.pool}, liveness.Options{})
		if err := mgr.Add(live); err != nil {
			t.Fatal(err)
		}
	}
	deps := Dependencies{Client: kubeClient, Scheme: mgr.GetScheme(), SecretWatch: secretWatch, Recorder: events, Redis: op.pool,
		Memory: memory, Applier: applier, OperatorImage: "redis-operator:test"}
	withLive := deps
	withLive.Liveness = live
	if err := (&RedisClusterReconciler{Dependencies: withLive}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&RedisReconciler{Dependencies: deps}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&RedisReplicationReconciler{Dependencies: withLive, MasterPromotionGrace: 2 * time.Second,
		OutageAfter: 3 * time.Second, StuckAfter: bound}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&RedisSentinelReconciler{Dependencies: deps, StuckAfter: bound}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	stores := settings.stores
	if stores == nil {
		stores = S3Stores
	}
	if err := (&RedisBackupReconciler{Client: kubeClient, Scheme: mgr.GetScheme(), Recorder: events, Redis: op.pool,
		Stores: stores, Memory: memory, StoreRetries: settings.storeRetries, Applier: applier, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	var scheduleClock clock.PassiveClock = clock.RealClock{}
	if settings.clock != nil {
		scheduleClock = settings.clock
	}
	if err := (&RedisBackupScheduleReconciler{Client: kubeClient, Scheme: mgr.GetScheme(), Recorder: events,
		Clock: scheduleClock}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(op.stop)
	return op
}

// stop ends the operator as a crash would end its work: whatever it was doing stops.
func (op *operator) stop() {
	if op.cancel == nil {
		return
	}
	op.cancel()
	if err := <-op.done; err != nil {
		fmt.Fprintf(os.Stderr, "operator stopped with error: %v\n", err)
	}
	_ = op.pool.Close()
	op.cancel = nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// operatorInNamespace makes the test's namespace and starts an operator that watches it.
func operatorInNamespace(t *testing.T) (string, *operator, client.Client) {
	t.Helper()
	ns := testNamespace(t)
	c := newClient(t)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns, startOperator(t, ns), c
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return userClient{c}
}

// userClient is the client of a test acting as a user. The operator writes the objects a test
// edits too (the finalizer, the status: each moves the resourceVersion), so an edit that meets
// such a write is made again on the fresh version, keeping the test's spec, labels and
// annotations, as a user's client retries a conflict.
type userClient struct{ client.Client }

func (c userClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	for attempt := 1; ; attempt++ {
		err := c.Client.Update(ctx, obj, opts...)
		if !apierrors.IsConflict(err) || attempt == 5 {
			return err
		}
		latest, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return fmt.Errorf("read %s again after a conflict: %w", obj.GetName(), err)
		}
		obj.SetResourceVersion(latest.GetResourceVersion())
		obj.SetFinalizers(latest.GetFinalizers())
	}
}

// waitUntil polls cond until it returns nil, failing the test with the last error after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = cond(); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dialable(ctx context.Context, addr string) error {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel // errors only: the tests' own messages say what happened
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// writesSince lists the writes after the first n.
func (op *operator) writesSince(n int64) []string {
	op.writesMu.Lock()
	defer op.writesMu.Unlock()
	return append([]string(nil), op.writes[n:]...)
}
