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
	Size                          *int32                     `json:"clusterSize"`
	KubernetesConfig              KubernetesConfig           `json:"kubernetesConfig"`
	RedisExporter                 *RedisExporter             `json:"redisExporter,omitempty"`
	RedisConfig                   *RedisConfig               `json:"redisConfig,omitempty"`
	Storage                       *Storage                   `json:"storage,omitempty"`
	NodeSelector                  map[string]string          `json:"nodeSelector,omitempty"`
	PodSecurityContext            *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	SecurityContext               *corev1.SecurityContext    `json:"securityContext,omitempty"`
	PriorityClassName             string                     `json:"priorityClassName,omitempty"`
	Affinity                      *corev1.Affinity           `json:"affinity,omitempty"`
	Tolerations                   *[]corev1.Toleration       `json:"tolerations,omitempty"`
	TLS                           *TLSConfig                 `json:"TLS,omitempty"`
	ACL                           *ACLConfig                 `json:"acl,omitempty"`
	PodDisruptionBudget           *RedisPodDisruptionBudget  `json:"pdb,omitempty"`
	ReadinessProbe                *corev1.Probe              `json:"readinessProbe,omitempty"`
	LivenessProbe                 *corev1.Probe              `json:"livenessProbe,omitempty"`
	InitContainer                 *InitContainer             `json:"initContainer,omitempty"`
	Sidecars                      *[]Sidecar                 `json:"sidecars,omitempty"`
	ServiceAccountName            *string                    `json:"serviceAccountName,omitempty"`
	TerminationGracePeriodSeconds *int64                     `json:"terminationGracePeriodSeconds,omitempty"`
	EnvVars                       *[]corev1.EnvVar           `json:"env,omitempty"`
	// Restore fills the new resource's data from a RedisBackup of a RedisReplication before
	// Redis first starts: pod 0 restores it and becomes the first master, the other pods sync
	// from it. It applies only when the resource's StatefulSet is created: a running resource
	// is never overwritten.
	Restore                   *RestoreSpec                      `json:"restore,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	HostPort                  *int                              `json:"hostPort,omitempty"`
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// Sentinel, when set, runs sentinels beside the replication to fail the master over.
	Sentinel *Sentinel `json:"sentinel,omitempty"`
}

// SentinelConfig is the monitoring configuration written into sentinel.conf.
type SentinelConfig struct {
	AdditionalSentinelConfig *string `json:"additionalSentinelConfig,omitempty"`
	// Quorum is the number of sentinels that must agree that the master is down. A quorum
	// larger than the number of sentinels is accepted (the default, as the reference's, is 2
	// whatever the size, and every object it stored carries it): the sentinels then run with
	// the largest quorum they can reach, their number, and the resource says so (condition
	// QuorumAdjusted, a Warning event).
	// +kubebuilder:default="2"
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-9][0-9]*$')",message="quorum must be a positive whole number"
	Quorum string `json:"quorum,omitempty"`
	// +kubebuilder:default="1"
	ParallelSyncs string `json:"parallelSyncs,omitempty"`
	// +kubebuilder:default="10000"
	FailoverTimeout string `json:"failoverTimeout,omitempty"`
	// +kubebuilder:default="5000"
	DownAfterMilliseconds string `json:"downAfterMilliseconds,omitempty"`
	// +kubebuilder:default="no"
	ResolveHostnames string `json:"resolveHostnames,omitempty"`
	// +kubebuilder:default="no"
	AnnounceHostnames string `json:"announceHostnames,omitempty"`
}

// Sentinel is the embedded sentinel of a RedisReplication.
type Sentinel struct {
	// Size is the number of sentinel pods.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="sentinel size must be at least 1"
	Size                                 int32                                                   `json:"size"`
	Image                                string                                                  `json:"image"`
	ImagePullPolicy                      corev1.PullPolicy                                       `json:"imagePullPolicy,omitempty"`
	ImagePullSecrets                     *[]corev1.LocalObjectReference                          `json:"imagePullSecrets,omitempty"`
	Resources                            *corev1.ResourceRequirements                            `json:"resources,omitempty"`
	ExistingPasswordSecret               *ExistingPasswordSecret                                 `json:"redisSecret,omitempty"`
	UpdateStrategy                       appsv1.StatefulSetUpdateStrategy                        `json:"updateStrategy,omitempty"`
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Service                              *ServiceConfig                                          `json:"service,omitempty"`
	IgnoreAnnotations                    []string                                                `json:"ignoreAnnotations,omitempty"`
	MinReadySeconds                      *int32                                                  `json:"minReadySeconds,omitempty"`
	NodeSelector                         map[string]string                                       `json:"nodeSelector,omitempty"`
	PodSecurityContext                   *corev1.PodSecurityContext                              `json:"podSecurityContext,omitempty"`
	SecurityContext                      *corev1.SecurityContext                                 `json:"securityContext,omitempty"`
	PriorityClassName                    string                                                  `json:"priorityClassName,omitempty"`
	Affinity                             *corev1.Affinity                                        `json:"affinity,omitempty"`
	Tolerations                          *[]corev1.Toleration                                    `json:"tolerations,omitempty"`
	TopologySpreadConstraints            []corev1.TopologySpreadConstraint                       `json:"topologySpreadConstraints,omitempty"`
	ServiceAccountName                   *string                                                 `json:"serviceAccountName,omitempty"`
	TerminationGracePeriodSeconds        *int64                                                  `json:"terminationGracePeriodSeconds,omitempty"`
	SentinelConfig                       `json:",inline"`
}

// ConnectionInfo tells clients where the master is.
type ConnectionInfo struct {
	Host       string `json:"host,omitempty"`
	Port       int    `json:"port,omitempty"`
	MasterName string `json:"masterName,omitempty"`
}

// RedisReplicationStatus is the observed state of a RedisReplication.
type RedisReplicationStatus struct {
	// MasterNode is the name of the pod that is the master now.
	MasterNode     string          `json:"masterNode,omitempty"`
	ConnectionInfo *ConnectionInfo `json:"connectionInfo,omitempty"`
	// State is a one-word summary: Initializing, Ready or Failed.
	State string `json:"state,omitempty"`
	// Reason explains State in a sentence.
	Reason string `json:"reason,omitempty"`
	// ReadyReplicas counts ready Redis pods.
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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RedisReplicationSpec   `json:"spec"`
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
