package liveness

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fakePinger answers for every address but those set silent, and counts what it was asked.
type fakePinger struct {
	mu     sync.Mutex
	silent map[string]bool
	pinged []string
	calls  chan string // when set, told of each PING
}

func (f *fakePinger) Ping(_ context.Context, ep redis.Endpoint) error {
	f.mu.Lock()
	f.pinged = append(f.pinged, ep.Address())
	silent := f.silent[ep.Address()]
	calls := f.calls
	f.mu.Unlock()
	if calls != nil {
		calls <- ep.Address()
	}
	if silent {
		return errors.New("i/o timeout")
	}
	return nil
}

func (f *fakePinger) setSilent(addr string, silent bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silent[addr] = silent
}

func (f *fakePinger) takePinged() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pinged
	f.pinged = nil
	slices.Sort(out)
	return out
}

// enqueued drains what the watcher sent for kind, without waiting: Probe sends before it returns.
func enqueued(w *Watcher, kind string) []string {
	var out []string
	ch := w.events(kind)
	for {
		select {
		case e := <-ch:
			out = append(out, e.Object.String())
		default:
			slices.Sort(out)
			return out
		}
	}
}

func ep(host string) redis.Endpoint { return redis.NewEndpoint(host, 6379, redis.Auth{Password: "p"}) }

func TestProbeEnqueuesAnOwnerOnlyWhenAnAnswerChanges(t *testing.T) {
	ctx := context.Background()
	pinger := &fakePinger{silent: map[string]bool{}}
	w := New(pinger, Options{})
	cache := Owner{Kind: "Redis", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cache"}}
	shop := Owner{Kind: "RedisCluster", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "shop"}}
	w.Watch(cache, map[string]redis.Endpoint{"cache-0": ep("10.0.0.1")})
	w.Watch(shop, map[string]redis.Endpoint{"shop-leader-0": ep("10.0.0.2"), "shop-leader-1": ep("10.0.0.3")})

	w.Probe(ctx)
	if got, want := pinger.takePinged(), []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}; !slices.Equal(got, want) {
		t.Fatalf("pinged %v, want %v", got, want)
	}
	if got := append(enqueued(w, "Redis"), enqueued(w, "RedisCluster")...); len(got) != 0 {
		t.Fatalf("every pod answers as presumed, yet enqueued %v", got)
	}

	// A leader stops answering: its cluster is enqueued once, however many rounds it stays silent.
	pinger.setSilent("10.0.0.3:6379", true)
	w.Probe(ctx)
	if got := enqueued(w, "RedisCluster"); !slices.Equal(got, []string{"ns/shop"}) {
		t.Fatalf("after shop-leader-1 went silent, enqueued %v, want ns/shop", got)
	}
	if got := enqueued(w, "Redis"); len(got) != 0 {
		t.Fatalf("the standalone's pod still answers, yet it was enqueued: %v", got)
	}
	for range 3 {
		w.Probe(ctx)
	}
	if got := enqueued(w, "RedisCluster"); len(got) != 0 {
		t.Fatalf("a pod that stays silent enqueued its cluster again: %v", got)
	}
	// Telling the same pods again (every reconcile does) keeps what they answered.
	w.Watch(shop, map[string]redis.Endpoint{"shop-leader-0": ep("10.0.0.2"), "shop-leader-1": ep("10.0.0.3")})
	w.Probe(ctx)
	if got := enqueued(w, "RedisCluster"); len(got) != 0 {
		t.Fatalf("the same set told again enqueued %v", got)
	}

	// It answers again: enqueued once more.
	pinger.setSilent("10.0.0.3:6379", false)
	w.Probe(ctx)
	if got := enqueued(w, "RedisCluster"); !slices.Equal(got, []string{"ns/shop"}) {
		t.Fatalf("after shop-leader-1 answered again, enqueued %v, want ns/shop", got)
	}

	// A flapping pod costs one enqueue per change of answer, never more than one per round.
	for i := range 6 {
		pinger.setSilent("10.0.0.1:6379", i%2 == 0)
		w.Probe(ctx)
		w.Probe(ctx) // a round with no change: nothing
		if got := enqueued(w, "Redis"); len(got) != 1 {
			t.Fatalf("flap %d: enqueued %v, want the one change", i, got)
		}
	}
}

