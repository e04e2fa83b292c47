package builder

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// Every default the builders apply lives in this file.

// Ports, names and sizes the builders use when the spec leaves them unset.
const (
	DefaultRedisPort     = 6379
	DefaultSentinelPort  = 26379
	DefaultExporterPort  = 9121
	ClusterBusPortOffset = 10000

	// DefaultMasterGroupName is the sentinel master group when the spec names none.
	DefaultMasterGroupName = "myMaster"
	// EmbeddedMasterGroupName is the master group of the sentinels embedded in a
	// RedisReplication, the masterName clients are given in its status.connectionInfo.
	EmbeddedMasterGroupName = "mymaster"
	// LegacyEmbeddedMasterGroupName is the group earlier versions gave embedded sentinels.
	LegacyEmbeddedMasterGroupName = DefaultMasterGroupName
	// DefaultSentinelSize matches the CRD default of RedisSentinel clusterSize.
	DefaultSentinelSize = 3

	defaultServiceType        = corev1.ServiceTypeClusterIP
	defaultPodManagement      = appsv1.OrderedReadyPodManagement
	defaultPDBMaxUnavailable  = 1
	defaultNodeConfVolumeSize = "1Gi"

	// Defaults of the sentinel settings, equal to the CRD defaults.
	defaultSentinelQuorum        = 2
	defaultParallelSyncs         = "1"
	defaultFailoverTimeout       = "10000"
	defaultDownAfterMilliseconds = "5000"
	defaultSentinelResolveHosts  = "no"
	defaultSentinelAnnounceHosts = "no"
	defaultSentinelMonitoredPort = "6379"
	defaultTLSCertFile           = "tls.crt"
	defaultTLSKeyFile            = "tls.key"
	defaultTLSCAFile             = "ca.crt"
	defaultLivenessInitialDelay  = 15
	// Redis answers within milliseconds of starting; an ordered StatefulSet waits for each pod
	// to be ready before the next, so a long first delay only slows every rollout.
	defaultReadinessInitialDelay  = 1
	defaultProbePeriodSeconds     = 10
	defaultProbeTimeoutSeconds    = 5
	defaultLivenessFailureThresh  = 5
	defaultReadinessFailureThresh = 3
)

// redisUID is the redis user (and, on Debian, group) of the stock redis image.
const redisUID = 999

