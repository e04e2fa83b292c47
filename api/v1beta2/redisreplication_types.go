package v1beta2

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RedisReplicationSpec is one master with replicas, optionally watched by embedded sentinels.
type RedisReplicationSpec struct {
	// Size is the number of Redis pods: one master, the rest replicas.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="clusterSize must be at least 1"
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	RedisExporter *RedisExporter `json:"redisExporter,omitempty"`
	// +optional
	RedisConfig *RedisConfig `json:"redisConfig,omitempty"`
	// +optional
	Storage *Storage `json:"storage,omitempty"`
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
	ACL *ACLConfig `json:"acl,omitempty"`
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
	// Restore fills the new resource's data from a RedisBackup of a RedisReplication before
	// Redis first starts: pod 0 restores it and becomes the first master, the other pods sync
	// from it. It applies only when the resource's StatefulSet is created: a running resource
	// is never overwritten.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	HostPort *int `json:"hostPort,omitempty"`
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// Sentinel, when set, runs sentinels beside the replication to fail the master over.
	// +optional
	Sentinel *Sentinel `json:"sentinel,omitempty"`
}

// SentinelConfig is the monitoring configuration written into sentinel.conf.
type SentinelConfig struct {
	// +optional
	AdditionalSentinelConfig *string `json:"additionalSentinelConfig,omitempty"`
	// Quorum is the number of sentinels that must agree that the master is down. A quorum
	// larger than the number of sentinels is accepted (the default, as the reference's, is 2
	// whatever the size, and every object it stored carries it): the sentinels then run with
	// the largest quorum they can reach, their number, and the resource says so (condition
	// QuorumAdjusted, a Warning event).
	// +kubebuilder:default="2"
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-9][0-9]*$')",message="quorum must be a positive whole number"
	// +optional
	Quorum string `json:"quorum,omitempty"`
	// +kubebuilder:default="1"
	// +optional
	ParallelSyncs string `json:"parallelSyncs,omitempty"`
	// +kubebuilder:default="10000"
	// +optional
	FailoverTimeout string `json:"failoverTimeout,omitempty"`
	// +kubebuilder:default="5000"
	// +optional
	DownAfterMilliseconds string `json:"downAfterMilliseconds,omitempty"`
	// +kubebuilder:default="no"
	// +optional
	ResolveHostnames string `json:"resolveHostnames,omitempty"`
	// +kubebuilder:default="no"
	// +optional
	AnnounceHostnames string `json:"announceHostnames,omitempty"`
}

// Sentinel is the embedded sentinel of a RedisReplication.
type Sentinel struct {
	// Size is the number of sentinel pods.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="sentinel size must be at least 1"
	// +required
	Size int32 `json:"size"`
	// +required
	Image string `json:"image"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	ImagePullSecrets *[]corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ExistingPasswordSecret *ExistingPasswordSecret `json:"redisSecret,omitempty"`
	// +optional
	UpdateStrategy appsv1.StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// +optional
	Service *ServiceConfig `json:"service,omitempty"`
	// +optional
	// +listType=atomic
	IgnoreAnnotations []string `json:"ignoreAnnotations,omitempty"`
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
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
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	SentinelConfig                `json:",inline"`
}

// ConnectionInfo tells clients where the master is.
type ConnectionInfo struct {
	// +optional
	Host string `json:"host,omitempty"`
	// +optional
	Port int `json:"port,omitempty"`
	// +optional
	MasterName string `json:"masterName,omitempty"`
}

// RedisReplicationStatus is the observed state of a RedisReplication.
type RedisReplicationStatus struct {
	// MasterNode is the name of the pod that is the master now.
	// +optional
	MasterNode string `json:"masterNode,omitempty"`
	// +optional
	ConnectionInfo *ConnectionInfo `json:"connectionInfo,omitempty"`
	// State is a one-word summary: Initializing, Ready or Failed.
	// +optional
	State string `json:"state,omitempty"`
	// Reason explains State in a sentence.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ReadyReplicas counts ready Redis pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	CommonStatus  `json:",inline"`
}

// RedisReplication is a Redis master with replicas run by the operator.
//
// The name becomes the StatefulSet (and, with spec.sentinel, <name>-sentinel), whose pods carry
// the label controller-revision-hash "<statefulset>-<up to 10 characters>", and Services up to
// "<name>-additional" (<name>-sentinel-additional): labels and Service names are limited to 63.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: the pods' controller-revision-hash label (<name>-<hash>) and the Service <name>-additional must fit in 63"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.sentinel) || size(self.metadata.name) <= 43",message="with spec.sentinel, metadata.name must be at most 43 characters: the Service <name>-sentinel-additional and the sentinel pods' controller-revision-hash label must fit in 63"
// +kubebuilder:printcolumn:name="Master",type=string,JSONPath=`.status.masterNode`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
type RedisReplication struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RedisReplicationSpec `json:"spec"`
	// +optional
	Status RedisReplicationStatus `json:"status,omitempty"`
}

// The status accessors of the reconcilers' shell (see CommonStatus).
func (r *RedisReplication) GetCommonStatus() *CommonStatus { return &r.Status.CommonStatus }
func (r *RedisReplication) CompatibleState() (state, reason *string) {
	return &r.Status.State, &r.Status.Reason
}
func (r *RedisReplication) SetStatusFrom(other *RedisReplication) { r.Status = other.Status }

// RedisReplicationList is a list of RedisReplication.
//
// +kubebuilder:object:root=true
type RedisReplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisReplication `json:"items"`
}
