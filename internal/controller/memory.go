package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/status"
)

// Memory is what the reconcilers remember between reconciles and write nowhere: the clocks of
// bounded waits, the troubles warned of, the actions told, the TLS client configurations, the
// runs counted once, the backup the backup gauges show. The operator makes one (NewMemory) and
// gives it to its reconcilers, which share it as one process would; each operator a test
// starts makes its own, so that neither tests nor reconcilers share what they remember by
// accident.
type Memory struct {
	waits   *status.Clocks // since when each wait has lasted (bounded_wait.go)
	warned  *events.Warned // which lasting trouble each resource was warned of
	told    *events.Told   // when each action's event was last told
	tls     *tlsCache      // one client configuration per TLS Secret and content (tls.go)
	counted *onceMemory    // what the replaced operator's counters counted once (metrics.go)
	backups *backupMemory  // which backup of each target the backup gauges show (backup_metrics.go)
	// sightings are each cluster's last sighting of its shards' masters (rediscluster_handmade.go).
	sightings *sightingMemory
}

// NewMemory returns a Memory that remembers nothing yet.
func NewMemory() *Memory {
	return &Memory{
		waits:     status.NewClocks(),
		warned:    events.NewWarned(),
		told:      events.NewTold(),
		tls:       &tlsCache{entries: map[string]*tlsSettings{}},
		counted:   &onceMemory{seen: map[string]bool{}},
		backups:   newBackupMemory(),
		sightings: &sightingMemory{last: map[types.UID]lastSighting{}, since: time.Now()},
	}
}

// forget drops the warnings, told actions and wait clocks of a resource that is gone.
func (m *Memory) forget(uid types.UID) {
	m.warned.Forget(uid)
	m.told.Forget(uid)
	m.waits.Forget(uid)
	m.sightings.forget(uid)
}

// requireMemory refuses to set up a reconciler given no Memory: one left without would
// remember nothing, and one made behind the caller's back would not be shared with the others.
func requireMemory(m *Memory, reconciler string) error {
	if m == nil {
		return fmt.Errorf("%s has no Memory: give it the one NewMemory made for the operator", reconciler)
	}
	return nil
}

// readyMemory is the status.ReadyMemory of the warnings told: a Ready told is remembered as a
// trouble of its own topic, so that it is told again only once the resource was not Ready.
type readyMemory struct{ warned *events.Warned }

var _ status.ReadyMemory = readyMemory{}

func (m readyMemory) FirstReady(uid types.UID) bool {
	return m.warned == nil || m.warned.FirstWarning(uid, "ready", "ready")
}

func (m readyMemory) NotReady(uid types.UID) {
	if m.warned != nil {
		m.warned.Cleared(uid, "ready")
	}
}
