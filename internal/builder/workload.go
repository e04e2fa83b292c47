package builder

import (
	"maps"
	"net"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
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
// and the object builders below read nothing else.
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
	sidecars               []v1beta2.Sidecar

	exporter *v1beta2.RedisExporter // nil unless enabled

	dataClaim     *corev1.PersistentVolumeClaim // nil: /data is an emptyDir
	nodeConfClaim *corev1.PersistentVolumeClaim // cluster with nodeConfVolume only
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

func (w *workload) statefulSet() *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: w.meta(w.name, w.labels(), w.workloadAnnotations()),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptrTo(w.replicas),
			Selector:                             &metav1.LabelSelector{MatchLabels: w.selectorLabels()},
			ServiceName:                          w.headlessServiceName(),
			Template:                             w.podTemplate(),
			PodManagementPolicy:                  w.podManagementPolicy,
			UpdateStrategy:                       w.updateStrategy,
			MinReadySeconds:                      w.minReadySeconds,
			PersistentVolumeClaimRetentionPolicy: w.pvcRetention.DeepCopy(),
		},
	}
	if w.dataClaim != nil {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, w.claimTemplate(w.name, w.dataClaim))
	}
	if w.nodeConfClaim != nil {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, w.claimTemplate(nodeConfVolume, w.nodeConfClaim))
	}
	return sts
}

// claimTemplate names the template (the PVC names users depend on derive from it), adds our
// labels so the controller can find the claims, and defaults the access mode.
func (w *workload) claimTemplate(name string, in *corev1.PersistentVolumeClaim) corev1.PersistentVolumeClaim {
	labels := maps.Clone(in.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, w.labels())
	out := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: nonEmpty(maps.Clone(in.Annotations)),
		},
		Spec: *in.Spec.DeepCopy(),
	}
	if len(out.Spec.AccessModes) == 0 {
		out.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return out
}

func (w *workload) podTemplate() corev1.PodTemplateSpec {
	spec := corev1.PodSpec{
		InitContainers:            w.initContainers(),
		Containers:                w.containers(),
		Volumes:                   w.volumes(),
		ImagePullSecrets:          slices.Clone(w.imagePullSecrets),
		NodeSelector:              maps.Clone(w.nodeSelector),
		Affinity:                  w.affinity.DeepCopy(),
		Tolerations:               deepCopySlice(w.tolerations, (*corev1.Toleration).DeepCopy),
		TopologySpreadConstraints: deepCopySlice(w.topologySpread, (*corev1.TopologySpreadConstraint).DeepCopy),
		SecurityContext:           w.podSecurityContext(),
		// Redis and sentinels never call the API server: no token for whoever gets into a pod.
		AutomountServiceAccountToken:  ptrTo(false),
		PriorityClassName:             w.priorityClassName,
		ServiceAccountName:            w.serviceAccountName,
		TerminationGracePeriodSeconds: copyPtr(w.terminationGrace),
		HostNetwork:                   w.hostNetwork,
	}
	if w.hostNetwork {
		// Keep cluster DNS working for a pod on the host's network.
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		// On the host's network every container port is a host port; the API server would
		// default it so, and writing it keeps desired and stored objects equal.
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
				}
			}
		}
	}
	annotations := w.workloadAnnotations()
	for _, k := range w.ignoreAnnotations {
		delete(annotations, k)
	}
	annotations[AnnotationConfigHash] = w.configHash // rolls the pods: never ignored
	labels := w.labels()
	maps.Copy(labels, w.podLabels)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: spec,
	}
}

func (w *workload) podSecurityContext() *corev1.PodSecurityContext {
	sc, _ := podSecurity(w.userPodSecurityContext)
	return sc
}

// secretFileMode is the mode of the files holding secrets (password, ACL users, TLS key):
// readable by the owner and the pod's fsGroup only, which the kubelet makes the group of the
// files (the default context's fsGroup is the redis user's own group). Without an fsGroup the
// files stay root's, so they keep the default mode the Redis user can read.
func (w *workload) secretFileMode() *int32 {
	if sc := w.podSecurityContext(); sc == nil || sc.FSGroup == nil {
		return nil
	}
	return ptrTo[int32](0o440)
}

// ownSecurityContext is the security context of the operator's own containers, given the
// user's (nil when unset).
func (w *workload) ownSecurityContext(user *corev1.SecurityContext) *corev1.SecurityContext {
	_, defaulted := podSecurity(w.userPodSecurityContext)
	return containerSecurity(user, defaulted)
}

