package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// Values of redis_operator_backups_total's result label.
const (
	backupResultCompleted = "completed"
	backupResultFailed    = "failed"
)

// backupTargetLabels are the labels of a backup's series: its target's.
func backupTargetLabels(b *v1alpha1.RedisBackup) prometheus.Labels {
	return prometheus.Labels{"namespace": b.Namespace, "target_kind": b.Spec.Target.Kind, "target": b.Spec.Target.Name}
}

// backupMemory remembers, per target, when the backup whose status the gauges show completed:
// the backups of a target are reconciled in no particular order (all of them when the operator
// starts), and an older one must not replace what a newer one set.
type backupMemory struct {
	mu     sync.Mutex
	newest map[string]time.Time // by namespace/kind/name of the target
}

func newBackupMemory() *backupMemory { return &backupMemory{newest: map[string]time.Time{}} }

func backupTargetKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }

// showIfNewer runs set, and records t, when a backup of the target that completed at t is at
// least as new as the one recorded (setting the same values again is harmless). It holds the
// lock while set runs, so that two backups of a target ending at once leave the newer shown.
func (m *backupMemory) showIfNewer(key string, t time.Time, set func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.newest[key]; ok && t.Before(old) {
		return
	}
	m.newest[key] = t
	set()
}

// shown reports whether the gauges already show a backup of the target at least as new as t.
func (m *backupMemory) shown(key string, t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.newest[key]
	return ok && !t.After(old)
}

// forget drops what is recorded of the target and runs drop (which deletes its series) under
// the same lock, so that a backup ending meanwhile does not bring back half of them.
func (m *backupMemory) forget(key string, drop func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.newest, key)
	drop()
}

// observeBackupCompleted sets the target's gauges from a Completed backup's status, unless a
// newer backup of the target set them already.
func observeBackupCompleted(m *backupMemory, b *v1alpha1.RedisBackup) {
	if b.Status.Phase != v1alpha1.BackupCompleted || b.Status.CompletedAt == nil {
		return
	}
	l := backupTargetLabels(b)
	observeBackupCounters(l)
	// In whole seconds, as the stored status has them: the values the reconcile that ended the
	// backup sets are the ones an operator started later reads back.
	done := b.Status.CompletedAt.Truncate(time.Second)
	m.showIfNewer(backupTargetKey(b.Namespace, b.Spec.Target.Kind, b.Spec.Target.Name), done, func() {
		backupLastSuccess.With(l).Set(float64(done.Unix()))
		backupBytes.With(l).Set(float64(b.Status.TotalBytes))
		if b.Status.StartedAt != nil {
			backupDuration.With(l).Set(done.Sub(b.Status.StartedAt.Truncate(time.Second)).Seconds())
		}
	})
}

// observeBackupCounters makes the target's counters exist at 0, so that increase() sees their
// first backup.
func observeBackupCounters(l prometheus.Labels) {
	for _, result := range []string{backupResultCompleted, backupResultFailed} {
		backupsEnded.With(withResult(l, result))
	}
}

// countBackupEnded counts a backup this operator just ended (its status written Completed or
// Failed): only there, so that one read again later, by this operator or the next, is not
// counted twice.
func countBackupEnded(b *v1alpha1.RedisBackup) {
	l := backupTargetLabels(b)
	observeBackupCounters(l)
	result := backupResultFailed
	if b.Status.Phase == v1alpha1.BackupCompleted {
		result = backupResultCompleted
	}
	backupsEnded.With(withResult(l, result)).Inc()
}

// forgetBackupTarget drops the backup series of a target that is gone, and what m remembers of it.
func forgetBackupTarget(m *backupMemory, kind, namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "target_kind": kind, "target": name}
	m.forget(backupTargetKey(namespace, kind, name), func() {
		for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
			backupLastSuccess, backupDuration, backupBytes, backupsEnded,
		} {
			v.DeletePartialMatch(l)
		}
	})
}

// scheduleSeriesLabels are the labels of a schedule's series.
func scheduleSeriesLabels(rbs *v1alpha1.RedisBackupSchedule) prometheus.Labels {
	t := rbs.Spec.BackupTemplate.Target
	return prometheus.Labels{"namespace": rbs.Namespace, "schedule": rbs.Name, "target_kind": t.Kind, "target": t.Name}
}

// forgetSchedule drops the series of a schedule, whichever target they name.
func forgetSchedule(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "schedule": name}
	scheduleInterval.DeletePartialMatch(l)
	scheduleCreated.DeletePartialMatch(l)
}

// withResult is a target's labels with the result of a backup that ended.
func withResult(l prometheus.Labels, result string) prometheus.Labels {
	out := make(prometheus.Labels, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	out["result"] = result
	return out
}
