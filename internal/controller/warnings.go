package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// warnedTroubles remembers which lasting trouble each resource was warned of. The status
// conditions say it too, but a reconcile may read a status from the cache that is older than
// the last one written, and would warn a second time; this memory is what keeps a trouble to
// one Warning event while the operator runs (after a restart the conditions still do).
var warnedTroubles = &troubleMemory{warned: map[types.UID]map[string]string{}}

type troubleMemory struct {
	mu     sync.Mutex
	warned map[types.UID]map[string]string // resource → topic → what it was warned of
}

// firstWarning reports whether the resource has not been warned of this trouble on this topic
// yet, and notes that it now is.
func (m *troubleMemory) firstWarning(uid types.UID, topic, trouble string) bool {
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

// forget drops all that is remembered of a resource that is gone.
func (m *troubleMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.warned, uid)
}

// cleared forgets the topic's trouble, so that its return is warned of again.
func (m *troubleMemory) cleared(uid types.UID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.warned[uid], topic)
	if len(m.warned[uid]) == 0 {
		delete(m.warned, uid)
	}
}
