package controller

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// ReasonStuck: the operator has waited past its bound for something that should have happened
// by itself (sentinels to agree, a replica's link to come up, a master to be chosen); the
// message says what, and since when. It is Degraded, not Failed: it may still clear.
const ReasonStuck = "Stuck"

// Bounds of the waits that no Kubernetes event ends.
const (
	// DefaultOutageAfter is how long a replication's master may stay silent, or its replicas
	// unlinked, before it is an outage: a clean fail-over lasts seconds. It is shorter than
	// DefaultMasterPromotionGrace, so that a master cut off reads as an outage before a replica
	// is promoted.
	DefaultOutageAfter = 10 * time.Second
	// DefaultStuckAfter is how long the operator waits for something that should happen by
	// itself before it says it is stuck.
	DefaultStuckAfter = 2 * time.Minute
)

// clocks remember, per resource and per wait, since when it has lasted (Memory.waits). They
// are memory only: an operator restart restarts the clocks, which delays a report and never
// hastens it.
type clocks struct {
	mu    sync.Mutex
	since map[types.UID]map[string]time.Time
}

// started returns since when the wait named key has held, starting its clock now when it
// was not running.
func (c *clocks) started(uid types.UID, key string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	waits := c.since[uid]
	if waits == nil {
		waits = map[string]time.Time{}
		c.since[uid] = waits
	}
	if since, ok := waits[key]; ok {
		return since
	}
	waits[key] = now
	return now
}

// startedAt returns when the clock of the wait named key started, and whether it runs,
// without starting it.
func (c *clocks) startedAt(uid types.UID, key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	since, ok := c.since[uid][key]
	return since, ok
}

// stopped stops the clock of a wait that no longer holds.
func (c *clocks) stopped(uid types.UID, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since[uid], key)
}

// forget drops every clock of a resource that is gone or serves as specified.
func (c *clocks) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, uid)
}

// lasted returns how long the wait named key has held when it holds, and stops its clock
// (returning 0) when it does not.
func (c *clocks) lasted(uid types.UID, key string, holds bool, now time.Time) time.Duration {
	if !holds {
		c.stopped(uid, key)
		return 0
	}
	return now.Sub(c.started(uid, key, now))
}

// boundedWait reports a wait through report until it has lasted bound; past it, the resource
// is Degraded (ReasonStuck) with what it waits for and since when, and one Warning event says
// so (one per wait, not one per reconcile). The clocks stop when the resource is Ready
// (waitsOver).
func boundedWait(rec recorder.EventRecorder, mem *Memory, obj client.Object, conditions conditionSet, key string, bound time.Duration, message string, report func(message string)) {
	now := time.Now()
	since := mem.waits.started(obj.GetUID(), key, now)
	if now.Sub(since) < bound {
		report(message)
		return
	}
	stuck := fmt.Sprintf("%s; unchanged since %s", message, since.UTC().Format(time.RFC3339))
	if mem.warned.firstWarning(obj.GetUID(), "stuck", key) {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonStuck, "Wait", "waited %s: %s", bound, stuck)
	}
	conditions.degraded(ReasonStuck, stuck)
}

// waitsOver stops every wait's clock and forgets the stuck warnings of a resource that serves
// as specified, so that a later wait starts its bound afresh and is warned of again.
func (m *Memory) waitsOver(uid types.UID) {
	m.waits.forget(uid)
	m.warned.cleared(uid, "stuck")
}
