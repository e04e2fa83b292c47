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
	Size             *int32           `json:"clusterSize"`
	KubernetesConfig KubernetesConfig `json:"kubernetesConfig"`
	HostNetwork      bool             `json:"hostNetwork,omitempty"`
	HostPort         *int             `json:"hostPort,omitempty"`
	// +kubebuilder:default=6379
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 55535",message="port must be between 1 and 55535 (the cluster bus uses port + 10000)"
	Port *int `json:"port,omitempty"`
	// ClusterVersion is the major Redis version the pods are meant to run ("v7"), any value the
	// reference takes. It is informational: what the operator sends each node follows the
	// version the node itself reports (INFO server), whatever this says.
	// +kubebuilder:default=v7
	ClusterVersion *string         `json:"clusterVersion,omitempty"`
	RedisConfig    *RedisConfig    `json:"redisConfig,omitempty"`
	RedisLeader    RedisLeader     `json:"redisLeader,omitempty"`
	RedisFollower  RedisFollower   `json:"redisFollower,omitempty"`
	RedisExporter  *RedisExporter  `json:"redisExporter,omitempty"`
	Storage        *ClusterStorage `json:"storage,omitempty"`
	// PodManagementPolicy of both StatefulSets.
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	PodManagementPolicy string                       `json:"podManagementPolicy,omitempty"`
	PodSecurityContext  *corev1.PodSecurityContext   `json:"podSecurityContext,omitempty"`
	PriorityClassName   string                       `json:"priorityClassName,omitempty"`
	Resources           *corev1.ResourceRequirements `json:"resources,omitempty"`
	TLS                 *TLSConfig                   `json:"TLS,omitempty"`
	ACL                 *ACLConfig                   `json:"acl,omitempty"`
	InitContainer       *InitContainer               `json:"initContainer,omitempty"`
	Sidecars            *[]Sidecar                   `json:"sidecars,omitempty"`
	ServiceAccountName  *string                      `json:"serviceAccountName,omitempty"`
	PersistenceEnabled  *bool                        `json:"persistenceEnabled,omitempty"`
	EnvVars             *[]corev1.EnvVar             `json:"env,omitempty"`
	// Restore fills the new resource's data from a RedisBackup before Redis first starts. Not
	// supported for this kind yet: refused (RestoreUnsupported), and nothing is created.
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// ClusterStorage adds the node-conf volume, which keeps nodes.conf (the node's identity)
// across pod restarts.
type ClusterStorage struct {
	Storage `json:",inline"`
	// +kubebuilder:default=false
	NodeConfVolume              bool                         `json:"nodeConfVolume,omitempty"`
	NodeConfVolumeClaimTemplate corev1.PersistentVolumeClaim `json:"nodeConfVolumeClaimTemplate,omitempty"`
}

// RedisClusterRole holds what leaders and followers may set apart.
type RedisClusterRole struct {
	// +kubebuilder:validation:XValidation:rule="self >= 0",message="replicas must not be negative"
	Replicas                      *int32                            `json:"replicas,omitempty"`
	RedisConfig                   *RedisConfig                      `json:"redisConfig,omitempty"`
	Affinity                      *corev1.Affinity                  `json:"affinity,omitempty"`
	PodDisruptionBudget           *RedisPodDisruptionBudget         `json:"pdb,omitempty"`
	ReadinessProbe                *corev1.Probe                     `json:"readinessProbe,omitempty"`
	LivenessProbe                 *corev1.Probe                     `json:"livenessProbe,omitempty"`
	Tolerations                   *[]corev1.Toleration              `json:"tolerations,omitempty"`
	NodeSelector                  map[string]string                 `json:"nodeSelector,omitempty"`
	TopologySpreadConstraints     []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	TerminationGracePeriodSeconds *int64                            `json:"terminationGracePeriodSeconds,omitempty"`
	SecurityContext               *corev1.SecurityContext           `json:"securityContext,omitempty"`
	Resources                     *corev1.ResourceRequirements      `json:"resources,omitempty"`
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
	State string `json:"state,omitempty"`
	// Reason explains State in a sentence.
	Reason string `json:"reason,omitempty"`
	// +kubebuilder:default=0
	ReadyLeaderReplicas int32 `json:"readyLeaderReplicas,omitempty"`
	// +kubebuilder:default=0
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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RedisClusterSpec   `json:"spec"`
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