func TestWatchReplacesTheSetAndForgetStopsThePings(t *testing.T) {
	ctx := context.Background()
	pinger := &fakePinger{silent: map[string]bool{"10.0.0.9:6379": true}}
	w := New(pinger, Options{})
	rr := Owner{Kind: "RedisReplication", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rr"}}
	w.Watch(rr, map[string]redis.Endpoint{"rr-0": ep("10.0.0.1"), "rr-1": ep("10.0.0.2")})
	w.Probe(ctx)
	_ = pinger.takePinged()

	// rr-1 moved to a new address that does not answer; rr-0 is gone from the set.
	w.Watch(rr, map[string]redis.Endpoint{"rr-1": ep("10.0.0.9")})
	w.Probe(ctx)
	if got := pinger.takePinged(); !slices.Equal(got, []string{"10.0.0.9:6379"}) {
		t.Fatalf("pinged %v, want only rr-1's new address", got)
	}
	if got := enqueued(w, "RedisReplication"); !slices.Equal(got, []string{"ns/rr"}) {
		t.Fatalf("rr-1 at its new address does not answer: enqueued %v, want ns/rr", got)
	}

	w.Forget(rr)
	w.Probe(ctx)
	if got := pinger.takePinged(); len(got) != 0 {
		t.Fatalf("a forgotten resource's pods were pinged: %v", got)
	}
	var nilWatcher *Watcher
	nilWatcher.Watch(rr, map[string]redis.Endpoint{"rr-0": ep("10.0.0.1")}) // a reconciler without a watcher
}

func TestStartPingsEveryIntervalOfItsClock(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	pinger := &fakePinger{silent: map[string]bool{}, calls: make(chan string, 8)}
	w := New(pinger, Options{Interval: 2 * time.Second, Clock: clock})
	w.Watch(Owner{Kind: "Redis", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cache"}},
		map[string]redis.Endpoint{"cache-0": ep("10.0.0.1")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	for round := range 3 {
		// Step only once Start waits on its ticker, or the step would come before it.
		waitFor(t, func() bool { return clock.HasWaiters() })
		select {
		case addr := <-pinger.calls:
			t.Fatalf("round %d: pinged %s before the interval passed", round, addr)
		default:
		}
		clock.Step(2 * time.Second)
		select {
		case <-pinger.calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no PING after the interval", round)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v", err)
	}
}

// waitFor waits, without sleeping, for cond to hold, giving other goroutines the processor.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

func TestReadContextIsShortestForAPodFoundSilent(t *testing.T) {
	ctx := context.Background()
	pinger := &fakePinger{silent: map[string]bool{"10.0.0.2:6379": true}}
	const round = 3 * time.Second
	w := New(pinger, Options{Interval: round, Timeout: 700 * time.Millisecond})
	cache := Owner{Kind: "Redis", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cache"}}
	w.Watch(cache, map[string]redis.Endpoint{"cache-0": ep("10.0.0.1"), "cache-1": ep("10.0.0.2")})
	deadline := func(pod string) (time.Duration, bool) {
		c, cancel := w.ReadContext(ctx, cache, pod)
		defer cancel()
		d, ok := c.Deadline()
		return time.Until(d), ok
	}
	// A read of a pod not found silent (not yet pinged, or answering) may take a round and a
	// PING timeout, by when a pod that froze as it began is found silent.
	if d, ok := deadline("cache-1"); !ok || d <= 700*time.Millisecond || d > round+700*time.Millisecond {
		t.Fatalf("a pod not yet pinged gets %v (deadline %v), want a round and a PING timeout", d, ok)
	}
	w.Probe(ctx)
	if d, ok := deadline("cache-0"); !ok || d <= 700*time.Millisecond || d > round+700*time.Millisecond {
		t.Fatalf("a pod that answers gets %v (deadline %v), want a round and a PING timeout", d, ok)
	}
	if d, ok := deadline("cache-1"); !ok || d > 700*time.Millisecond {
		t.Fatalf("a silent pod's reads get %v (deadline %v), want at most the PING timeout", d, ok)
	}
	var nilWatcher *Watcher
	if c, cancel := nilWatcher.ReadContext(ctx, cache, "cache-1"); c != ctx {
		t.Fatal("no watcher changed the context")
	} else {
		cancel()
	}
}
