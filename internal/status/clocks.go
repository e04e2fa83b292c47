package status

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Clocks remember, per resource and per wait, since when it has lasted. They are memory only:
// an operator restart restarts the clocks, which delays a report and never hastens it.
type Clocks struct {
	mu    sync.Mutex
	since map[types.UID]map[string]time.Time
}

// NewClocks returns clocks of which none runs.
func NewClocks() *Clocks {
	return &Clocks{since: map[types.UID]map[string]time.Time{}}
}

// Started returns since when the wait named key has held, starting its clock at now when it
// was not running.
func (c *Clocks) Started(uid types.UID, key string, now time.Time) time.Time {
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

// StartedAt returns when the clock of the wait named key started, and whether it runs,
// without starting it.
func (c *Clocks) StartedAt(uid types.UID, key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	since, ok := c.since[uid][key]
	return since, ok
}

// Stopped stops the clock of a wait that no longer holds.
func (c *Clocks) Stopped(uid types.UID, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since[uid], key)
}

// Forget drops every clock of a resource that is gone or serves as specified.
func (c *Clocks) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, uid)
}

// Lasted returns how long the wait named key has held when it holds, and stops its clock
// (returning 0) when it does not.
func (c *Clocks) Lasted(uid types.UID, key string, holds bool, now time.Time) time.Duration {
	if !holds {
		c.Stopped(uid, key)
		return 0
	}
	return now.Sub(c.Started(uid, key, now))
}
