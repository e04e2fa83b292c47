// Command redis-operator runs the controllers of the Redis operator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	redisv1beta2 "github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/controller"
	"github.com/rediskube/redis-operator/internal/redis"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "redis-operator:", err)
		os.Exit(1)
	}
}

// options are the operator's command-line flags.
type options struct {
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	watchNamespaces         string
	maxConcurrentReconciles int
	zap                     zap.Options
}

// defaultMaxConcurrentReconciles lets a slow or unreachable pod of one resource hold up only
// that resource's reconcile, not every other resource of its kind. (A resource is never
// reconciled by two workers at once: the work queue hands each key to one worker at a time.)
const defaultMaxConcurrentReconciles = 4

func parseFlags(args []string) (*options, error) {
	opts := &options{}
	fs := flag.NewFlagSet("redis-operator", flag.ContinueOnError)
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false, "Elect a leader so that only one replica of the operator acts at a time.")
	fs.StringVar(&opts.leaderElectionID, "leader-election-id", "redis-operator.redis.opstreelabs.in", "Name of the Lease used for leader election.")
	fs.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the operator's own namespace).")
	fs.StringVar(&opts.watchNamespaces, "watch-namespace", os.Getenv("WATCH_NAMESPACE"), "Comma-separated namespaces to watch; empty watches all namespaces.")
	concurrency := defaultMaxConcurrentReconciles
	if env := os.Getenv("MAX_CONCURRENT_RECONCILES"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("MAX_CONCURRENT_RECONCILES=%q: want a whole number of at least 1", env)
		}
		concurrency = n
	}
	fs.IntVar(&opts.maxConcurrentReconciles, "max-concurrent-reconciles", concurrency,
		"Resources of one kind reconciled at once (default from MAX_CONCURRENT_RECONCILES, else 4).")
	opts.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if opts.maxConcurrentReconciles < 1 {
		return nil, fmt.Errorf("--max-concurrent-reconciles=%d: want at least 1", opts.maxConcurrentReconciles)
	}
	return opts, nil
}

// newScheme registers the built-in kinds and ours.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register built-in kinds: %w", err)
	}
	if err := redisv1beta2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register redis kinds: %w", err)
	}
	return scheme, nil
}

// run starts the manager and blocks until ctx is done. cfg is the API server to talk to; nil
// means the usual kubeconfig / in-cluster lookup.
func run(ctx context.Context, args []string, cfg *rest.Config) error {
	opts, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	log := ctrl.Log.WithName("setup")

	if cfg == nil {
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("find the API server: %w", err)
		}
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}

	var cacheOptions cache.Options
	if namespaces := splitNamespaces(opts.watchNamespaces); len(namespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			cacheOptions.DefaultNamespaces[ns] = cache.Config{}
		}
		log.Info("watching namespaces", "namespaces", namespaces)
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOptions,
		Client:                        controller.ClientOptions(),
		Metrics:                       metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrTo(30 * time.Second),
		Controller:                    config.Controller{MaxConcurrentReconciles: opts.maxConcurrentReconciles},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	// One pool of Redis connections for every controller: pods are dialled once, then reused.
	redisPool := redis.NewPool(redis.Options{OnCommand: countRedisCommand})
	defer func() {
		if err := redisPool.Close(); err != nil {
			log.Error(err, "close Redis connections")
		}
	}()
	writes := controller.CountWrites(mgr.GetClient())
	events := mgr.GetEventRecorder("redis-operator")
	controllers := []struct {
		kind string
		r    interface{ SetupWithManager(ctrl.Manager) error }
	}{
		{"Redis", &controller.RedisReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: events, Redis: redisPool}},
		{"RedisCluster", &controller.RedisClusterReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: events, Redis: redisPool}},
		{"RedisReplication", &controller.RedisReplicationReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: events, Redis: redisPool}},
		{"RedisSentinel", &controller.RedisSentinelReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: events, Redis: redisPool}},
	}
	for _, c := range controllers {
		if err := c.r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the %s controller: %w", c.kind, err)
		}
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	// Ready once the informers have synced: before that the operator would act on a partial view.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}

	log.Info("starting manager", "leaderElection", opts.leaderElect, "metrics", opts.metricsAddr, "probes", opts.probeAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// redisCommands counts what the operator sends to Redis, by command, so that a dashboard or a
// benchmark can tell a quiet steady state from a busy one.
var redisCommands = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "redis_operator_redis_commands_total",
	Help: "Redis commands sent by the operator, by command.",
}, []string{"command"})

func init() {
	metrics.Registry.MustRegister(redisCommands)
}

func countRedisCommand(_, command string) { redisCommands.WithLabelValues(command).Inc() }

func splitNamespaces(value string) []string {
	var out []string
	for _, ns := range strings.Split(value, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
