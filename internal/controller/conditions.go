package controller

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

// conditionSet writes the three standard conditions of a status, each stamped with the
// generation it describes.
type conditionSet struct {
	conditions *[]metav1.Condition
	generation int64
	// uid is the resource's, and warned what the operator remembers of it: a resource that
	// stops being Ready may say so again when it is Ready again (firstReady). Empty in tests
	// that need no such memory.
	uid    types.UID
	warned *troubleMemory
}

// firstReady reports whether the resource, which this reconcile finds Ready, has not said so
// since it last was not: the status read at the start of a reconcile may be an older one from
// the cache, which would tell the same Ready twice.
func (c conditionSet) firstReady() bool {
	return c.uid == "" || c.warned == nil || c.warned.firstWarning(c.uid, "ready", "ready")
}

// notReadyAnyMore forgets that the resource said it was Ready.
func (c conditionSet) notReadyAnyMore() {
	if c.uid != "" && c.warned != nil {
		c.warned.cleared(c.uid, "ready")
	}
}

func (c conditionSet) set(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(c.conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: c.generation,
	})
}

// ready: serving as specified.
func (c conditionSet) ready(message string) { c.readyAs(ReasonReady, message) }

// readyAs: serving as specified, with a reason that says how it differs from the design (a
// topology a user made by hand, which the operator keeps).
func (c conditionSet) readyAs(reason, message string) {
	c.set(v1beta2.ConditionReady, metav1.ConditionTrue, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, reason, message)
}

// progressing: the operator is moving towards the spec and expects to get there.
func (c conditionSet) progressing(reason, message string) {
	c.notReadyAnyMore()
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionTrue, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, reason, message)
}

// degraded: something is wrong that needs a change or a pod to come back.
func (c conditionSet) degraded(reason, message string) {
	c.notReadyAnyMore()
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionTrue, reason, message)
}

// idle: nothing is wrong and nothing is under way, but the resource does not serve yet because
// the spec leaves it nothing to do (sentinels with no master to monitor).
func (c conditionSet) idle(reason, message string) {
	c.notReadyAnyMore()
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, reason, message)
}

// hasServed tells whether the resource was serving before: Ready, or Degraded by an outage
// since (which stays an outage until it serves again), as opposed to one on its way.
func (c conditionSet) hasServed() bool {
	if meta.IsStatusConditionTrue(*c.conditions, v1beta2.ConditionReady) {
		return true
	}
	degraded := meta.FindStatusCondition(*c.conditions, v1beta2.ConditionDegraded)
	return degraded != nil && degraded.Status == metav1.ConditionTrue && !needsAHuman[degraded.Reason]
}

// skipped: the user asked the operator to keep its hands off; Ready is left as it was.
func (c conditionSet) skipped(message string) {
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonSkipReconcile, message)
}
