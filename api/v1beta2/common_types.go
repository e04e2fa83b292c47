package v1beta2

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubernetesConfig is what every kind says about the workload it runs: image, resources,
// the password Secret, Services and the StatefulSet update strategy.
type KubernetesConfig struct {
	// +required
	Image string `json:"image"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ExistingPasswordSecret names the Secret key that holds the Redis password.
	// +optional
	ExistingPasswordSecret *ExistingPasswordSecret `json:"redisSecret,omitempty"`
	// +optional
	ImagePullSecrets *[]corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	UpdateStrategy appsv1.StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// PersistentVolumeClaimRetentionPolicy is copied to the StatefulSets.
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// +optional
	Service *ServiceConfig `json:"service,omitempty"`
	// IgnoreAnnotations lists annotation keys that the operator neither sets nor compares.
	// +optional
	// +listType=atomic
	IgnoreAnnotations []string `json:"ignoreAnnotations,omitempty"`
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// ExistingPasswordSecret points at the key of a Secret that holds the Redis password.
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(self.key)",message="redisSecret needs both name and key"
type ExistingPasswordSecret struct {
	// +optional
	Name *string `json:"name,omitempty"`
	// +optional
	Key *string `json:"key,omitempty"`
}

// ServiceConfig shapes the Services created for a workload.
type ServiceConfig struct {
	// +kubebuilder:validation:Enum=LoadBalancer;NodePort;ClusterIP
	// +optional
	ServiceType string `json:"serviceType,omitempty"`
	// +optional
	ServiceAnnotations map[string]string `json:"annotations,omitempty"`
	// IncludeBusPort adds the cluster bus port (port + 10000) to the client Service.
	// +optional
	IncludeBusPort bool `json:"includeBusPort,omitempty"`
	// +optional
	Headless *ServiceOption `json:"headless,omitempty"`
	// +optional
	Additional *ServiceOption `json:"additional,omitempty"`
}

// ServiceOption shapes one optional Service (headless or additional).
type ServiceOption struct {
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Enum=LoadBalancer;NodePort;ClusterIP
	// +kubebuilder:default=ClusterIP
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	AdditionalAnnotations map[string]string `json:"additionalAnnotations,omitempty"`
	// +optional
	IncludeBusPort bool `json:"includeBusPort,omitempty"`
}

// RedisConfig adds to the rendered redis.conf.
type RedisConfig struct {
	// AdditionalRedisConfig names a ConfigMap whose `redis-additional.conf` key is appended to redis.conf.
	// +optional
	AdditionalRedisConfig *string `json:"additionalRedisConfig,omitempty"`
	// DynamicConfig lines ("name value") are applied with CONFIG SET, without a restart.
	// +optional
	// +listType=atomic
	DynamicConfig []string `json:"dynamicConfig,omitempty"`
	// MaxMemoryPercentOfLimit sets maxmemory to this share of the container's memory limit.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxMemoryPercentOfLimit *int `json:"maxMemoryPercentOfLimit,omitempty"`
}

// RedisExporter is the metrics sidecar.
type RedisExporter struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +required
	Image string `json:"image"`
	// +kubebuilder:default=9121
	// +optional
	Port *int `json:"port,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// Storage is the data volume of a workload. That its request never shrinks is enforced by
// the ValidatingAdmissionPolicy in config/policy: CRD rules cannot read a quantity (an
// int-or-string of unbounded size) within the API server's CEL cost budget.
type Storage struct {
	// KeepAfterDelete keeps the PVCs when the custom resource is deleted.
	// +optional
	KeepAfterDelete bool `json:"keepAfterDelete,omitempty"`
	// +optional
	VolumeClaimTemplate corev1.PersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
	// +optional
	VolumeMount AdditionalVolume `json:"volumeMount,omitempty"`
}

// AdditionalVolume mounts extra volumes into the Redis container.
type AdditionalVolume struct {
	// +optional
	// +listType=atomic
	Volume []corev1.Volume `json:"volume,omitempty"`
	// +optional
	// +listType=atomic
	MountPath []corev1.VolumeMount `json:"mountPath,omitempty"`
}

// TLSConfig enables TLS with a certificate from a Secret.
type TLSConfig struct {
	// +optional
	CaKeyFile string `json:"ca,omitempty"`
	// +optional
	CertKeyFile string `json:"cert,omitempty"`
	// +optional
	KeyFile string `json:"key,omitempty"`
	// Secret holds the CA, certificate and key; it is mounted into the pods.
	// +required
	Secret corev1.SecretVolumeSource `json:"secret"`
}

// ACLConfig loads Redis ACL users from a Secret or a PVC (one of them).
// +kubebuilder:validation:XValidation:rule="!(has(self.secret) && has(self.persistentVolumeClaim))",message="acl takes either secret or persistentVolumeClaim, not both"
type ACLConfig struct {
	// +optional
	Secret *corev1.SecretVolumeSource `json:"secret,omitempty"`
	// +optional
	PersistentVolumeClaim *string `json:"persistentVolumeClaim,omitempty"`
}

// InitContainer runs before Redis in every pod.
type InitContainer struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +required
	Image string `json:"image"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// +optional
	// +listType=atomic
	Arguments []string `json:"args,omitempty"`
}

// Sidecar is an extra container in every pod.
type Sidecar struct {
	// +required
	Name string `json:"name"`
	// +required
	Image string `json:"image"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// +optional
	EnvVars *[]corev1.EnvVar `json:"env,omitempty"`
	// +optional
	Volumes *[]corev1.VolumeMount `json:"mountPath,omitempty"`
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// +optional
	Ports *[]corev1.ContainerPort `json:"ports,omitempty"`
}

// RedisPodDisruptionBudget configures the PodDisruptionBudget of a workload.
// +kubebuilder:validation:XValidation:rule="!(has(self.minAvailable) && has(self.maxUnavailable))",message="pdb takes either minAvailable or maxUnavailable, not both"
type RedisPodDisruptionBudget struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// Condition types reported by every kind, beside the compatible state/reason.
const (
	// ConditionReady is True when the workload serves as specified.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the operator is moving towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something is wrong that the operator cannot mend by itself yet.
	ConditionDegraded = "Degraded"
)

// CommonStatus is what every kind adds to its compatible status: the generation last acted
// upon and standard Conditions.
type CommonStatus struct {
	// ObservedGeneration is the metadata.generation that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Progressing and Degraded, each with its own observedGeneration.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Every kind's type has three accessors of its status, so that the reconcilers' shell reads and
// writes it typed, without reflection: GetCommonStatus and CompatibleState point at the status's
// CommonStatus and its state and reason, to be written in place; SetStatusFrom gives a resource
// the whole status of another, as an assignment does (slices shared), for the status patch.

// RestoreSpec names the RedisBackup a new resource's data is restored from, in the resource's
// namespace. The backup must be Completed and of the same kind as the resource.
type RestoreSpec struct {
	// BackupName is the RedisBackup's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	BackupName string `json:"backupName"`
}
