package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisSentinelSpec is a group of sentinels monitoring a RedisReplication, as v1beta1
// described it.
type RedisSentinelSpec struct {
	// Size is the number of sentinel pods.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig v1beta2.KubernetesConfig `json:"kubernetesConfig"`
	// +optional
	RedisSentinelConfig *v1beta2.RedisSentinelConfig `json:"redisSentinelConfig,omitempty"`
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
	PodDisruptionBudget *v1beta2.RedisPodDisruptionBudget `json:"pdb,omitempty"`
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	Sidecars *[]v1beta2.Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
}

// RedisSentinel is a group of sentinels run by the operator (v1beta1; stored as v1beta2).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
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
	Status v1beta2.RedisSentinelStatus `json:"status,omitempty"`
}

// RedisSentinelList is a list of RedisSentinel.
//
// +kubebuilder:object:root=true
type RedisSentinelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisSentinel `json:"items"`
}
