// Package liveness notices within seconds that a Redis pod stops answering (or answers again)
// when nothing in Kubernetes says so: a network cut, a hung process, a node that stopped
// before it turns NotReady. It PINGs the pods the reconcilers tell it of and, when an
// answer changes, enqueues the owning resource, whose reconcile then reads the pod itself.
// It makes no Kubernetes API call: an idle operator stays idle towards the API server.
package liveness

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Defaults of Options.
const (
	DefaultInterval = 2 * time.Second
	DefaultTimeout  = time.Second
	defaultParallel = 16
)

// Pinger asks the process at an endpoint to answer within ctx.
type Pinger interface {
	Ping(ctx context.Context, ep redis.Endpoint) error
}

// PoolPinger PINGs through the operator's pooled connections, so that a liveness read opens
// no connection the reconciles do not already keep.
type PoolPinger struct{ Pool *redis.Pool }

// Ping sends PING on the endpoint's pooled client.
func (p PoolPinger) Ping(ctx context.Context, ep redis.Endpoint) error {
	c, err := p.Pool.Client(ep)
	if err != nil {
		return err
	}
	return c.Ping(ctx)
}

// Options tune a Watcher; zero values take the defaults.
type Options struct {
	// Interval is the time between two rounds of PINGs (default 2s).
	Interval time.Duration
	// Timeout bounds each PING (default 1s): a pod slower than that does not answer.
	Timeout time.Duration
	// Parallel is how many PINGs are in flight at once (default 16).
	Parallel int
	// Clock paces the rounds (default the real clock); tests step a fake one.
	Clock clock.WithTicker
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Owner is the resource whose pods are watched: its kind (the name a controller's Source was
// asked for) and its namespace and name.
type Owner struct {
	Kind string
	types.NamespacedName
}

// target is one watched pod: where to reach it and whether it last failed to answer.
type target struct {
	endpoint redis.Endpoint
	silent   bool
}

// Watcher PINGs the pods of the resources the reconcilers tell it of. Build one in main, hand
// it to the reconcilers and add it to the manager. A nil *Watcher watches nothing, so that a
// reconciler built without one works as before. It is safe for concurrent use.
type Watcher struct {
	pinger Pinger
	opts   Options

	mu      sync.Mutex
	targets map[Owner]map[string]*target // by owner, then by pod name
	sinks   map[string]chan event.TypedGenericEvent[types.NamespacedName]
}

// New returns a watcher that PINGs through pinger.
func New(pinger Pinger, opts Options) *Watcher {
	return &Watcher{pinger: pinger, opts: opts.withDefaults(), targets: map[Owner]map[string]*target{},
		sinks: map[string]chan event.TypedGenericEvent[types.NamespacedName]{}}
}

// Source is what the controller of kind watches to be told of its resources whose pods
// changed answers. Each enqueue goes through the controller's rate limiter, so a flapping
// pod costs at most one reconcile per change and never more than the queue lets through.
func (w *Watcher) Source(kind string) source.Source {
	return source.Channel(w.events(kind), handler.TypedFuncs[types.NamespacedName, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[types.NamespacedName], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.AddRateLimited(reconcile.Request{NamespacedName: e.Object})
		},
	})
}

// events is kind's channel of enqueues, made on first use.
func (w *Watcher) events(kind string) chan event.TypedGenericEvent[types.NamespacedName] {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.sinks[kind]
	if !ok {
		ch = make(chan event.TypedGenericEvent[types.NamespacedName], 64)
		w.sinks[kind] = ch
	}
	return ch
}

// Watch replaces the pods watched for owner with endpoints, by pod name; none forgets the
// owner. A pod kept at the same endpoint keeps what it last answered, so that telling the
// same set again enqueues nothing; a new pod, or one at a new endpoint, is presumed to answer
// (the reconcile telling of it has just read it).
func (w *Watcher) Watch(owner Owner, endpoints map[string]redis.Endpoint) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(endpoints) == 0 {
		delete(w.targets, owner)
		return
	}
	old := w.targets[owner]
	next := make(map[string]*target, len(endpoints))
	for pod, ep := range endpoints {
		if t, ok := old[pod]; ok && t.endpoint == ep {
			next[pod] = t
			continue
		}
		next[pod] = &target{endpoint: ep}
	}
	w.targets[owner] = next
}

