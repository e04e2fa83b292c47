package v1beta2

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubernetesConfig is what every kind says about the workload it runs: image, resources,
// the password Secret, Services and the StatefulSet update strategy.
type KubernetesConfig struct {
	Image           string                       `json:"image"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ExistingPasswordSecret names the Secret key that holds the Redis password.
	ExistingPasswordSecret *ExistingPasswordSecret          `json:"redisSecret,omitempty"`
	ImagePullSecrets       *[]corev1.LocalObjectReference   `json:"imagePullSecrets,omitempty"`
	UpdateStrategy         appsv1.StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// PersistentVolumeClaimRetentionPolicy is copied to the StatefulSets.
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Service                              *ServiceConfig                                          `json:"service,omitempty"`
	// IgnoreAnnotations lists annotation keys that the operator neither sets nor compares.
	IgnoreAnnotations []string `json:"ignoreAnnotations,omitempty"`
	MinReadySeconds   *int32   `json:"minReadySeconds,omitempty"`
}

// ExistingPasswordSecret points at the key of a Secret that holds the Redis password.
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(self.key)",message="redisSecret needs both name and key"
type ExistingPasswordSecret struct {
	Name *string `json:"name,omitempty"`
	Key  *string `json:"key,omitempty"`
}

// ServiceConfig shapes the Services created for a workload.
type ServiceConfig struct {
	// +kubebuilder:validation:Enum=LoadBalancer;NodePort;ClusterIP
	ServiceType        string            `json:"serviceType,omitempty"`
	ServiceAnnotations map[string]string `json:"annotations,omitempty"`
	// IncludeBusPort adds the cluster bus port (port + 10000) to the client Service.
	IncludeBusPort bool           `json:"includeBusPort,omitempty"`
	Headless       *ServiceOption `json:"headless,omitempty"`
	Additional     *ServiceOption `json:"additional,omitempty"`
}

// ServiceOption shapes one optional Service (headless or additional).
type ServiceOption struct {
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Enum=LoadBalancer;NodePort;ClusterIP
	// +kubebuilder:default=ClusterIP
	Type                  string            `json:"type,omitempty"`
	AdditionalAnnotations map[string]string `json:"additionalAnnotations,omitempty"`
	IncludeBusPort        bool              `json:"includeBusPort,omitempty"`
}

// RedisConfig adds to the rendered redis.conf.
type RedisConfig struct {
	// AdditionalRedisConfig names a ConfigMap whose `redis-additional.conf` key is appended to redis.conf.
	AdditionalRedisConfig *string `json:"additionalRedisConfig,omitempty"`
	// DynamicConfig lines ("name value") are applied with CONFIG SET, without a restart.
	DynamicConfig []string `json:"dynamicConfig,omitempty"`
	// MaxMemoryPercentOfLimit sets maxmemory to this share of the container's memory limit.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxMemoryPercentOfLimit *int `json:"maxMemoryPercentOfLimit,omitempty"`
}

// RedisExporter is the metrics sidecar.
type RedisExporter struct {
	Enabled bool   `json:"enabled,omitempty"`
	Image   string `json:"image"`
	// +kubebuilder:default=9121
	Port            *int                         `json:"port,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
	EnvVars         *[]corev1.EnvVar             `json:"env,omitempty"`
	SecurityContext *corev1.SecurityContext      `json:"securityContext,omitempty"`
}

// Storage is the data volume of a workload. That its request never shrinks is enforced by
// the ValidatingAdmissionPolicy in config/policy: CRD rules cannot read a quantity (an
// int-or-string of unbounded size) within the API server's CEL cost budget.
type Storage struct {
	// KeepAfterDelete keeps the PVCs when the custom resource is deleted.
	KeepAfterDelete     bool                         `json:"keepAfterDelete,omitempty"`
	VolumeClaimTemplate corev1.PersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
	VolumeMount         AdditionalVolume             `json:"volumeMount,omitempty"`
}

// AdditionalVolume mounts extra volumes into the Redis container.
type AdditionalVolume struct {
	Volume    []corev1.Volume      `json:"volume,omitempty"`
	MountPath []corev1.VolumeMount `json:"mountPath,omitempty"`
}

// TLSConfig enables TLS with a certificate from a Secret.
type TLSConfig struct {
	CaKeyFile   string `json:"ca,omitempty"`
	CertKeyFile string `json:"cert,omitempty"`
	KeyFile     string `json:"key,omitempty"`
	// Secret holds the CA, certificate and key; it is mounted into the pods.
	Secret corev1.SecretVolumeSource `json:"secret"`
}

// ACLConfig loads Redis ACL users from a Secret or a PVC (one of them).
// +kubebuilder:validation:XValidation:rule="!(has(self.secret) && has(self.persistentVolumeClaim))",message="acl takes either secret or persistentVolumeClaim, not both"
type ACLConfig struct {
	Secret                *corev1.SecretVolumeSource `json:"secret,omitempty"`
	PersistentVolumeClaim *string                    `json:"persistentVolumeClaim,omitempty"`
}

// InitContainer runs before Redis in every pod.
type InitContainer struct {
	Enabled         *bool                        `json:"enabled,omitempty"`
	Image           string                       `json:"image"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	SecurityContext *corev1.SecurityContext      `json:"securityContext,omitempty"`
	EnvVars         *[]corev1.EnvVar             `json:"env,omitempty"`
	Command         []string                     `json:"command,omitempty"`
	Arguments       []string                     `json:"args,omitempty"`
}

// Sidecar is an extra container in every pod.
type Sidecar struct {
	Name            string                       `json:"name"`
	Image           string                       `json:"image"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	SecurityContext *corev1.SecurityContext      `json:"securityContext,omitempty"`
	EnvVars         *[]corev1.EnvVar             `json:"env,omitempty"`
	Volumes         *[]corev1.VolumeMount        `json:"mountPath,omitempty"`
	Command         []string                     `json:"command,omitempty"`
	Ports           *[]corev1.ContainerPort      `json:"ports,omitempty"`
}

// RedisPodDisruptionBudget configures the PodDisruptionBudget of a workload.
// +kubebuilder:validation:XValidation:rule="!(has(self.minAvailable) && has(self.maxUnavailable))",message="pdb takes either minAvailable or maxUnavailable, not both"
type RedisPodDisruptionBudget struct {
	Enabled        bool   `json:"enabled,omitempty"`
	MinAvailable   *int32 `json:"minAvailable,omitempty"`
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
	BackupName string `json:"backupName"`
}