func (w *workload) containers() []corev1.Container {
	out := []corev1.Container{w.serverContainer()}
	if w.exporter != nil {
		out = append(out, w.exporterContainer())
	}
	for _, s := range w.sidecars {
		out = append(out, sidecarContainer(s))
	}
	return out
}

// serverContainerName is the name of the Redis or sentinel container: its StatefulSet's name,
// which runbooks pass to kubectl exec and logs as -c.
func (w *workload) serverContainerName() string { return w.name }

func (w *workload) serverContainer() corev1.Container {
	c := corev1.Container{
		Image:           w.image,
		ImagePullPolicy: w.pullPolicy,
		Resources:       derefResources(w.resources),
		SecurityContext: w.ownSecurityContext(w.securityContext),
		ReadinessProbe:  w.withCheck(w.readinessProbe, false),
		LivenessProbe:   w.withCheck(w.livenessProbe, true),
		VolumeMounts:    w.serverMounts(),
	}
	if w.server == redisServer {
		c.Lifecycle = w.handOverHook()
	}
	// A command, not args: the images users run start Redis from an entrypoint that ignores
	// args (quay.io/opstree/*), and the sentinel image has no redis-server, so only a
	// command runs our configuration on every image. It bypasses the official images'
	// privilege drop, which the pod's security context (uid 999 by default) replaces.
	c.Name = w.serverContainerName()
	switch w.server {
	case sentinelServer:
		c.Command = []string{"redis-sentinel", sentinelConfPath}
		c.Ports = []corev1.ContainerPort{{Name: sentinelPortName, ContainerPort: w.port, Protocol: corev1.ProtocolTCP}}
	default:
		// redis.conf cannot expand variables; the kubelet expands the $(VAR)s of a command.
		c.Command = append([]string{"redis-server", redisConfPath}, w.announceArgs()...)
		c.Ports = []corev1.ContainerPort{{Name: redisPortName, ContainerPort: w.port, Protocol: corev1.ProtocolTCP}}
		if w.busPort != 0 {
			c.Command = w.clusterCommand()
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: busPortName, ContainerPort: w.busPort, Protocol: corev1.ProtocolTCP})
		}
	}
	if w.hostPort != nil {
		c.Ports[0].HostPort = portNumber(*w.hostPort)
	}
	env := w.announceEnv()
	if w.maxMemoryBytes > 0 {
		// The same value as maxmemory in redis.conf, for scripts and tools in the container.
		env = append(env, corev1.EnvVar{Name: maxMemoryEnv, Value: itoa(w.maxMemoryBytes)})
	}
	if w.server == redisServer && w.passwordSecret != "" {
		// redis-cli reads it, so that `kubectl exec POD -- redis-cli ping` needs no -a, as the
		// replaced operator's runbooks have it. Set at container start, it keeps the old
		// password after a rotation until the pod restarts; the preStop hook reads the
		// projected file instead, which follows a rotation.
		env = append(env, w.passwordEnv(redisCLIAuthEnv))
	}
	c.Env = mergeEnv(env, w.env)
	return c
}

// serverMounts lists first the mounts the replaced operator's container has too, in its order
// (node-conf, data, tls-certs, the user's), then ours, so that a comparison by position of
// what it listed sees no change; the kubelet mounts parents first whatever the order.
func (w *workload) serverMounts() []corev1.VolumeMount {
	var m []corev1.VolumeMount
	if w.server == redisServer && w.nodeConfClaim != nil {
		m = append(m, corev1.VolumeMount{Name: nodeConfVolume, MountPath: nodeConfDir})
	}
	dataMount := corev1.VolumeMount{Name: w.name, MountPath: dataDir}
	if w.server == redisServer {
		m = append(m, dataMount)
	}
	if w.tls != nil {
		m = append(m, corev1.VolumeMount{Name: tlsVolume, MountPath: tlsDir, ReadOnly: true})
	}
	m = append(m, deepCopySlice(w.extraVolumes.MountPath, (*corev1.VolumeMount).DeepCopy)...)
	// Ours alone from here.
	if w.server == sentinelServer {
		// A sentinel needs only /data, which holds its writable copy of sentinel.conf; the
		// replaced operator's sentinels mount no /data.
		return append(m, dataMount)
	}
	m = append(m, corev1.VolumeMount{Name: configVolume, MountPath: redisConfigDir, ReadOnly: true})
	if w.acl != nil && w.acl.Secret == nil && w.acl.PersistentVolumeClaim != nil {
		m = append(m, corev1.VolumeMount{Name: aclPVCVolume, MountPath: aclPVCDir})
	}
	if w.nodePorts {
		m = append(m, corev1.VolumeMount{Name: nodePortsVolume, MountPath: nodePortsDir, ReadOnly: true})
	}
	return m
}

