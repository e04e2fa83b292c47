package status

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ReasonStuck: the operator has waited past its bound for something that should have happened
// by itself (sentinels to agree, a replica's link to come up, a master to be chosen); the
// message says what, and since when. It is Degraded, not Failed: it may still clear.
const ReasonStuck = "Stuck"

// stuckTopic is the topic under which StuckWarnings remember the stuck waits warned of.
const stuckTopic = "stuck"

// StuckWarnings remember which stuck waits of each resource were warned of, so that a wait
// raises one Warning however many reconciles find it stuck (the operator's is events.Warned).
type StuckWarnings interface {
	// FirstWarning reports whether the resource was not warned of trouble on topic yet, and
	// notes that it now is.
	FirstWarning(uid types.UID, topic, trouble string) bool
	// Cleared forgets what the resource was warned of on topic.
	Cleared(uid types.UID, topic string)
}

// BoundedWait is one wait for something that should happen by itself: reported as it is until
// it has lasted Bound, then as stuck.
type BoundedWait struct {
	// Key names the wait among the resource's waits: its clock and its warning.
	Key string
	// Bound is how long the wait may last before it is stuck.
	Bound time.Duration
	// Message says what is waited for.
	Message string
}

// WaitOutcome is what a bounded wait comes to at one reconcile.
type WaitOutcome struct {
	// Stuck: the wait has lasted its bound.
	Stuck bool
	// Message is the wait's message; once stuck, with since when nothing changed.
	Message string
	// Warning, when not "", is the note of the one Warning event (ReasonStuck) the wait raises:
	// set at the first reconcile that finds it stuck only.
	Warning string
}

// at decides a wait that has held since since, at now.
func (w BoundedWait) at(since, now time.Time) WaitOutcome {
	if now.Sub(since) < w.Bound {
		return WaitOutcome{Message: w.Message}
	}
	return WaitOutcome{Stuck: true, Message: fmt.Sprintf("%s; unchanged since %s", w.Message, since.UTC().Format(time.RFC3339))}
}

// BoundedWaits decide the bounded waits of every resource: since when each has lasted, and
// whether it was warned of.
type BoundedWaits struct {
	clocks *Clocks
	warned StuckWarnings
}

// NewBoundedWaits times the waits on clocks and remembers their warnings in warned.
func NewBoundedWaits(clocks *Clocks, warned StuckWarnings) BoundedWaits {
	return BoundedWaits{clocks: clocks, warned: warned}
}

// Judge decides the resource's wait at now, starting its clock when it was not running.
func (b BoundedWaits) Judge(uid types.UID, w BoundedWait, now time.Time) WaitOutcome {
	out := w.at(b.clocks.Started(uid, w.Key, now), now)
	if out.Stuck && b.warned.FirstWarning(uid, stuckTopic, w.Key) {
		out.Warning = fmt.Sprintf("waited %s: %s", w.Bound, out.Message)
	}
	return out
}

// Over stops every wait's clock and forgets the stuck warnings of a resource that serves as
// specified, so that a later wait starts its bound afresh and is warned of again.
func (b BoundedWaits) Over(uid types.UID) {
	b.clocks.Forget(uid)
	b.warned.Cleared(uid, stuckTopic)
}

// Report writes the outcome: within the bound through report, the caller's own words for the
// wait; once stuck, Degraded with ReasonStuck.
func (o WaitOutcome) Report(conditions Conditions, report func(message string)) {
	if !o.Stuck {
		report(o.Message)
		return
	}
	conditions.Degraded(ReasonStuck, o.Message)
}