// defaultPodSecurityContext applies when the spec sets no podSecurityContext: run as the
// image's redis user from the start and let the kubelet grant that user's group write access
// to every volume. The stock entrypoint, started as root, would only chown /data and drop to
// redis with its own groups, leaving it unable to write /node-conf on a fresh claim. Set
// podSecurityContext (even to {}) to choose otherwise, e.g. where the platform assigns UIDs.
func defaultPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsUser:           ptrTo[int64](redisUID),
		RunAsGroup:          ptrTo[int64](redisUID),
		FSGroup:             ptrTo[int64](redisUID),
		RunAsNonRoot:        ptrTo(true),
		FSGroupChangePolicy: ptrTo(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// defaultContainerSecurityContext goes on the operator's own containers only together with
// defaultPodSecurityContext: a pod the user runs as root may need capabilities (chown, setuid)
// that this drops. Together they meet the "restricted" Pod Security Standard.
func defaultContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptrTo(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// podSecurity returns the pod security context, and whether the defaults apply.
func podSecurity(user *corev1.PodSecurityContext) (*corev1.PodSecurityContext, bool) {
	if user != nil {
		return user.DeepCopy(), false
	}
	return defaultPodSecurityContext(), true
}

// containerSecurity returns the security context of one of the operator's containers.
func containerSecurity(user *corev1.SecurityContext, defaulted bool) *corev1.SecurityContext {
	if user != nil {
		return user.DeepCopy()
	}
	if defaulted {
		return defaultContainerSecurityContext()
	}
	return nil
}

// pullPolicy mirrors the API server's own defaulting, so the desired object equals the stored
// one: Always for an untagged or :latest image, IfNotPresent otherwise.
func pullPolicy(p corev1.PullPolicy, image string) corev1.PullPolicy {
	if p != "" {
		return p
	}
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	lastSegment := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(lastSegment, ":")
	if i < 0 || lastSegment[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func podManagementPolicy(p string) appsv1.PodManagementPolicyType {
	if p == "" {
		return defaultPodManagement
	}
	return appsv1.PodManagementPolicyType(p)
}

func updateStrategy(s appsv1.StatefulSetUpdateStrategy) appsv1.StatefulSetUpdateStrategy {
	out := *s.DeepCopy()
	if out.Type == "" {
		out.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	return out
}

// ClusterPort is the client port of a RedisCluster (spec.port, 6379 by default).
func ClusterPort(cr *v1beta2.RedisCluster) int32 {
	if cr.Spec.Port != nil && *cr.Spec.Port > 0 {
		return portNumber(*cr.Spec.Port)
	}
	return DefaultRedisPort
}

// ClusterBusPort is the cluster bus port of a RedisCluster: client port + 10000.
func ClusterBusPort(cr *v1beta2.RedisCluster) int32 { return ClusterPort(cr) + ClusterBusPortOffset }

// LeaderReplicas is the number of leader pods: redisLeader.replicas, else clusterSize.
func LeaderReplicas(cr *v1beta2.RedisCluster) int32 {
	if r := cr.Spec.RedisLeader.Replicas; r != nil {
		return *r
	}
	if cr.Spec.Size != nil {
		return *cr.Spec.Size
	}
	return 0
}

// FollowerReplicas is the number of follower pods: redisFollower.replicas, else clusterSize.
// Zero means a cluster of leaders only, whose follower StatefulSet has 0 replicas.
func FollowerReplicas(cr *v1beta2.RedisCluster) int32 {
	if r := cr.Spec.RedisFollower.Replicas; r != nil {
		return *r
	}
	if cr.Spec.Size != nil {
		return *cr.Spec.Size
	}
	return 0
}

// SentinelReplicas is the number of pods of a RedisSentinel.
func SentinelReplicas(cr *v1beta2.RedisSentinel) int32 {
	if cr.Spec.Size != nil {
		return *cr.Spec.Size
	}
	return DefaultSentinelSize
}

// ClusterPersistence tells whether a RedisCluster writes an append-only file and snapshots;
// persistenceEnabled defaults to true.
func ClusterPersistence(cr *v1beta2.RedisCluster) bool {
	return cr.Spec.PersistenceEnabled == nil || *cr.Spec.PersistenceEnabled
}

// SentinelMonitors tells whether a RedisSentinel names a RedisReplication whose master its
// sentinels monitor; without one they run monitoring nothing.
func SentinelMonitors(cr *v1beta2.RedisSentinel) bool {
	c := cr.Spec.RedisSentinelConfig
	return c != nil && c.RedisReplicationName != ""
}

// MasterGroupName is the sentinel master group a RedisSentinel monitors.
func MasterGroupName(cr *v1beta2.RedisSentinel) string {
	if c := cr.Spec.RedisSentinelConfig; c != nil && c.MasterGroupName != "" {
		return c.MasterGroupName
	}
	return DefaultMasterGroupName
}

// serviceOption is a ServiceOption with its defaults applied.
type serviceOption struct {
	enabled        bool
	serviceType    corev1.ServiceType
	annotations    map[string]string
	includeBusPort bool
}

func resolveServiceOption(o *v1beta2.ServiceOption) serviceOption {
	out := serviceOption{enabled: true, serviceType: defaultServiceType}
	if o == nil {
		return out
	}
	if o.Enabled != nil {
		out.enabled = *o.Enabled
	}
	if o.Type != "" {
		out.serviceType = corev1.ServiceType(o.Type)
	}
	out.annotations = o.AdditionalAnnotations
	out.includeBusPort = o.IncludeBusPort
	return out
}

// services is a ServiceConfig with its defaults applied.
type services struct {
	clientType        corev1.ServiceType
	clientAnnotations map[string]string
	clientBusPort     bool
	headless          serviceOption
	additional        serviceOption
}

func resolveServices(c *v1beta2.ServiceConfig) services {
	out := services{clientType: defaultServiceType}
	if c == nil {
		out.headless = resolveServiceOption(nil)
		out.additional = resolveServiceOption(nil)
		return out
	}
	if c.ServiceType != "" {
		out.clientType = corev1.ServiceType(c.ServiceType)
	}
	out.clientAnnotations = c.ServiceAnnotations
	out.clientBusPort = c.IncludeBusPort
	out.headless = resolveServiceOption(c.Headless)
	out.additional = resolveServiceOption(c.Additional)
	return out
}

// pdbBounds reports whether a PodDisruptionBudget is wanted and its bounds, with
// maxUnavailable 1 when the spec sets neither.
func pdbBounds(p *v1beta2.RedisPodDisruptionBudget) (minAvailable, maxUnavailable *intstr.IntOrString, wanted bool) {
	if p == nil || !p.Enabled {
		return nil, nil, false
	}
	switch {
	case p.MinAvailable != nil:
		v := intstr.FromInt32(*p.MinAvailable)
		return &v, nil, true
	case p.MaxUnavailable != nil:
		v := intstr.FromInt32(*p.MaxUnavailable)
		return nil, &v, true
	default:
		v := intstr.FromInt32(defaultPDBMaxUnavailable)
		return nil, &v, true
	}
}

// probeTimings is a probe with the default timings and no check: serverContainer adds the
// check (a PING for Redis, a TCP connect for sentinels).
func probeTimings(initialDelay, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       defaultProbePeriodSeconds,
		TimeoutSeconds:      defaultProbeTimeoutSeconds,
		SuccessThreshold:    1,
		FailureThreshold:    failureThreshold,
	}
}

// probes returns the user's probes where given, the default timings elsewhere. A probe that
// names no check (the defaults, and the first v1beta1 shape, which had only timings) gets the
// server's own check from serverContainer: a container probe without one is refused by the
// API server.
func probes(readiness, liveness *corev1.Probe) (r, l *corev1.Probe) {
	return userOrDefaultProbe(readiness, defaultReadinessInitialDelay, defaultReadinessFailureThresh),
		userOrDefaultProbe(liveness, defaultLivenessInitialDelay, defaultLivenessFailureThresh)
}

func userOrDefaultProbe(user *corev1.Probe, initialDelay, failureThreshold int32) *corev1.Probe {
	if user == nil {
		return probeTimings(initialDelay, failureThreshold)
	}
	return user.DeepCopy()
}

// hasCheck tells whether a probe names what to check.
func hasCheck(p *corev1.Probe) bool {
	h := p.ProbeHandler
	return h.Exec != nil || h.HTTPGet != nil || h.TCPSocket != nil || h.GRPC != nil
}

// exporterPort is the exporter's listen port, 9121 by default.
func exporterPort(e *v1beta2.RedisExporter) int32 {
	if e.Port != nil && *e.Port > 0 {
		return portNumber(*e.Port)
	}
	return DefaultExporterPort
}

// tlsFiles returns the file names of CA, certificate and key inside the TLS Secret.
func tlsFiles(t *v1beta2.TLSConfig) (ca, cert, key string) {
	ca, cert, key = t.CaKeyFile, t.CertKeyFile, t.KeyFile
	if ca == "" {
		ca = defaultTLSCAFile
	}
	if cert == "" {
		cert = defaultTLSCertFile
	}
	if key == "" {
		key = defaultTLSKeyFile
	}
	return ca, cert, key
}

// sentinelSettings is a SentinelConfig with defaults applied and every value checked, since
// each one is written verbatim into sentinel.conf.
type sentinelSettings struct {
	masterGroup           string
	masterPort            string
	quorum                string
	parallelSyncs         string
	failoverTimeout       string
	downAfterMilliseconds string
	resolveHostnames      string
	announceHostnames     string
	additionalConfigMap   string
	// unmonitored leaves the master group out of sentinel.conf: there is no master to monitor yet.
	unmonitored bool
}

// redisSentinelQuorum is the quorum of a RedisSentinel that sets none: 2, or 1 with a single
// sentinel, since a quorum larger than the number of sentinels could never agree on a failover.
func redisSentinelQuorum(size int32) int32 { return min(int32(defaultSentinelQuorum), max(size, 1)) }

// embeddedSentinelQuorum is the quorum of embedded sentinels that set none: a majority.
func embeddedSentinelQuorum(size int32) int32 { return max(size, 1)/2 + 1 }

// SentinelQuorum is the quorum a group of sentinels runs with, beside the one its spec asks for.
type SentinelQuorum struct {
	// Requested is the spec's quorum; 0 when unset or not a positive whole number (which the
	// builders refuse).
	Requested int32
	// Configured is the quorum sentinel.conf gets: the spec's, lowered to the number of
	// sentinels when larger, since sentinels could never reach it and would never hold the
	// master down; with none in the spec, the kind's default.
	Configured int32
	// Sentinels is the number of sentinels.
	Sentinels int32
}

// Lowered tells whether the sentinels run with a smaller quorum than the spec asks for.
func (q SentinelQuorum) Lowered() bool { return q.Requested > q.Configured }

// RedisSentinelQuorum is the quorum of a RedisSentinel's sentinels.
func RedisSentinelQuorum(cr *v1beta2.RedisSentinel) SentinelQuorum {
	size, requested := SentinelReplicas(cr), ""
	if c := cr.Spec.RedisSentinelConfig; c != nil {
		requested = c.Quorum
	}
	return sentinelQuorum(requested, size, redisSentinelQuorum(size))
}

// EmbeddedSentinelQuorum is the quorum of a RedisReplication's embedded sentinels; zero
// without spec.sentinel.
func EmbeddedSentinelQuorum(cr *v1beta2.RedisReplication) SentinelQuorum {
	sn := cr.Spec.Sentinel
	if sn == nil {
		return SentinelQuorum{}
	}
	return sentinelQuorum(sn.Quorum, sn.Size, embeddedSentinelQuorum(sn.Size))
}

// sentinelQuorum resolves a spec's quorum (requested, "" when unset) for the given number of
// sentinels. The schema defaults it to "2" whatever that number, as the reference's does, so
// that every object the reference stored stays valid: a single sentinel runs with quorum 1
// rather than be refused.
func sentinelQuorum(requested string, sentinels, unset int32) SentinelQuorum {
	q := SentinelQuorum{Configured: unset, Sentinels: sentinels}
	if requested == "" {
		return q
	}
	n, err := strconv.ParseUint(requested, 10, 31)
	if err != nil || n == 0 {
		return SentinelQuorum{Sentinels: sentinels}
	}
	q.Requested = int32(n) // ParseUint bounded it to 31 bits
	q.Configured = min(q.Requested, max(sentinels, 1))
	return q
}

func resolveSentinelSettings(c v1beta2.SentinelConfig, masterGroup, masterPort string, quorum SentinelQuorum) (sentinelSettings, error) {
	s := sentinelSettings{
		masterGroup:           orDefault(masterGroup, DefaultMasterGroupName),
		masterPort:            orDefault(masterPort, defaultSentinelMonitoredPort),
		quorum:                c.Quorum,
		parallelSyncs:         orDefault(c.ParallelSyncs, defaultParallelSyncs),
		failoverTimeout:       orDefault(c.FailoverTimeout, defaultFailoverTimeout),
		downAfterMilliseconds: orDefault(c.DownAfterMilliseconds, defaultDownAfterMilliseconds),
		resolveHostnames:      orDefault(c.ResolveHostnames, defaultSentinelResolveHosts),
		announceHostnames:     orDefault(c.AnnounceHostnames, defaultSentinelAnnounceHosts),
	}
	if s.quorum == "" {
		s.quorum = strconv.Itoa(int(quorum.Configured))
	}
	if c.AdditionalSentinelConfig != nil {
		s.additionalConfigMap = *c.AdditionalSentinelConfig
	}
	for _, f := range []struct{ name, value string }{
		{"quorum", s.quorum}, {"parallelSyncs", s.parallelSyncs}, {"failoverTimeout", s.failoverTimeout},
		{"downAfterMilliseconds", s.downAfterMilliseconds}, {"redisPort", s.masterPort},
	} {
		if n, err := strconv.ParseUint(f.value, 10, 31); err != nil || n == 0 {
			return s, fmt.Errorf("sentinel %s %q is not a positive whole number", f.name, f.value)
		}
	}
	for _, f := range []struct{ name, value string }{
		{"resolveHostnames", s.resolveHostnames}, {"announceHostnames", s.announceHostnames},
	} {
		if f.value != "yes" && f.value != "no" {
			return s, fmt.Errorf("sentinel %s must be yes or no, not %q", f.name, f.value)
		}
	}
	if !isConfigWord(s.masterGroup) {
		return s, fmt.Errorf("sentinel masterGroupName %q must be one word of printable characters", s.masterGroup)
	}
	// Checked as written above; configured as the sentinels can reach it.
	s.quorum = strconv.Itoa(int(quorum.Configured))
	return s, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// TLSKeys are the keys of the CA bundle, certificate and key in the TLS Secret: the spec's
// ca, cert and key, by default ca.crt, tls.crt and tls.key (a cert-manager Secret's keys).
func TLSKeys(t *v1beta2.TLSConfig) (ca, cert, key string) { return tlsFiles(t) }

// TLSCertPath is where the pods read the certificate of the TLS Secret, the path redis.conf
// names in tls-cert-file.
func TLSCertPath(t *v1beta2.TLSConfig) string {
	_, cert, _ := tlsFiles(t)
	return tlsDir + "/" + cert
}
