package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RedisSentinelSpec is a group of sentinels monitoring a RedisReplication.
type RedisSentinelSpec struct {
	// Size is the number of sentinel pods.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	RedisExporter *RedisExporter `json:"redisExporter,omitempty"`
	// +optional
	RedisSentinelConfig *RedisSentinelConfig `json:"redisSentinelConfig,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	Tolerations *[]corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	TLS *TLSConfig `json:"TLS,omitempty"`
	// +optional
	PodDisruptionBudget *RedisPodDisruptionBudget `json:"pdb,omitempty"`
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	InitContainer *InitContainer `json:"initContainer,omitempty"`
	// +optional
	Sidecars *[]Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// +optional
	VolumeMount *AdditionalVolume `json:"volumeMount,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	HostPort *int `json:"hostPort,omitempty"`
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
}

// RedisSentinelConfig names the RedisReplication to monitor and how.
type RedisSentinelConfig struct {
	SentinelConfig `json:",inline"`
	// RedisReplicationName is the RedisReplication (same namespace) whose master is monitored.
	// +required
	RedisReplicationName string `json:"redisReplicationName"`
	// RedisReplicationPassword is where the monitored Redis password comes from.
	// +optional
	RedisReplicationPassword *corev1.EnvVarSource `json:"redisReplicationPassword,omitempty"`
	// +kubebuilder:default=myMaster
	// +optional
	MasterGroupName string `json:"masterGroupName,omitempty"`
	// +kubebuilder:default="6379"
	// +optional
	RedisPort string `json:"redisPort,omitempty"`
}

// RedisSentinelStatus is the observed state of a RedisSentinel.
type RedisSentinelStatus struct {
	// State is a one-word summary: Initializing, Ready or Failed.
	// +optional
	State string `json:"state,omitempty"`
	// Reason explains State in a sentence.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ReadyReplicas counts ready sentinel pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	CommonStatus  `json:",inline"`
}

// RedisSentinel is a group of sentinels run by the operator.
//
// The name becomes the StatefulSet <name>-sentinel, whose pods carry the label
// controller-revision-hash "<name>-sentinel-<up to 10 characters>", and Services up to
// "<name>-sentinel-additional": labels and Service names are limited to 63 characters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 43",message="metadata.name must be at most 43 characters: the Service <name>-sentinel-additional and the pods' controller-revision-hash label (<name>-sentinel-<hash>) must fit in 63"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RedisSentinel struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RedisSentinelSpec `json:"spec"`
	// +optional
	Status RedisSentinelStatus `json:"status,omitempty"`
}

// The status accessors of the reconcilers' shell (see CommonStatus).
func (r *RedisSentinel) GetCommonStatus() *CommonStatus { return &r.Status.CommonStatus }
func (r *RedisSentinel) CompatibleState() (state, reason *string) {
	return &r.Status.State, &r.Status.Reason
}
func (r *RedisSentinel) SetStatusFrom(other *RedisSentinel) { r.Status = other.Status }

// RedisSentinelList is a list of RedisSentinel.
//
// +kubebuilder:object:root=true
type RedisSentinelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisSentinel `json:"items"`
}
