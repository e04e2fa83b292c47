package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonStuck: the operator has waited past its bound for something that should have happened
// by itself; see status.ReasonStuck, which decides it.
const ReasonStuck = status.ReasonStuck

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
// so (one per wait, not one per reconcile). status.BoundedWaits decides all of it; this raises
// the event. The clocks stop when the resource is Ready (waitsOver).
func boundedWait(rec recorder.EventRecorder, mem *Memory, obj client.Object, conditions status.Conditions, key string, bound time.Duration, message string, report func(message string)) {
	out := mem.boundedWaits().Judge(obj.GetUID(), status.BoundedWait{Key: key, Bound: bound, Message: message}, time.Now())
	if out.Warning != "" {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonStuck, "Wait", "%s", out.Warning)
	}
	out.Report(conditions, report)
}

// boundedWaits are the resources' bounded waits, on the Memory's clocks and warnings.
func (m *Memory) boundedWaits() status.BoundedWaits { return status.NewBoundedWaits(m.waits, m.warned) }

// waitsOver stops every wait's clock and forgets the stuck warnings of a resource that serves
// as specified, so that a later wait starts its bound afresh and is warned of again.
func (m *Memory) waitsOver(uid types.UID) { m.boundedWaits().Over(uid) }
