package builder

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// serverKind tells what the main container runs.
type serverKind int

const (
	redisServer serverKind = iota
	sentinelServer
)

// Container, volume and port names. The Redis or sentinel container has no constant name: it
// is named after its StatefulSet (see serverContainerName).
const (
	exporterContainerName = "redis-exporter"
	userInitContainerName = "init"
	sentinelInitName      = "sentinel-config"
	aclInitName           = "acl-file"

	redisPortName    = "redis-client"
	busPortName      = "redis-bus"
	sentinelPortName = "sentinel-client"
	exporterPortName = "redis-exporter"

	configVolume        = "redis-config"
	sentinelTmplVolume  = "sentinel-config"
	sentinelAddlVolume  = "sentinel-additional"
	sentinelAddlDir     = "/etc/sentinel-additional"
	nodeConfVolume      = "node-conf"
	tlsVolume           = "tls-certs"
	aclPVCVolume        = "acl"
	podIPEnv            = "POD_IP"
	maxMemoryEnv        = "REDIS_MAX_MEMORY"
	exporterPasswordEnv = "REDIS_PASSWORD"
	exporterUserEnv     = "REDIS_USER"
)

// workload is one StatefulSet with its Services and PodDisruptionBudget, whatever the kind:
// each kind resolves its spec into one (two for a cluster, plus one for embedded sentinels),
// and the object builders (statefulset.go, pod.go, containers.go, volumes.go) read nothing
// else.
type workload struct {
	owner     metav1.OwnerReference
	namespace string
	instance  string // the CR's name
	name      string // the StatefulSet's name, base of the Service names
	// headlessName overrides the governing Service's name, HeadlessServiceName(name).
	headlessName string
	setupType    string
	role         string
	replicas     int32
	server       serverKind

	image            string
	pullPolicy       corev1.PullPolicy
	imagePullSecrets []corev1.LocalObjectReference
	resources        *corev1.ResourceRequirements
	securityContext  *corev1.SecurityContext
	env              []corev1.EnvVar

	updateStrategy      appsv1.StatefulSetUpdateStrategy
	pvcRetention        *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy
	minReadySeconds     int32
	podManagementPolicy appsv1.PodManagementPolicyType

	hostNetwork    bool
	hostPort       *int
	nodeSelector   map[string]string
	affinity       *corev1.Affinity
	tolerations    []corev1.Toleration
	topologySpread []corev1.TopologySpreadConstraint
	// userPodSecurityContext is the spec's; nil gets defaultPodSecurityContext.
	userPodSecurityContext *corev1.PodSecurityContext
	priorityClassName      string
	serviceAccountName     string
	terminationGrace       *int64
	readinessProbe         *corev1.Probe
	livenessProbe          *corev1.Probe
	initContainer          *v1beta2.InitContainer // nil unless enabled
	// restore, when set, adds the init container that restores a backup (RestoreInput);
	// restoredFrom is the backup named on the StatefulSet (AnnotationRestoredFrom).
	restore      *RestoreInput
	restoredFrom string
	// restoreFirstMaster: only the pod of ordinal 0 restores, and none once the ConfigMap
	// RestoreStateConfigMapName says the resource was restored (a RedisReplication's).
	restoreFirstMaster bool
	// persistence: redis.conf says appendonly yes.
	persistence bool
	sidecars    []v1beta2.Sidecar

	exporter *v1beta2.RedisExporter // nil unless enabled

	dataClaim     *corev1.PersistentVolumeClaim // nil: /data is an emptyDir
	nodeConfClaim *corev1.PersistentVolumeClaim // cluster with nodeConfVolume only
	nodesConfDir  string                        // cluster only: where nodes.conf is
	extraVolumes  v1beta2.AdditionalVolume

	tls *v1beta2.TLSConfig
	acl *v1beta2.ACLConfig
	// additionalConfigMap is the user's ConfigMap appended to redis.conf or sentinel.conf.
	additionalConfigMap string

	services services
	port     int32
	busPort  int32 // cluster only
	// nodePorts: the cluster's nodes announce their Kubernetes node's IP and the node ports of
	// their per-pod Services (cluster_network.go).
	nodePorts bool
	// hostnameSuffix, when set, follows the pod name in the DNS name the node announces
	// (from Redis 7 on).
	hostnameSuffix string
	// preferHostname: the cluster redirects clients by the nodes' announced DNS names (from
	// Redis 7 on).
	preferHostname bool

	authSecretName string // "" when there is no password
	// passwordSecret is the operator's Secret whose RedisPasswordKey holds the trimmed password
	// the server requires, "" when it requires none. The server's REDISCLI_AUTH and the
	// exporter both read it, so that they log in with what the server was given.
	passwordSecret string
	// aclOperatorUser: the default user is off; the exporter logs in as redis.OperatorUser.
	aclOperatorUser bool
	configMapName   string
	configHash      string
	// maxMemoryBytes is the rendered maxmemory, 0 when redis.conf sets none.
	maxMemoryBytes int64
	// sentinelScript is the init container script that assembles a writable sentinel.conf.
	sentinelScript string

	pdb *v1beta2.RedisPodDisruptionBudget

	// handOverOnStop: a master of this workload hands its role to a replica before its
	// process stops (handover.go).
	handOverOnStop bool

	// ignoreAnnotations are keys the operator never sets on the objects of this workload, so
	// that whoever else manages them keeps them.
	ignoreAnnotations []string
	// restartedAt is the resource's AnnotationRestartedAt, copied into the pod template.
	restartedAt string
	// podLabels are labels of the pods alone (not of the StatefulSet's selector, nor of its
	// claim templates, both immutable).
	podLabels map[string]string
}

