// Command redis-operator runs the controllers of the Redis operator.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	redisv1alpha1 "github.com/rediskube/redis-operator/api/v1alpha1"
	redisv1beta1 "github.com/rediskube/redis-operator/api/v1beta1"
	redisv1beta2 "github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/controller"
	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/metricsauth"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/restore"
	"github.com/rediskube/redis-operator/internal/version"
	conversionwebhook "github.com/rediskube/redis-operator/internal/webhook"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if len(os.Args) > 1 && os.Args[1] == restore.Command {
		// The init container of a restored resource: fill the data directory, then exit.
		if err := restore.RunCommand(ctx, os.Args[2:], os.Getenv, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "redis-operator:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "redis-operator:", err)
		os.Exit(1)
	}
}

// options are the operator's command-line flags.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	watchNamespaces         string
	maxConcurrentReconciles int
	// dnsDomain is the cluster's DNS domain, the end of every Service name the operator writes.
	dnsDomain string
	// kubeClientQPS and kubeClientTimeout tune the API client (0: client-go's defaults, no
	// client-side rate limit and no timeout).
	kubeClientQPS     float64
	kubeClientTimeout time.Duration
	// livenessInterval is the time between two PINGs of each pod by the liveness watcher.
	livenessInterval time.Duration
	pprofAddr        string
	// operatorImage is the image the operator runs, which the restore init containers run too.
	operatorImage string
	// claimStoreImage and claimStoreInitImage run the S3 gateway over the PersistentVolumeClaim
	// of backups stored on one, and make its bucket's folder.
	claimStoreImage, claimStoreInitImage string
	// version: print the version and commit, then exit without starting anything.
	version bool
	webhook conversionwebhook.Options
	zap     zap.Options
}

// defaultMaxConcurrentReconciles lets a slow or unreachable pod of one resource hold up only
// that resource's reconcile, not every other resource of its kind. (A resource is never
// reconciled by two workers at once: the work queue hands each key to one worker at a time.)
const defaultMaxConcurrentReconciles = 4

func parseFlags(args []string) (*options, error) {
	opts := &options{}
	fs, err := newFlagSet(opts)
	if err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return opts, nil
}

// newFlagSet binds the operator's flags to opts. The operator chart's files/flags.txt lists
// them (the chart refuses other extraArgs); TestChartListsEveryFlag keeps the two in step.
func newFlagSet(opts *options) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("redis-operator", flag.ContinueOnError)
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&opts.metricsSecure, "metrics-secure", true, "Serve /metrics over HTTPS to callers the API server authenticates (TokenReview) and authorizes (SubjectAccessReview: get on the non-resource URL /metrics); false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&opts.metricsCertDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change; empty: a self-signed certificate made at start.")
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
	fs.StringVar(&opts.dnsDomain, "service-dns-domain", cmp.Or(os.Getenv("SERVICE_DNS_DOMAIN"), controller.DefaultDNSDomain),
		"The cluster's DNS domain, the end of the Service names in status.connectionInfo and on the webhook's certificate (default from SERVICE_DNS_DOMAIN, else cluster.local).")
	fs.Float64Var(&opts.kubeClientQPS, "kube-client-qps", 0,
		"Requests per second the operator's Kubernetes API client may send (burst 10); 0: no client-side limit, the API server's priority and fairness applies.")
	fs.DurationVar(&opts.kubeClientTimeout, "kube-client-timeout", 0,
		"Time limit of each Kubernetes API request the operator makes, watches excepted (they last by design); 0: none.")
	fs.DurationVar(&opts.livenessInterval, "liveness-interval", liveness.DefaultInterval,
		"Time between two PINGs (each bounded by 1s) of every Redis and sentinel pod, so that a pod that stops answering without any Kubernetes event is on its resource's status within seconds.")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "",
		"Address to serve net/http/pprof on (/debug/pprof/), e.g. :6060; empty: not served. It tells anyone who reaches it about the operator's memory: bind it where only you do.")
	fs.StringVar(&opts.operatorImage, "operator-image", os.Getenv("OPERATOR_IMAGE"),
		"The image the operator runs (default from OPERATOR_IMAGE): the init container that restores a backup into a new resource runs it; empty: restores are refused.")
	fs.StringVar(&opts.claimStoreImage, "claim-store-image", builder.DefaultClaimStoreImage,
		"The image of the S3 gateway (versitygw) the operator runs over the PersistentVolumeClaim of backups stored on one.")
	fs.StringVar(&opts.claimStoreInitImage, "claim-store-init-image", builder.DefaultClaimStoreInitImage,
		"The image (with mkdir) that makes the bucket's folder on the claim before that gateway starts.")
	fs.BoolVar(&opts.version, "version", false, "Print the operator's version and commit, then exit.")
	bindWebhookFlags(fs, &opts.webhook)
	opts.zap.BindFlags(fs)
	return fs, nil
}

