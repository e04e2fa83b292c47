package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RedisSpec is a standalone Redis server.
type RedisSpec struct {
	// +required
	KubernetesConfig KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	HostPort *int `json:"hostPort,omitempty"`
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
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	InitContainer *InitContainer `json:"initContainer,omitempty"`
	// +optional
	Sidecars *[]Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// TerminationGracePeriodSeconds lets Redis finish writing its snapshot on shutdown.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// Restore fills the new resource's data from a RedisBackup before Redis first starts. It
	// applies only when the resource's StatefulSet is created: a running resource is never
	// overwritten.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RedisStatus is the observed state of a standalone Redis.
type RedisStatus struct {
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

// Redis is a standalone Redis server run by the operator.
//
// The name becomes the StatefulSet, whose pods carry the label controller-revision-hash
// "<name>-<up to 10 characters>", and Services up to "<name>-additional": labels and Service
// names are limited to 63 characters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: the pods' controller-revision-hash label (<name>-<hash>) and the Service <name>-additional must fit in 63"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Redis struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RedisSpec `json:"spec"`
	// +optional
	Status RedisStatus `json:"status,omitempty"`
}

// The status accessors of the reconcilers' shell (see CommonStatus).
func (r *Redis) GetCommonStatus() *CommonStatus           { return &r.Status.CommonStatus }
func (r *Redis) CompatibleState() (state, reason *string) { return &r.Status.State, &r.Status.Reason }
func (r *Redis) SetStatusFrom(other *Redis)               { r.Status = other.Status }

// RedisList is a list of Redis.
//
// +kubebuilder:object:root=true
type RedisList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Redis `json:"items"`
}