func (w *workload) exporterContainer() corev1.Container {
	e := w.exporter
	port := exporterPort(e)
	scheme := "redis://"
	if w.tls != nil {
		scheme = "rediss://"
	}
	env := []corev1.EnvVar{
		{Name: "REDIS_ADDR", Value: scheme + "localhost:" + i32(w.port)},
		{Name: "REDIS_EXPORTER_WEB_LISTEN_ADDRESS", Value: net.JoinHostPort("", i32(port))},
	}
	if w.passwordSecret != "" {
		env = append(env, w.passwordEnv(exporterPasswordEnv))
	}
	var mounts []corev1.VolumeMount
	if w.tls != nil {
		ca, cert, key := tlsFiles(w.tls)
		env = append(env,
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CA_CERT_FILE", Value: tlsDir + "/" + ca},
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", Value: tlsDir + "/" + cert},
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", Value: tlsDir + "/" + key},
			// It dials localhost inside the pod, a name server certificates rarely carry, and
			// has no flag to check another: verifying by default would stop every scrape of a
			// certificate made for the operator we replace. Loopback never leaves the pod; a
			// certificate that names localhost can be verified with "false" in redisExporter.env.
			corev1.EnvVar{Name: "REDIS_EXPORTER_SKIP_TLS_VERIFICATION", Value: "true"},
		)
		mounts = append(mounts, corev1.VolumeMount{Name: tlsVolume, MountPath: tlsDir, ReadOnly: true})
	}
	// The replaced operator sorts these by name; none refers to another, so the order is
	// free to follow its. REDIS_USER, which it never sets, follows them.
	slices.SortStableFunc(env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	if w.aclOperatorUser {
		env = append(env, corev1.EnvVar{Name: exporterUserEnv, Value: redis.OperatorUser})
	}
	var userEnv []corev1.EnvVar
	if e.EnvVars != nil {
		userEnv = *e.EnvVars
	}
	return corev1.Container{
		Name:            exporterContainerName,
		Image:           e.Image,
		ImagePullPolicy: pullPolicy(e.ImagePullPolicy, e.Image),
		Env:             mergeEnv(env, userEnv),
		Ports:           []corev1.ContainerPort{{Name: exporterPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		Resources:       derefResources(e.Resources),
		SecurityContext: w.ownSecurityContext(e.SecurityContext),
		VolumeMounts:    mounts,
	}
}

// passwordEnv is a variable holding the server's password: a reference to the operator's
// Secret, whose value is the user's Secret's trimmed (a trailing newline there would be part
// of the password otherwise), never a value in the pod spec.
func (w *workload) passwordEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.passwordSecret},
			Key:                  RedisPasswordKey,
		},
	}}
}

func sidecarContainer(s v1beta2.Sidecar) corev1.Container {
	c := corev1.Container{
		Name:            s.Name,
		Image:           s.Image,
		ImagePullPolicy: pullPolicy(s.ImagePullPolicy, s.Image),
		Resources:       derefResources(s.Resources),
		SecurityContext: s.SecurityContext.DeepCopy(),
		Command:         slices.Clone(s.Command),
	}
	if s.EnvVars != nil {
		c.Env = deepCopySlice(*s.EnvVars, (*corev1.EnvVar).DeepCopy)
	}
	if s.Volumes != nil {
		c.VolumeMounts = deepCopySlice(*s.Volumes, (*corev1.VolumeMount).DeepCopy)
	}
	if s.Ports != nil {
		c.Ports = deepCopySlice(*s.Ports, (*corev1.ContainerPort).DeepCopy)
	}
	return c
}

