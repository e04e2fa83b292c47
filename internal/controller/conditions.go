package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
func (c conditionSet) ready(message string) {
	c.set(v1beta2.ConditionReady, metav1.ConditionTrue, ReasonReady, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonReady, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, ReasonReady, message)
}

// progressing: the operator is moving towards the spec and expects to get there.
func (c conditionSet) progressing(reason, message string) {
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionTrue, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, reason, message)
}

// degraded: something is wrong that needs a change or a pod to come back.
func (c conditionSet) degraded(reason, message string) {
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionTrue, reason, message)
}

// idle: nothing is wrong and nothing is under way, but the resource does not serve yet because
// the spec leaves it nothing to do (sentinels with no master to monitor).
func (c conditionSet) idle(reason, message string) {
	c.set(v1beta2.ConditionReady, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, reason, message)
	c.set(v1beta2.ConditionDegraded, metav1.ConditionFalse, reason, message)
}

// skipped: the user asked the operator to keep its hands off; Ready is left as it was.
func (c conditionSet) skipped(message string) {
	c.set(v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonSkipReconcile, message)
}
