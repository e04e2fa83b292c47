package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// ReasonOutage: part of an established resource does not serve as it should (a pod that does
// not answer, slots nobody serves, a master without a replica that answers); Redis or the
// operator are recovering it, or it waits for the pods to come back.
const ReasonOutage = "Outage"

// needsAHuman lists the condition reasons of a Degraded resource that will not clear by
// themselves: only these make the compatible state Failed. An outage, a pod restarting, a
// failover under way are Degraded without being Failed.
var needsAHuman = map[string]bool{
	ReasonInvalidSpec:          true,
	ReasonNotOwned:             true,
	ReasonSecretMissing:        true,
	ReasonApplyFailed:          true,
	ReasonTopologyProblem:      true,
	ReasonStorageNotExpandable: true,
	ReasonTLSSecretInvalid:     true,
	ReasonError:                true,
	// The pod reasons of reportPodTrouble: an image that cannot be pulled, a container that
	// cannot be created or keeps crashing, a pod no node can take.
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "CrashLoopBackOff": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "Unschedulable": true,
}

// stateFacts is what the compatible status.state and status.reason are derived from: the
// conditions a reconcile wrote and, for a cluster on its way, which part it is waiting for.
type stateFacts struct {
	kind       string
	conditions []metav1.Condition
	// clusterStage is the reference reason of a RedisCluster on its way to Ready:
	// ClusterReasonInitializingLeaders while leader pods start, ClusterReasonInitializingFollowers
	// while follower pods start, "" (bootstrapping) otherwise.
	clusterStage string
	// state and reason are what the status says now; they stay while nothing is known.
	state, reason string
}

// compatibleState is the one place the compatible state and reason come from, so that they
// can never disagree with the conditions: Ready exactly when the Ready condition is True;
// Failed exactly when Degraded is True for a reason that needs a human; otherwise the
// reference's strings for a resource on its way (a RedisCluster: Initializing while its leader
// or follower pods start, Bootstrap while nodes join, slots move, replicas attach or an outage
// is recovered; the other kinds: Initializing), with the condition's message as the reason.
func compatibleState(f stateFacts) (state, reason string) {
	ready := meta.FindStatusCondition(f.conditions, v1beta2.ConditionReady)
	if ready == nil {
		return f.state, f.reason
	}
	if ready.Status == metav1.ConditionTrue {
		return "Ready", readyReason(f.kind)
	}
	degraded := meta.FindStatusCondition(f.conditions, v1beta2.ConditionDegraded)
	if degraded != nil && degraded.Status == metav1.ConditionTrue && needsAHuman[degraded.Reason] {
		return "Failed", degraded.Message
	}
	switch {
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		if f.kind == "RedisCluster" {
			return ClusterStateBootstrap, degraded.Message
		}
		return "Initializing", degraded.Message
	case f.kind != "RedisCluster":
		return "Initializing", ready.Message
	case f.clusterStage == ClusterReasonInitializingLeaders || f.clusterStage == ClusterReasonInitializingFollowers:
		return ClusterStateInitializing, f.clusterStage
	}
	return ClusterStateBootstrap, ClusterReasonBootstrapping
}

// readyReason is the reference's reason of a Ready resource of each kind.
func readyReason(kind string) string {
	switch kind {
	case "RedisCluster":
		return ClusterReasonReady
	case "RedisReplication":
		return "RedisReplication is ready"
	case "RedisSentinel":
		return "RedisSentinel is ready"
	}
	return "Redis is ready"
}
