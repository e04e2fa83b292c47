package builder

import (
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

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
	if w.addressGated() {
		// First: nothing of the pod's own runs before its address is free.
		out = append(out, w.addressGateContainer())
	}
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
	if w.server == redisServer && w.restore != nil {
		// After the user's own init container, which may prepare the volume's permissions.
		out = append(out, w.restoreContainer())
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
