package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/status"
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

// boundedWait reports a wait through report until it has lasted bound; past it, the resource
// is Degraded (ReasonStuck) with what it waits for and since when, and one Warning event says
// so (one per wait, not one per reconcile). The clocks stop when the resource is Ready
// (waitsOver).
func boundedWait(rec recorder.EventRecorder, mem *Memory, obj client.Object, conditions status.Conditions, key string, bound time.Duration, message string, report func(message string)) {
	now := time.Now()
	since := mem.waits.Started(obj.GetUID(), key, now)
	if now.Sub(since) < bound {
		report(message)
		return
	}
	stuck := fmt.Sprintf("%s; unchanged since %s", message, since.UTC().Format(time.RFC3339))
	if mem.warned.FirstWarning(obj.GetUID(), "stuck", key) {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonStuck, "Wait", "waited %s: %s", bound, stuck)
	}
	conditions.Degraded(ReasonStuck, stuck)
}

// waitsOver stops every wait's clock and forgets the stuck warnings of a resource that serves
// as specified, so that a later wait starts its bound afresh and is warned of again.
func (m *Memory) waitsOver(uid types.UID) {
	m.waits.Forget(uid)
	m.warned.Cleared(uid, "stuck")
}
