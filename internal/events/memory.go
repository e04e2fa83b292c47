package events

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Warned remembers which lasting trouble each resource was warned of.
// The status conditions say it too, but a reconcile may read a status from the cache that is
// older than the last one written, and would warn a second time; this memory is what keeps a
// trouble to one Warning event while the operator runs (after a restart the conditions still
// do).
type Warned struct {
	mu     sync.Mutex
	warned map[types.UID]map[string]string // resource → topic → what it was warned of
}

// NewWarned returns a memory of no warning.
func NewWarned() *Warned {
	return &Warned{warned: map[types.UID]map[string]string{}}
}

// FirstWarning reports whether the resource has not been warned of this trouble on this topic
// yet, and notes that it now is.
func (m *Warned) FirstWarning(uid types.UID, topic, trouble string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	topics := m.warned[uid]
	if topics == nil {
		topics = map[string]string{}
		m.warned[uid] = topics
	}
	if topics[topic] == trouble {
		return false
	}
	topics[topic] = trouble
	return true
}

// Forget drops all that is remembered of a resource that is gone.
func (m *Warned) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.warned, uid)
}

// Cleared forgets the topic's trouble, so that its return is warned of again.
func (m *Warned) Cleared(uid types.UID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.warned[uid], topic)
	if len(m.warned[uid]) == 0 {
		delete(m.warned, uid)
	}
}

// repeatWindow is how long an identical action's event is not told again: an action a plan
// repeats while Redis catches up (a MEET whose handshake gossip has not finished) is one
// entry of the timeline, not one per reconcile.
const repeatWindow = time.Minute

// Told remembers, per resource, when each action's event was last told.
type Told struct {
	mu   sync.Mutex
	told map[types.UID]map[string]time.Time
}

// NewTold returns a memory of no action told.
func NewTold() *Told {
	return &Told{told: map[types.UID]map[string]time.Time{}}
}

// Forget drops all that is remembered of a resource that is gone.
func (m *Told) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.told, uid)
}

// FirstTelling reports whether the action (its whole event text) was not told for the
// resource within repeatWindow, and notes that it is told now.
func (m *Told) FirstTelling(uid types.UID, action string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	actions := m.told[uid]
	if actions == nil {
		actions = map[string]time.Time{}
		m.told[uid] = actions
	}
	for a, at := range actions { // keep the memory to the window
		if now.Sub(at) >= repeatWindow {
			delete(actions, a)
		}
	}
	if _, told := actions[action]; told {
		return false
	}
	actions[action] = now
	return true
}