func (w *workload) initContainers() []corev1.Container {
	var out []corev1.Container
	if w.server == sentinelServer {
		// The sentinel rewrites its config file, so it cannot run from a read-only ConfigMap.
		// This copies the rendered template, the user's additional config and the auth file
		// into the pod's writable /data, once per pod: over container restarts the sentinel
		// keeps the state it rewrote. The script holds paths only, never a secret value.
		mounts := []corev1.VolumeMount{
			{Name: w.name, MountPath: dataDir},
			{Name: sentinelTmplVolume, MountPath: sentinelTemplDir, ReadOnly: true},
		}
		if w.additionalConfigMap != "" {
			mounts = append(mounts, corev1.VolumeMount{Name: sentinelAddlVolume, MountPath: sentinelAddlDir, ReadOnly: true})
		}
		out = append(out, corev1.Container{
			Name:            sentinelInitName,
			Image:           w.image,
			ImagePullPolicy: w.pullPolicy,
			Command:         []string{"sh", "-c", w.sentinelScript},
			Resources:       derefResources(w.resources),
			SecurityContext: w.ownSecurityContext(w.securityContext),
			VolumeMounts:    mounts,
		})
	}
	if ic := w.initContainer; ic != nil {
		// The replaced operator's init container mounts the data and the user's volumes, in
		// that order; node-conf, which it leaves out, follows.
		mounts := []corev1.VolumeMount{{Name: w.name, MountPath: dataDir}}
		mounts = append(mounts, deepCopySlice(w.extraVolumes.MountPath, (*corev1.VolumeMount).DeepCopy)...)
		if w.nodeConfClaim != nil {
			mounts = append(mounts, corev1.VolumeMount{Name: nodeConfVolume, MountPath: nodeConfDir})
		}
		c := corev1.Container{
			Name:            userInitContainerName,
			Image:           ic.Image,
			ImagePullPolicy: pullPolicy(ic.ImagePullPolicy, ic.Image),
			Command:         slices.Clone(ic.Command),
			Args:            slices.Clone(ic.Arguments),
			Resources:       derefResources(ic.Resources),
			SecurityContext: ic.SecurityContext.DeepCopy(),
			VolumeMounts:    mounts,
		}
		if ic.EnvVars != nil {
			c.Env = deepCopySlice(*ic.EnvVars, (*corev1.EnvVar).DeepCopy)
		}
		out = append(out, c)
	}
	if w.server == redisServer && w.acl != nil && w.acl.Secret == nil && w.acl.PersistentVolumeClaim != nil {
		// After the user's own init container (which may prepare the claim's permissions):
		// Redis refuses to start when its aclfile is missing: a new, empty claim gets an
		// empty file (the default user only), which ACL SAVE then fills. An existing file
		// is never touched.
		out = append(out, corev1.Container{
			Name:            aclInitName,
			Image:           w.image,
			ImagePullPolicy: w.pullPolicy,
			Command:         []string{"sh", "-c", "umask 077; test -e " + aclPVCDir + "/" + ACLFileKey + " || : > " + aclPVCDir + "/" + ACLFileKey},
			Resources:       derefResources(w.resources),
			SecurityContext: w.ownSecurityContext(w.securityContext),
			VolumeMounts:    []corev1.VolumeMount{{Name: aclPVCVolume, MountPath: aclPVCDir}},
		})
	}
	return out
}

// sentinelInitScript is the init container script; it depends on the spec only through
// whether additional config and an auth file exist.
func sentinelInitScript(additional, auth bool) string {
	// umask: the assembled file holds the sentinels' auth-pass, for the sentinel's user only.
	s := "set -eu\numask 077\n" +
		"conf=" + sentinelConfPath + "\n" +
		"if [ ! -s \"$conf\" ]; then\n" +
		"  {\n" +
		"    cat " + sentinelTemplDir + "/" + SentinelConfKey + "\n"
	if additional {
		s += "    for f in " + sentinelAddlDir + "/*.conf; do [ -e \"$f\" ] || continue; cat \"$f\"; echo; done\n"
	}
	if auth {
		s += "    cat " + sentinelTemplDir + "/" + sentinelAuthRel + "\n"
	}
	return s + "  } > \"$conf.tmp\"\n" +
		"  mv \"$conf.tmp\" \"$conf\"\n" +
		"fi\n"
}

