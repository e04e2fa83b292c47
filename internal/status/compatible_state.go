package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// ReasonOutage: part of an established resource does not serve as it should (a pod that does
// not answer, slots nobody serves, a master without a replica that answers); Redis or the
// operator are recovering it, or it waits for the pods to come back.
const ReasonOutage = "Outage"

// Reasons of features that need a human, here because they make the compatible state Failed.
const (
	// ReasonStorageNotExpandable: the storage class cannot grow the volumes the spec grew.
	ReasonStorageNotExpandable = "StorageNotExpandable"
	// ReasonTLSSecretInvalid: the TLS Secret is missing, lacks a key or holds no usable CA,
	// certificate or key.
	ReasonTLSSecretInvalid = "TLSSecretInvalid"
)

// Compatible status strings of a RedisCluster.
const (
	ClusterStateInitializing = "Initializing"
	ClusterStateBootstrap    = "Bootstrap"
	ClusterStateReady        = "Ready"
	ClusterStateFailed       = "Failed"

	ClusterReasonInitializingLeaders   = "RedisCluster is initializing leaders"
	ClusterReasonInitializingFollowers = "RedisCluster is initializing followers"
	ClusterReasonBootstrapping         = "RedisCluster is bootstrapping"
	ClusterReasonReady                 = "RedisCluster is ready"
)

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
	ReasonRestoreBackupFailed:  true,
	ReasonRestoreMismatch:      true,
	ReasonRestoreUnsupported:   true,
	ReasonRestoreRefused:       true,
	// The pod reasons of reportPodTrouble: an image that cannot be pulled, a container that
	// cannot be created or keeps crashing, a pod no node can take.
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "CrashLoopBackOff": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "Unschedulable": true,
}

// StateFacts is what the compatible status.state and status.reason are derived from: the
// conditions a reconcile wrote and, for a cluster on its way, which part it is waiting for.
type StateFacts struct {
	Kind       string
	Conditions []metav1.Condition
	// ClusterStage is the reference reason of a RedisCluster on its way to Ready:
	// ClusterReasonInitializingLeaders while leader pods start, ClusterReasonInitializingFollowers
	// while follower pods start, "" (bootstrapping) otherwise.
	ClusterStage string
	// State and Reason are what the status says now; they stay while nothing is known.
	State, Reason string
}

// CompatibleState is the one place the compatible state and reason come from, so that they
// can never disagree with the conditions: Ready exactly when the Ready condition is True;
// Failed exactly when Degraded is True for a reason that needs a human; otherwise the
// reference's strings for a resource on its way (a RedisCluster: Initializing while its leader
// or follower pods start, Bootstrap while nodes join, slots move, replicas attach or an outage
// is recovered; the other kinds: Initializing), with the condition's message as the reason.
func CompatibleState(f StateFacts) (state, reason string) {
	ready := meta.FindStatusCondition(f.Conditions, v1beta2.ConditionReady)
	if ready == nil {
		return f.State, f.Reason
	}
	if ready.Status == metav1.ConditionTrue {
		return "Ready", readyReason(f.Kind)
	}
	degraded := meta.FindStatusCondition(f.Conditions, v1beta2.ConditionDegraded)
	if degraded != nil && degraded.Status == metav1.ConditionTrue && needsAHuman[degraded.Reason] {
		return "Failed", degraded.Message
	}
	switch {
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		if f.Kind == "RedisCluster" {
			return ClusterStateBootstrap, degraded.Message
		}
		return "Initializing", degraded.Message
	case f.Kind != "RedisCluster":
		return "Initializing", ready.Message
	case f.ClusterStage == ClusterReasonInitializingLeaders || f.ClusterStage == ClusterReasonInitializingFollowers:
		return ClusterStateInitializing, f.ClusterStage
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