// validate checks the parsed flags and fills the values derived from them.
func (opts *options) validate() error {
	if opts.maxConcurrentReconciles < 1 {
		return fmt.Errorf("--max-concurrent-reconciles=%d: want at least 1", opts.maxConcurrentReconciles)
	}
	if opts.kubeClientQPS < 0 || opts.kubeClientQPS > math.MaxFloat32 {
		return fmt.Errorf("--kube-client-qps=%v: want 0 (no limit) or more", opts.kubeClientQPS)
	}
	if opts.livenessInterval <= 0 {
		return fmt.Errorf("--liveness-interval=%v: want more than 0", opts.livenessInterval)
	}
	if opts.kubeClientTimeout < 0 {
		return fmt.Errorf("--kube-client-timeout=%v: want 0 (none) or more", opts.kubeClientTimeout)
	}
	domain, err := parseDNSDomain(opts.dnsDomain)
	if err != nil {
		return err
	}
	opts.dnsDomain, opts.webhook.DNSDomain = domain, domain
	return nil
}

// parseDNSDomain checks the cluster DNS domain: a DNS name, written without the final dot
// that some resolv.conf search lines carry.
func parseDNSDomain(value string) (string, error) {
	domain := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(value), "."))
	if problems := validation.IsDNS1123Subdomain(domain); len(problems) > 0 {
		return "", fmt.Errorf("service DNS domain %q (--service-dns-domain, SERVICE_DNS_DOMAIN): %s", value, strings.Join(problems, "; "))
	}
	return domain, nil
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
	if err := redisv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register redis v1alpha1 kinds: %w", err)
	}
	// v1beta1 only for the conversion webhook: the controllers read and write v1beta2.
	if err := redisv1beta1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register redis v1beta1 kinds: %w", err)
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
	if opts.version {
		_, err := fmt.Println(version.String("redis-operator"))
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	// go-redis and client-go print through loggers of their own (plain text on stderr): route
	// both to the same structured logger so every line has one format.
	goredis.SetLogger(redis.Logger{Base: ctrl.Log.WithName("go-redis")})
	klog.SetLogger(ctrl.Log.WithName("client-go"))
	// The standard library's log carries net/http's server errors (a TLS handshake refused
	// before the webhook has its certificate): the same logger, without the text timestamp.
	stdlog.SetFlags(0)
	stdlog.SetOutput(logrWriter{ctrl.Log.WithName("net/http")})
	log := ctrl.Log.WithName("setup")
	log.Info("starting", "version", version.Version, "commit", version.Commit)

	if cfg == nil {
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("find the API server: %w", err)
		}
	}
	cfg = clientConfig(cfg, opts)
	scheme, err := newScheme()
	if err != nil {
		return err
	}

	namespaces := splitNamespaces(opts.watchNamespaces)
	if len(namespaces) > 0 {
		log.Info("watching namespaces", "namespaces", namespaces)
	}
	// Secrets: only the operator's own are cached; see controller.CacheOptions.
	cacheOptions := controller.CacheOptions(namespaces)

	// The conversion webhook serves v1beta1 on every replica, leader or not.
	var hook *conversionwebhook.Webhook
	switch {
	case opts.webhook.Port <= 0:
		log.Info("conversion webhook off (--webhook-port=0): v1beta1 requests will fail")
	case opts.webhook.Namespace == "" && opts.webhook.URL == "":
		log.Info("conversion webhook off: the operator's namespace is unknown (set --operator-namespace or POD_NAMESPACE); v1beta1 requests will fail")
	default:
		if hook, err = conversionwebhook.New(cfg, opts.webhook); err != nil {
			return fmt.Errorf("set up the conversion webhook: %w", err)
		}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOptions,
		Client:                        controller.ClientOptions(),
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrTo(30 * time.Second),
		Controller:                    config.Controller{MaxConcurrentReconciles: opts.maxConcurrentReconciles},
		WebhookServer:                 webhookServer(hook),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if hook != nil {
		if err := hook.AddTo(mgr); err != nil {
			return err
		}
	}
	// One pool of Redis connections for every controller: pods are dialled once, then reused.
	redisPool := redis.NewPool(redis.Options{OnCommand: countRedisCommand})
	defer func() {
		if err := redisPool.Close(); err != nil {
			log.Error(err, "close Redis connections")
		}
	}()
	// One liveness watcher for every controller: it PINGs the pods between reconciles on the
	// same pooled connections and brings back a resource whose pod stops answering, or answers
	// again, within seconds, with no API call of its own.
	live := liveness.New(liveness.PoolPinger{Pool: redisPool}, liveness.Options{Interval: opts.livenessInterval})
	if err := mgr.Add(live); err != nil {
		return fmt.Errorf("add the liveness watcher: %w", err)
	}
	// Secrets a resource names are read by name from the API server, not from the cache.
	writes := controller.CountWrites(controller.ReadNamedSecrets(mgr.GetClient(), mgr.GetAPIReader()))
	secretWatch, err := controller.NewSecretWatch(mgr, namespaces)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create the events client: %w", err)
	}
	recorder, stopEvents := events.NewRecorder(kube.EventsV1(), mgr.GetScheme(), "redis-operator")
	defer stopEvents()
	// One memory for the four reconcilers: a TLS Secret two kinds read (a replication's
	// reconciler asks its sentinels) keeps one client configuration, hence one pool client a pod.
	memory := controller.NewMemory()
	// One applier for the four reconcilers. The earlier versions that wrote objects with create
	// and merge patches set no field manager, so the API server recorded them under the
	// program's name: their fields are handed to the apply manager, so that a field the spec
	// no longer asks for leaves objects made before server-side apply too.
	applier := apply.NewApplier(filepath.Base(os.Args[0]))
	deps := controller.Dependencies{Client: writes, Scheme: mgr.GetScheme(), Recorder: recorder, Redis: redisPool,
		SecretWatch: secretWatch, Liveness: live, Memory: memory, Applier: applier, OperatorImage: opts.operatorImage}
	controllers := []struct {
		kind string
		r    interface{ SetupWithManager(ctrl.Manager) error }
	}{
		{"Redis", &controller.RedisReconciler{Dependencies: deps}},
		{"RedisCluster", &controller.RedisClusterReconciler{Dependencies: deps, DNSDomain: opts.dnsDomain}},
		{"RedisReplication", &controller.RedisReplicationReconciler{Dependencies: deps, DNSDomain: opts.dnsDomain}},
		{"RedisSentinel", &controller.RedisSentinelReconciler{Dependencies: deps, DNSDomain: opts.dnsDomain}},
		// Backups reach the object store each one names, through the client S3Stores makes of
		// its resolved settings.
		{"RedisBackup", &controller.RedisBackupReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: recorder, Redis: redisPool,
			Stores: controller.S3Stores, Memory: memory, Applier: applier, APIReader: mgr.GetAPIReader(),
			ClaimStoreImage: opts.claimStoreImage, ClaimStoreInitImage: opts.claimStoreInitImage}},
		{"RedisBackupSchedule", &controller.RedisBackupScheduleReconciler{Client: writes, Scheme: mgr.GetScheme(), Recorder: recorder,
			Clock: clock.RealClock{}}},
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

	log.Info("starting manager", "leaderElection", opts.leaderElect, "metrics", opts.metricsAddr, "metricsSecure", opts.metricsSecure, "probes", opts.probeAddr,
		"dnsDomain", opts.dnsDomain, "pprof", opts.pprofAddr, "kubeClientQPS", opts.kubeClientQPS, "kubeClientTimeout", opts.kubeClientTimeout)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// clientConfig is cfg with the client flags applied, for every client the operator makes.