// volumes lists first the volumes the replaced operator's pods have too, in its order (the
// user's, then tls-certs), then ours; its data volume is a claim template, never listed here.
func (w *workload) volumes() []corev1.Volume {
	out := deepCopySlice(w.extraVolumes.Volume, (*corev1.Volume).DeepCopy)
	if w.tls != nil {
		src := w.tls.Secret.DeepCopy()
		if src.DefaultMode == nil {
			src.DefaultMode = w.secretFileMode()
		}
		out = append(out, corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Secret: src}})
	}
	// Ours alone from here.
	if w.dataClaim == nil {
		out = append(out, corev1.Volume{Name: w.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if w.server == sentinelServer {
		out = append(out, corev1.Volume{Name: sentinelTmplVolume, VolumeSource: corev1.VolumeSource{Projected: w.sentinelProjection()}})
		if w.additionalConfigMap != "" {
			out = append(out, corev1.Volume{Name: sentinelAddlVolume, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.additionalConfigMap}},
			}})
		}
		return out
	}
	out = append(out, corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{Projected: w.redisProjection()}})
	if w.acl != nil && w.acl.Secret == nil && w.acl.PersistentVolumeClaim != nil {
		out = append(out, corev1.Volume{Name: aclPVCVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: *w.acl.PersistentVolumeClaim},
		}})
	}
	if w.nodePorts {
		// Every key, not listed items: a pod added by a scale-out brings a new key, which
		// must not change the pod template.
		out = append(out, corev1.Volume{Name: nodePortsVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: NodePortsConfigMapName(w.name)}},
		}})
	}
	return out
}

// redisProjection assembles /etc/redis: redis.conf, the auth file, the user's ACL file and the
// user's additional config, each from its own ConfigMap or Secret.
func (w *workload) redisProjection() *corev1.ProjectedVolumeSource {
	p := &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
		ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.configMapName},
			Items:                []corev1.KeyToPath{{Key: RedisConfKey, Path: RedisConfKey}},
		},
	}}}
	if w.authSecretName != "" {
		p.Sources = append(p.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.authSecretName},
			Items: []corev1.KeyToPath{
				{Key: RedisAuthKey, Path: authFileRelPath, Mode: w.secretFileMode()},
				{Key: RedisPasswordKey, Path: passwordRelPath, Mode: w.secretFileMode()},
				{Key: RedisUserKey, Path: userRelPath, Mode: w.secretFileMode()},
			},
		}})
	}
	if w.acl != nil && w.acl.Secret != nil {
		// The operator's copy, not the user's Secret: an edit reaches the pods only once
		// checked, so a pod that restarts meanwhile still starts with the last good users.
		p.Sources = append(p.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: ACLSecretName(w.instance)},
			Items:                []corev1.KeyToPath{{Key: ACLFileKey, Path: ACLFileKey, Mode: w.secretFileMode()}},
		}})
	}
	if w.additionalConfigMap != "" {
		p.Sources = append(p.Sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.additionalConfigMap},
			Items:                []corev1.KeyToPath{{Key: AdditionalRedisConfKey, Path: additionalRelPath}},
		}})
	}
	return p
}

func (w *workload) sentinelProjection() *corev1.ProjectedVolumeSource {
	p := &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
		ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.configMapName},
			Items:                []corev1.KeyToPath{{Key: SentinelConfKey, Path: SentinelConfKey}},
		},
	}}}
	if w.authSecretName != "" {
		p.Sources = append(p.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.authSecretName},
			Items:                []corev1.KeyToPath{{Key: SentinelAuthKey, Path: sentinelAuthRel, Mode: w.secretFileMode()}},
		}})
	}
	return p
}

// mergeEnv returns ours followed by the user's variables; a user variable with the name of one
// of ours replaces it in place.
func mergeEnv(ours, user []corev1.EnvVar) []corev1.EnvVar {
	out := deepCopySlice(ours, (*corev1.EnvVar).DeepCopy)
	for _, u := range user {
		i := slices.IndexFunc(out, func(e corev1.EnvVar) bool { return e.Name == u.Name })
		if i >= 0 {
			out[i] = *u.DeepCopy()
		} else {
			out = append(out, *u.DeepCopy())
		}
	}
	return out
}

// nodeConfClaim is the node-conf claim: the user's template, or 1Gi ReadWriteOnce on the data
// volume's storage class.
func nodeConfClaim(s *v1beta2.ClusterStorage) *corev1.PersistentVolumeClaim {
	c := s.NodeConfVolumeClaimTemplate.DeepCopy()
	if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		if c.Spec.Resources.Requests == nil {
			c.Spec.Resources.Requests = corev1.ResourceList{}
		}
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(defaultNodeConfVolumeSize)
		if c.Spec.StorageClassName == nil {
			c.Spec.StorageClassName = copyPtr(s.VolumeClaimTemplate.Spec.StorageClassName)
		}
	}
	return c
}

// dataClaim is the data claim template, or nil when the spec asks for no storage size (a PVC
// needs one): then /data is an emptyDir.
func dataClaim(s *v1beta2.Storage) *corev1.PersistentVolumeClaim {
	if s == nil {
		return nil
	}
	if _, ok := s.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		return nil
	}
	return s.VolumeClaimTemplate.DeepCopy()
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
