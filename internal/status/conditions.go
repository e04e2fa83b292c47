package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// Condition reasons, shared by every kind.
const (
	ReasonReconciling      = "Reconciling"
	ReasonPodsNotReady     = "PodsNotReady"
	ReasonBootstrapping    = "Bootstrapping"
	ReasonConverging       = "Converging"
	ReasonReady            = "Ready"
	ReasonSkipReconcile    = "SkipReconcile"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonNotOwned         = "NotOwned"
	ReasonImmutable        = "ImmutableChange"
	ReasonSecretMissing    = "PasswordSecretMissing"
	ReasonRedisUnreachable = "RedisUnreachable"
	ReasonTopologyProblem  = "TopologyProblem"
	ReasonMasterUnknown    = "MasterUnknown"
	ReasonRollingUpdate    = "RollingUpdate"
	ReasonResharding       = "Resharding"
	ReasonError            = "Error"
	ReasonApplyFailed      = "ApplyFailed"
)

// Reasons of a restore (spec.restore), in the Restored condition and, when the resource waits
// or is refused, in the three standard ones.
const (
	// ReasonRestoring: the pod is being created with the restore's init container.
	ReasonRestoring = "Restoring"
	// ReasonRestored: the pod is Ready on the restored data.
	ReasonRestored = "Restored"
	// ReasonRestoreBackupNotFound: no RedisBackup of that name yet; nothing is created meanwhile.
	ReasonRestoreBackupNotFound = "RestoreBackupNotFound"
	// ReasonRestoreBackupNotReady: the RedisBackup is Pending or Running.
	ReasonRestoreBackupNotReady = "RestoreBackupNotReady"
	// ReasonRestoreBackupFailed: the RedisBackup failed; there is nothing to restore.
	ReasonRestoreBackupFailed = "RestoreBackupFailed"
	// ReasonRestoreMismatch: the backup is not of this kind of resource, or not of one shard.
	ReasonRestoreMismatch = "RestoreMismatch"
	// ReasonRestoreUnsupported: the backup cannot be restored yet (a PersistentVolumeClaim's),
	// or the operator does not know the image that restores.
	ReasonRestoreUnsupported = "RestoreUnsupported"
	// ReasonRestoreRefused: the resource runs already and was not created from the backup: a
	// running resource is never overwritten.
	ReasonRestoreRefused = "RestoreRefused"
)

// ReadyMemory remembers, across reconciles, which resources said they were Ready.
type ReadyMemory interface {
	// FirstReady reports whether the resource has not said it was Ready since it last was
	// not, and notes that it now has.
	FirstReady(uid types.UID) bool
	// NotReady forgets that the resource said it was Ready.
	NotReady(uid types.UID)
}

// Conditions writes the three standard conditions of a status, each stamped with the
// generation it describes.
type Conditions struct {
	list       *[]metav1.Condition
	generation int64
	// uid is the resource's, and memory what the operator remembers of it: a resource that
	// stops being Ready may say so again when it is Ready again (FirstReady). Empty in tests
	// that need no such memory.
	uid    types.UID
	memory ReadyMemory
}

// NewConditions writes into list, stamping each condition with generation.
func NewConditions(list *[]metav1.Condition, generation int64) Conditions {
	return Conditions{list: list, generation: generation}
}

// RememberingReady returns c remembering in memory whether the resource uid said it was Ready.
func (c Conditions) RememberingReady(uid types.UID, memory ReadyMemory) Conditions {
	c.uid, c.memory = uid, memory
	return c
}

// List is the conditions as they stand, for a condition type of a feature's own.
func (c Conditions) List() []metav1.Condition { return *c.list }

// Remove drops the condition of type typ.
func (c Conditions) Remove(typ string) { meta.RemoveStatusCondition(c.list, typ) }

// FirstReady reports whether the resource, which this reconcile finds Ready, has not said so
// since it last was not: the status read at the start of a reconcile may be an older one from
// the cache, which would tell the same Ready twice.
func (c Conditions) FirstReady() bool {
	return c.uid == "" || c.memory == nil || c.memory.FirstReady(c.uid)
}

// notReadyAnyMore forgets that the resource said it was Ready.
func (c Conditions) notReadyAnyMore() {
	if c.uid != "" && c.memory != nil {
		c.memory.NotReady(c.uid)
	}
}

// Set writes one condition, stamped with the generation.
func (c Conditions) Set(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(c.list, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: c.generation,
	})
}

// setThree writes Ready, Progressing and Degraded with one reason and message, which always
// go together.
func (c Conditions) setThree(ready, progressing, degraded metav1.ConditionStatus, reason, message string) {
	c.Set(v1beta2.ConditionReady, ready, reason, message)
	c.Set(v1beta2.ConditionProgressing, progressing, reason, message)
	c.Set(v1beta2.ConditionDegraded, degraded, reason, message)
}

// Ready: serving as specified.
func (c Conditions) Ready(message string) { c.ReadyAs(ReasonReady, message) }

// ReadyAs: serving as specified, with a reason that says how it differs from the design (a
// topology a user made by hand, which the operator keeps).
func (c Conditions) ReadyAs(reason, message string) {
	c.setThree(metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, reason, message)
}

// Progressing: the operator is moving towards the spec and expects to get there.
func (c Conditions) Progressing(reason, message string) {
	c.notReadyAnyMore()
	c.setThree(metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, reason, message)
}

// Degraded: something is wrong that needs a change or a pod to come back.
func (c Conditions) Degraded(reason, message string) {
	c.notReadyAnyMore()
	c.setThree(metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, reason, message)
}

// Idle: nothing is wrong and nothing is under way, but the resource does not serve yet because
// the spec leaves it nothing to do (sentinels with no master to monitor).
func (c Conditions) Idle(reason, message string) {
	c.notReadyAnyMore()
	c.setThree(metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, reason, message)
}

// HasServed tells whether the resource was serving before: Ready, or Degraded by an outage
// since (which stays an outage until it serves again), as opposed to one on its way.
func (c Conditions) HasServed() bool {
	if meta.IsStatusConditionTrue(*c.list, v1beta2.ConditionReady) {
		return true
	}
	degraded := meta.FindStatusCondition(*c.list, v1beta2.ConditionDegraded)
	return degraded != nil && degraded.Status == metav1.ConditionTrue && !needsAHuman[degraded.Reason]
}

// Skipped: the user asked the operator to keep its hands off; Ready is left as it was.
func (c Conditions) Skipped(message string) {
	c.Set(v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonSkipReconcile, message)
}

// SettleObservedGeneration moves status.observedGeneration, and the conditions', to the
// resource's generation only when a reconcile of that generation ran every phase without
// error, so that tools waiting on it never see a spec claimed as acted on that was not. The
// conditions written by a failed reconcile keep the generation last reconciled.
func SettleObservedGeneration(common *v1beta2.CommonStatus, generation int64, succeeded bool) {
	if succeeded {
		common.ObservedGeneration = generation
		return
	}
	for i := range common.Conditions {
		if common.Conditions[i].ObservedGeneration > common.ObservedGeneration {
			common.Conditions[i].ObservedGeneration = common.ObservedGeneration
		}
	}
}