func (w *workload) selectorLabels() map[string]string {
	return map[string]string{LabelApp: w.name, LabelSetupType: w.setupType, LabelRole: w.role}
}

func (w *workload) labels() map[string]string {
	l := w.selectorLabels()
	l[LabelInstance] = w.instance
	l[LabelManagedBy] = ManagedByValue
	return l
}

// meta is the metadata of an object of the workload; annotation keys the spec says to ignore
// are left out.
func (w *workload) meta(name string, labels, annotations map[string]string) metav1.ObjectMeta {
	for _, k := range w.ignoreAnnotations {
		delete(annotations, k)
	}
	return objectMeta(w.owner, w.namespace, name, labels, annotations)
}

// workloadAnnotations go on the workload's StatefulSet, Services and pod template. The
// instance is the resource's name, whatever object carries it: tools that find the objects
// of a resource by it rely on that.
func (w *workload) workloadAnnotations() map[string]string {
	return map[string]string{AnnotationManaged: "true", AnnotationInstance: w.instance}
}

// serviceAnnotations are the annotations of a Service of the workload: ours, then the user's
// (which win).
func (w *workload) serviceAnnotations(user map[string]string) map[string]string {
	port := int32(DefaultExporterPort)
	if w.exporter != nil {
		port = exporterPort(w.exporter)
	}
	a := w.workloadAnnotations()
	a[AnnotationPrometheusScrape] = "true"
	a[AnnotationPrometheusPort] = i32(port)
	maps.Copy(a, user)
	return a
}

func objectMeta(owner metav1.OwnerReference, namespace, name string, labels, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       namespace,
		Labels:          labels,
		Annotations:     nonEmpty(annotations),
		OwnerReferences: []metav1.OwnerReference{owner},
	}
}

func derefResources(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return *r.DeepCopy()
}

func deepCopySlice[T any](in []T, deepCopy func(*T) *T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = *deepCopy(&in[i])
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// headlessServiceName is the governing Service of the workload's StatefulSet.
func (w *workload) headlessServiceName() string {
	if w.headlessName != "" {
		return w.headlessName
	}
	return HeadlessServiceName(w.name)
}
