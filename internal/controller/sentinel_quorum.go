package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/status"
)

// A sentinel quorum above the number of sentinels is admitted (the schema defaults it to "2"
// whatever the size, as the reference's does, so every object it stored carries it) and the
// sentinels run with the largest quorum they can reach, their number (builder.SentinelQuorum).
//
// That is said in a condition of its own, QuorumAdjusted, with a Warning event when it starts
// or changes, rather than in Ready or Degraded: nothing is broken (the sentinels fail a master
// over, which the quorum asked for would never let them do), so Degraded would be an outage
// alert that is not one, and Ready's message is rewritten by every health check; but the spec
// asks for something the operator does not do, which a user must be able to see and select
// on (kubectl get -o jsonpath, an alert on the condition) for as long as it lasts.
const (
	ConditionQuorumAdjusted = "QuorumAdjusted"
	ReasonQuorumAboveSize   = "QuorumAboveSentinels"
)

// reportQuorum keeps the QuorumAdjusted condition of a resource whose sentinels run with q.
// monitored is false when the sentinels monitor no master (no quorum applies).
func reportQuorum(rec recorder.EventRecorder, warned *events.Warned, owner client.Object, q builder.SentinelQuorum, monitored bool, conditions status.Conditions) {
	if !monitored || !q.Lowered() {
		conditions.Remove(ConditionQuorumAdjusted)
		warned.Cleared(owner.GetUID(), "quorum")
		return
	}
	message := fmt.Sprintf("quorum %d is more than the %d sentinels could ever reach: they run with quorum %d", q.Requested, q.Sentinels, q.Configured)
	previous := meta.FindStatusCondition(conditions.List(), ConditionQuorumAdjusted)
	if warned.FirstWarning(owner.GetUID(), "quorum", message) && (previous == nil || previous.Message != message) {
		rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonQuorumAboveSize, "Configure", "%s", message)
	}
	conditions.Set(ConditionQuorumAdjusted, metav1.ConditionTrue, ReasonQuorumAboveSize, message)
}
