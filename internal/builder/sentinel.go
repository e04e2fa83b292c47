package builder

import (
	"errors"
	"fmt"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisSentinelInput is a RedisSentinel with everything the builders cannot read from it.
type RedisSentinelInput struct {
	CR *v1beta2.RedisSentinel
	// Password is the sentinels' own password, the value of the Secret key named by
	// spec.kubernetesConfig.redisSecret; it must be set exactly when that is.
	Password string
	// MasterPassword is the password of the monitored Redis, resolved from
	// spec.redisSentinelConfig.redisReplicationPassword; empty when it needs none.
	MasterPassword string
	// MasterHost is the address of the monitored master now (its pod IP, or a name when
	// resolveHostnames is yes). Required when the spec names a RedisReplication, empty when it
	// names none (the sentinels then start monitoring nothing). It seeds new sentinel pods
	// only and is kept out of the config hash, so following a failover never restarts the
	// sentinels.
	MasterHost string
}

// BuildRedisSentinel returns the desired objects of a RedisSentinel: StatefulSet
// <name>-sentinel, Services <name>-sentinel, -sentinel-headless, -sentinel-additional,
// -sentinel-metrics (exporter on), PDB <name>-sentinel (pdb.enabled), the sentinel.conf
// ConfigMap and, with a password, the sentinel auth Secret.
func BuildRedisSentinel(in RedisSentinelInput) (*Objects, error) {
	cr := in.CR
	if err := checkCR(cr, cr == nil); err != nil {
		return nil, err
	}
	s := &cr.Spec
	c := s.RedisSentinelConfig
	if c == nil {
		c = &v1beta2.RedisSentinelConfig{}
	}
	if in.MasterPassword != "" && c.RedisReplicationPassword == nil {
		return nil, errors.New("a master password was given but redisSentinelConfig.redisReplicationPassword is not set")
	}
	replicas := SentinelReplicas(cr)
	if replicas < 1 {
		return nil, errors.New("clusterSize must be at least 1")
	}
	w := &workload{
		owner:                  ownerRef(cr, "RedisSentinel"),
		namespace:              cr.Namespace,
		instance:               cr.Name,
		name:                   SentinelStatefulSetName(cr.Name),
		setupType:              SetupSentinel,
		role:                   RoleSentinel,
		replicas:               replicas,
		server:                 sentinelServer,
		port:                   DefaultSentinelPort,
		podManagementPolicy:    podManagementPolicy(s.PodManagementPolicy),
		securityContext:        s.SecurityContext,
		env:                    deref(s.EnvVars),
		hostPort:               s.HostPort,
		nodeSelector:           s.NodeSelector,
		affinity:               s.Affinity,
		tolerations:            deref(s.Tolerations),
		topologySpread:         s.TopologySpreadConstraints,
		userPodSecurityContext: s.PodSecurityContext,
		priorityClassName:      s.PriorityClassName,
		serviceAccountName:     deref(s.ServiceAccountName),
		terminationGrace:       s.TerminationGracePeriodSeconds,
		tls:                    s.TLS,
		pdb:                    s.PodDisruptionBudget,
		restartedAt:            restartedAt(cr),
	}
	if err := w.applyKubernetesConfig(&s.KubernetesConfig); err != nil {
		return nil, err
	}
	if _, err := passwordRef(s.KubernetesConfig.ExistingPasswordSecret, in.Password, "kubernetesConfig.redisSecret"); err != nil {
		return nil, err
	}
	if err := w.applyExporter(s.RedisExporter); err != nil {
		return nil, err
	}
	if err := w.applyInitContainer(s.InitContainer); err != nil {
		return nil, err
	}
	if err := w.applySidecars(s.Sidecars); err != nil {
		return nil, err
	}
	if s.VolumeMount != nil {
		w.extraVolumes = *s.VolumeMount
	}
	w.readinessProbe, w.livenessProbe = probes(s.ReadinessProbe, s.LivenessProbe)
	settings, err := resolveSentinelSettings(c.SentinelConfig, c.MasterGroupName, c.RedisPort, RedisSentinelQuorum(cr))
	if err != nil {
		return nil, err
	}
	// Without a RedisReplication to monitor the sentinels run with no master until the user
	// names one; the monitoring settings are still checked, to be refused now rather than then.
	settings.unmonitored = !SentinelMonitors(cr)
	out := &Objects{}
	if err := finishSentinel(w, out, settings, SentinelAuthSecretName(cr.Name), in.MasterHost, in.Password, in.MasterPassword); err != nil {
		return nil, err
	}
	return out, nil
}

// finishSentinel renders sentinel.conf and the auth Secret of a sentinel workload and adds
// them and the workload's objects to out.
func finishSentinel(w *workload, out *Objects, settings sentinelSettings, authSecretName, masterHost, password, masterPassword string) error {
	switch {
	case settings.unmonitored && (masterHost != "" || masterPassword != ""):
		return errors.New("a monitored master's address or password was given but the spec names no RedisReplication to monitor")
	case !settings.unmonitored && !isConfigWord(masterHost):
		return fmt.Errorf("the monitored master's address %q is missing or not one word", masterHost)
	}
	if err := CheckSentinelMasterPassword(masterPassword); err != nil {
		return err
	}
	w.additionalConfigMap = settings.additionalConfigMap
	if password != "" || masterPassword != "" {
		w.authSecretName = authSecretName
		data := map[string]string{SentinelAuthKey: sentinelAuthFile(settings.masterGroup, password, masterPassword)}
		if password != "" && w.exporter != nil {
			// The sentinel's own password alone, trimmed, for its exporter: sentinel.conf's
			// requirepass line is no value a variable can take.
			w.passwordSecret = authSecretName
			data[RedisPasswordKey] = password
		}
		out.Secrets = append(out.Secrets, authSecret(w.owner, w.namespace, w.instance, w.setupType, w.authSecretName, data))
	}
	w.sentinelScript = sentinelInitScript(w.additionalConfigMap != "", w.authSecretName != "")
	conf := sentinelConf{port: w.port, settings: settings, masterHost: masterHost, tls: w.tls}
	hashed := conf
	hashed.masterHost = ""
	w.configMapName = ConfigMapName(w.name)
	w.configHash = hashOf(hashed.render())
	out.ConfigMaps = append(out.ConfigMaps, w.configMap(SentinelConfKey, conf.render()))
	out.add(w)
	return nil
}

// CheckSentinelMasterPassword refuses a monitored master's password that a sentinel cannot
// keep: when it rewrites its config (at start and on every failover) Redis (7.0 at least)
// writes "sentinel auth-pass" unquoted, and on its next start cannot parse a value with
// whitespace or quotes, so the sentinel would crash-loop after its first restart.
func CheckSentinelMasterPassword(pw string) error {
	for i := 0; i < len(pw); i++ {
		if c := pw[i]; c <= ' ' || c == 0x7f || c == '"' || c == '\'' {
			return errors.New("the monitored Redis password contains whitespace, a quote or a control character, " +
				"which sentinel writes back unquoted when it rewrites its config and then cannot read on restart; " +
				"use a password without them")
		}
	}
	return nil
}

// Sentinels by DNS name. With resolve-hostnames and announce-hostnames both yes a sentinel
// accepts a name wherever it takes an address and reports instances by the name it was given
// (SENTINEL get-master-addr-by-name included), so clients that verify the server's
// certificate against the name they dial can use one that names only DNS names. For that to
// last across failovers the master must be monitored by its pod's DNS name (the seed, and
// what the operator tells Redis in REPLICAOF and FAILOVER TO) and every replica must announce
// its own (replica-announce-ip): sentinels learn replicas, and promote them, by what the
// master's INFO lists.

// sentinelsNameHosts tells whether sentinels with this config name instances by DNS name.
func sentinelsNameHosts(c v1beta2.SentinelConfig) bool {
	return c.ResolveHostnames == "yes" && c.AnnounceHostnames == "yes"
}

// RedisSentinelNamesHosts tells whether a RedisSentinel's sentinels name instances by DNS
// name; they monitor the master by it only while the replication's pod names resolve
// (ReplicationPodsResolve).
func RedisSentinelNamesHosts(cr *v1beta2.RedisSentinel) bool {
	c := cr.Spec.RedisSentinelConfig
	return c != nil && sentinelsNameHosts(c.SentinelConfig)
}

// EmbeddedSentinelsNameHosts tells whether a RedisReplication's embedded sentinels name
// instances by DNS name.
func EmbeddedSentinelsNameHosts(cr *v1beta2.RedisReplication) bool {
	return cr.Spec.Sentinel != nil && sentinelsNameHosts(cr.Spec.Sentinel.SentinelConfig)
}

// ReplicationPodsResolve tells whether the pods of a RedisReplication have DNS names: while
// its headless Service, which governs the StatefulSet, exists.
func ReplicationPodsResolve(cr *v1beta2.RedisReplication) bool {
	return resolveServices(cr.Spec.KubernetesConfig.Service).headless.enabled
}

// ReplicationNamesHosts tells whether the pods of a RedisReplication are known to the
// sentinels watching it by their DNS names (ReplicationPodFQDN): its embedded sentinels or a
// RedisSentinel naming it (sentinels) name instances so, and the names resolve.
func ReplicationNamesHosts(cr *v1beta2.RedisReplication, sentinels []v1beta2.RedisSentinel) bool {
	if !ReplicationPodsResolve(cr) {
		return false
	}
	if EmbeddedSentinelsNameHosts(cr) {
		return true
	}
	for i := range sentinels {
		if RedisSentinelNamesHosts(&sentinels[i]) {
			return true
		}
	}
	return false
}

// ReplicationPodFQDN is the DNS name of a pod of the RedisReplication crName.
func ReplicationPodFQDN(pod, crName, namespace, domain string) string {
	return PodFQDN(pod, crName, namespace, domain)
}
