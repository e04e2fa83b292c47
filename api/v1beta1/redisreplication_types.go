package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisReplicationSpec is one master with replicas, as v1beta1 described it.
type RedisReplicationSpec struct {
	// Size is the number of Redis pods: one master, the rest replicas.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="clusterSize must be at least 1"
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig v1beta2.KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	RedisExporter *v1beta2.RedisExporter `json:"redisExporter,omitempty"`
	// +optional
	RedisConfig *v1beta2.RedisConfig `json:"redisConfig,omitempty"`
	// +optional
	Storage *v1beta2.Storage `json:"storage,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// SecurityContext is the pods' security context (v1beta2's podSecurityContext).
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	Tolerations *[]corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	TLS *v1beta2.TLSConfig `json:"TLS,omitempty"`
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	Sidecars *[]v1beta2.Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
}

// RedisReplication is a Redis master with replicas run by the operator (v1beta1; stored as
// v1beta2).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: the pods' controller-revision-hash label (<name>-<hash>) and the Service <name>-additional must fit in 63"
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
	Status v1beta2.RedisReplicationStatus `json:"status,omitempty"`
}

// RedisReplicationList is a list of RedisReplication.
//
// +kubebuilder:object:root=true
type RedisReplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisReplication `json:"items"`
}
