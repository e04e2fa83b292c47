package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RedisClusterSpec is a sharded Redis Cluster: leaders own the slots, followers replicate them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.redisFollower) || !has(self.redisFollower.replicas) || self.redisFollower.replicas == 0 || (has(self.redisLeader) && has(self.redisLeader.replicas) ? self.redisLeader.replicas : self.clusterSize) < 1 || self.redisFollower.replicas % (has(self.redisLeader) && has(self.redisLeader.replicas) ? self.redisLeader.replicas : self.clusterSize) == 0",message="redisFollower.replicas must be zero or a multiple of the leader count (redisLeader.replicas, or clusterSize when unset)",fieldPath=".redisFollower.replicas"
type RedisClusterSpec struct {
	// Size is the number of leaders (shards), unless redisLeader.replicas says otherwise.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="clusterSize must be at least 1"
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// +optional
	HostPort *int `json:"hostPort,omitempty"`
	// +kubebuilder:default=6379
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 55535",message="port must be between 1 and 55535 (the cluster bus uses port + 10000)"
	// +optional
	Port *int `json:"port,omitempty"`
	// ClusterVersion is the major Redis version the pods are meant to run ("v7"), any value the
	// reference takes. It is informational: what the operator sends each node follows the
	// version the node itself reports (INFO server), whatever this says.
	// +kubebuilder:default=v7
	// +optional
	ClusterVersion *string `json:"clusterVersion,omitempty"`
	// +optional
	RedisConfig *RedisConfig `json:"redisConfig,omitempty"`
	// +optional
	RedisLeader RedisLeader `json:"redisLeader,omitempty"`
	// +optional
	RedisFollower RedisFollower `json:"redisFollower,omitempty"`
	// +optional
	RedisExporter *RedisExporter `json:"redisExporter,omitempty"`
	// +optional
	Storage *ClusterStorage `json:"storage,omitempty"`
	// PodManagementPolicy of both StatefulSets.
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	TLS *TLSConfig `json:"TLS,omitempty"`
	// +optional
	ACL *ACLConfig `json:"acl,omitempty"`
	// +optional
	InitContainer *InitContainer `json:"initContainer,omitempty"`
	// +optional
	Sidecars *[]Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// +optional
	PersistenceEnabled *bool `json:"persistenceEnabled,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// Restore fills the new resource's data from a RedisBackup of a RedisCluster with as many
	// shards as the cluster has leaders, before Redis first starts: each leader restores the
	// shard of its slots and serves them, the followers sync from their masters. It applies
	// only when the resource's StatefulSets are created: a running resource is never
	// overwritten.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// ClusterStorage adds the node-conf volume, which keeps nodes.conf (the node's identity)
// across pod restarts.
type ClusterStorage struct {
	Storage `json:",inline"`
	// +kubebuilder:default=false
	// +optional
	NodeConfVolume bool `json:"nodeConfVolume,omitempty"`
	// +optional
	NodeConfVolumeClaimTemplate corev1.PersistentVolumeClaim `json:"nodeConfVolumeClaimTemplate,omitempty"`
}

// RedisClusterRole holds what leaders and followers may set apart.
type RedisClusterRole struct {
	// +kubebuilder:validation:XValidation:rule="self >= 0",message="replicas must not be negative"
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	RedisConfig *RedisConfig `json:"redisConfig,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	PodDisruptionBudget *RedisPodDisruptionBudget `json:"pdb,omitempty"`
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	Tolerations *[]corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// RedisLeader configures the leader (master) StatefulSet.
type RedisLeader struct {
	RedisClusterRole `json:",inline"`
}

// RedisFollower configures the follower (replica) StatefulSet.
type RedisFollower struct {
	RedisClusterRole `json:",inline"`
}

// RedisClusterStatus is the observed state of a RedisCluster.
type RedisClusterStatus struct {
	// State: Initializing, Bootstrap, Ready or Failed.
	// +optional
	State string `json:"state,omitempty"`
	// Reason explains State in a sentence.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +kubebuilder:default=0
	// +optional
	ReadyLeaderReplicas int32 `json:"readyLeaderReplicas,omitempty"`
	// +kubebuilder:default=0
	// +optional
	ReadyFollowerReplicas int32 `json:"readyFollowerReplicas,omitempty"`
	CommonStatus          `json:",inline"`
}

// RedisCluster is a sharded Redis Cluster run by the operator.
//
// The name becomes the StatefulSets <name>-leader and <name>-follower, whose pods carry the
// label controller-revision-hash "<statefulset>-<up to 10 characters>", and Services up to
// "<name>-follower-additional": labels and Service names are limited to 63 characters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 43",message="metadata.name must be at most 43 characters: the Service <name>-follower-additional and the pods' controller-revision-hash label (<name>-follower-<hash>) must fit in 63"
// +kubebuilder:printcolumn:name="ClusterSize",type=integer,JSONPath=`.spec.clusterSize`
// +kubebuilder:printcolumn:name="ReadyLeaderReplicas",type=integer,JSONPath=`.status.readyLeaderReplicas`
// +kubebuilder:printcolumn:name="ReadyFollowerReplicas",type=integer,JSONPath=`.status.readyFollowerReplicas`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
type RedisCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RedisClusterSpec `json:"spec"`
	// +optional
	Status RedisClusterStatus `json:"status,omitempty"`
}

// The status accessors of the reconcilers' shell (see CommonStatus).
func (r *RedisCluster) GetCommonStatus() *CommonStatus { return &r.Status.CommonStatus }
func (r *RedisCluster) CompatibleState() (state, reason *string) {
	return &r.Status.State, &r.Status.Reason
}
func (r *RedisCluster) SetStatusFrom(other *RedisCluster) { r.Status = other.Status }

// RedisClusterList is a list of RedisCluster.
//
// +kubebuilder:object:root=true
type RedisClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisCluster `json:"items"`
}
