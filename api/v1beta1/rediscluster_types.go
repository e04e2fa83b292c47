package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisClusterSpec is a sharded Redis Cluster, as v1beta1 described it.
type RedisClusterSpec struct {
	// Size is the number of leaders (shards), unless redisLeader.replicas says otherwise.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="clusterSize must be at least 1"
	// +required
	Size *int32 `json:"clusterSize"`
	// +required
	KubernetesConfig v1beta2.KubernetesConfig `json:"kubernetesConfig"`
	// ClusterVersion is the major Redis version the pods are meant to run ("v7"), any value the
	// reference takes. It is informational: what the operator sends each node follows the
	// version the node itself reports (INFO server), whatever this says.
	// +optional
	ClusterVersion *string `json:"clusterVersion,omitempty"`
	// +optional
	RedisLeader v1beta2.RedisLeader `json:"redisLeader,omitempty"`
	// +optional
	RedisFollower v1beta2.RedisFollower `json:"redisFollower,omitempty"`
	// +optional
	RedisExporter *v1beta2.RedisExporter `json:"redisExporter,omitempty"`
	// +optional
	Storage *v1beta2.ClusterStorage `json:"storage,omitempty"`
	// NodeSelector for both leaders and followers, where the first v1beta1 shape put it; a
	// role's own nodeSelector wins.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations for both leaders and followers, where the first v1beta1 shape put them; a
	// role's own tolerations win.
	// +optional
	Tolerations *[]corev1.Toleration `json:"tolerations,omitempty"`
	// SecurityContext is the pods' security context (v1beta2's podSecurityContext).
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	TLS *v1beta2.TLSConfig `json:"TLS,omitempty"`
	// +optional
	Sidecars *[]v1beta2.Sidecar `json:"sidecars,omitempty"`
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// +optional
	PersistenceEnabled *bool `json:"persistenceEnabled,omitempty"`
}

// RedisCluster is a sharded Redis Cluster run by the operator (v1beta1; stored as v1beta2).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 43",message="metadata.name must be at most 43 characters: the Service <name>-follower-additional and the pods' controller-revision-hash label (<name>-follower-<hash>) must fit in 63"
// +kubebuilder:printcolumn:name="ClusterSize",type=integer,JSONPath=`.spec.clusterSize`
// +kubebuilder:printcolumn:name="LeaderReplicas",type=integer,JSONPath=`.spec.redisLeader.replicas`
// +kubebuilder:printcolumn:name="FollowerReplicas",type=integer,JSONPath=`.spec.redisFollower.replicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
type RedisCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RedisClusterSpec `json:"spec"`
	// +optional
	Status v1beta2.RedisClusterStatus `json:"status,omitempty"`
}

// RedisClusterList is a list of RedisCluster.
//
// +kubebuilder:object:root=true
type RedisClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisCluster `json:"items"`
}