func clientConfig(cfg *rest.Config, opts *options) *rest.Config {
	c := rest.CopyConfig(cfg)
	if opts.kubeClientQPS > 0 {
		c.QPS = float32(opts.kubeClientQPS)
	}
	if opts.kubeClientTimeout > 0 {
		// Not rest.Config.Timeout: that bounds the whole HTTP exchange of every request, so it
		// would also cut the informers' watches, which then restart every timeout.
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return requestTimeout{next: rt, limit: opts.kubeClientTimeout}
		})
	}
	return c
}

// requestTimeout bounds each API request but watches, body included.
type requestTimeout struct {
	next  http.RoundTripper
	limit time.Duration
}

func (t requestTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.limit)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a request's timer once its body is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

// metricsOptions serves /metrics over HTTPS with Kubernetes authentication and authorization,
// or plain HTTP with --metrics-secure=false.
func metricsOptions(opts *options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.metricsAddr}
	if !opts.metricsSecure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = metricsauth.Filter
	if opts.metricsCertDir != "" {
		o.CertDir = opts.metricsCertDir
	} else {
		// A directory that holds no certificate: the server makes a self-signed one in memory
		// (controller-runtime's default directory might hold someone else's).
		o.CertDir = filepath.Join(os.TempDir(), "redis-operator-metrics-no-certs")
	}
	return o
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