// ReadContext is ctx for the reconcile's observation reads of one of owner's pods (ROLE,
// INFO, CLUSTER NODES: answered in milliseconds by a live server). While the pod last failed
// to answer PING they are bounded by the PING timeout, so that the reconcile the watcher
// brought finds it silent in a second rather than after a whole command timeout. Otherwise
// they are bounded by a round and a PING timeout: a read that began just before the pod
// froze would else hold the reconcile, and with it the status and labels, for a command
// timeout per read, while a pod slower than that would have been found silent anyway. The
// reconcile still asks the pod: a pod back before the next round answers.
func (w *Watcher) ReadContext(ctx context.Context, owner Owner, pod string) (context.Context, context.CancelFunc) {
	if w == nil {
		return ctx, func() {}
	}
	w.mu.Lock()
	t, ok := w.targets[owner][pod]
	silent := ok && t.silent
	w.mu.Unlock()
	if silent {
		return context.WithTimeout(ctx, w.opts.Timeout)
	}
	return context.WithTimeout(ctx, w.opts.Interval+w.opts.Timeout)
}

// Forget stops watching the pods of owner: it is deleted.
func (w *Watcher) Forget(owner Owner) { w.Watch(owner, nil) }

// NeedLeaderElection: only the leader reconciles, so only it has pods to watch.
func (w *Watcher) NeedLeaderElection() bool { return true }

// Start runs a round of PINGs every Interval until ctx is done (manager.Runnable).
func (w *Watcher) Start(ctx context.Context) error {
	ticker := w.opts.Clock.NewTicker(w.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			w.Probe(ctx)
		}
	}
}

// probe is one PING of one pod, with what it answered.
type probe struct {
	owner  Owner
	pod    string
	target *target
	err    error
}

// Probe PINGs every watched pod once, side by side, and enqueues each owner one of whose pods
// answered differently from the round before. It returns when every PING has.
func (w *Watcher) Probe(ctx context.Context) {
	probes := w.snapshot()
	limit := make(chan struct{}, w.opts.Parallel)
	var wg sync.WaitGroup
	for i := range probes {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer func() { <-limit; wg.Done() }()
			pingCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
			defer cancel()
			probes[i].err = w.pinger.Ping(pingCtx, probes[i].target.endpoint)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // stopping: a PING cut short says nothing of the pod
	}
	for _, owner := range w.record(ctx, probes) {
		select {
		case w.events(owner.Kind) <- event.TypedGenericEvent[types.NamespacedName]{Object: owner.NamespacedName}:
		case <-ctx.Done():
			return
		}
	}
}

func (w *Watcher) snapshot() []probe {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []probe
	for owner, pods := range w.targets {
		for pod, t := range pods {
			out = append(out, probe{owner: owner, pod: pod, target: t})
		}
	}
	return out
}

// record keeps what each pod answered and returns the owners with a pod whose answer changed,
// once each; a pod no longer watched (or watched at another endpoint) since the round began
// counts for nothing.
func (w *Watcher) record(ctx context.Context, probes []probe) []Owner {
	logger := log.FromContext(ctx).WithName("liveness")
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := map[Owner]bool{}
	var out []Owner
	for _, p := range probes {
		if w.targets[p.owner][p.pod] != p.target {
			continue
		}
		silent := p.err != nil
		if silent == p.target.silent {
			continue
		}
		p.target.silent = silent
		if silent {
			logger.Info("pod stopped answering PING", "kind", p.owner.Kind, "namespace", p.owner.Namespace, "name", p.owner.Name,
				"pod", p.pod, "address", p.target.endpoint.Address(), "error", p.err.Error())
		} else {
			logger.Info("pod answers PING again", "kind", p.owner.Kind, "namespace", p.owner.Namespace, "name", p.owner.Name,
				"pod", p.pod, "address", p.target.endpoint.Address())
		}
		if !changed[p.owner] {
			changed[p.owner] = true
			out = append(out, p.owner)
		}
	}
	return out
}