// bindWebhookFlags binds the conversion webhook's flags.
func bindWebhookFlags(fs *flag.FlagSet, o *conversionwebhook.Options) {
	fs.IntVar(&o.Port, "webhook-port", 9443, "Port the conversion webhook (v1beta1) listens on; 0 disables it.")
	fs.StringVar(&o.Namespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "The operator's namespace, home of the webhook Service and certificate Secret (default from POD_NAMESPACE).")
	fs.StringVar(&o.ServiceName, "webhook-service-name", "redis-operator-webhook", "Service through which the API server calls the conversion webhook.")
	var port int
	fs.Func("webhook-service-port", "Port of that Service (default 443).", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("want a port number, got %q", v)
		}
		port = n
		o.ServicePort = int32(port) //nolint:gosec // G115: checked to be a port number above
		return nil
	})
	o.ServicePort = 443
	fs.StringVar(&o.URL, "webhook-url", "", "URL the API server calls instead of the Service (an operator running outside the cluster).")
	fs.StringVar(&o.SecretName, "webhook-cert-secret", "redis-operator-webhook-cert", "Secret (in the operator's namespace) holding the webhook's CA and serving certificate; the operator makes and renews it, unless it holds no CA key (cert-manager's), which is used as it is.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", "", "Directory with tls.crt, tls.key and ca.crt kept current by something else (a mounted cert-manager Secret); the operator then makes no certificate.")
	fs.DurationVar(&o.Validity, "webhook-cert-validity", 365*24*time.Hour, "Validity of the serving certificates the operator makes; renewed with a third left, the CA lives ten times longer.")
}

// webhookServer is the manager's webhook server: the conversion webhook's, or none.
func webhookServer(hook *conversionwebhook.Webhook) webhook.Server {
	if hook == nil {
		return nil
	}
	return hook.Server()
}

// logrWriter gives each line written to it to logr as one info entry.
type logrWriter struct{ logger logr.Logger }

func (w logrWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.logger.Info(line)
	}
	return len(p), nil
}
