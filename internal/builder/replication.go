package builder

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisReplicationInput is a RedisReplication with everything the builders cannot read from it.
type RedisReplicationInput struct {
	CR *v1beta2.RedisReplication
	// Password is the value of the Secret key named by spec.kubernetesConfig.redisSecret; it
	// must be set exactly when that is.
	Password string
	// ACL is the content of the user's ACL file (spec.acl.secret), already checked with
	// redis.ParseACLFile; the pods read it, with the operator's password for the default
	// user, from the Secret ACLSecretName. Ignored without spec.acl.secret.
	ACL string
	// ACLOperatorUser: the ACL file in effect turns the default user off, so the operator adds
	// its own user (redis.OperatorUser) with the password, and replicas (masteruser), the
	// pods' hooks and the exporter log in as it.
	ACLOperatorUser bool
	// SentinelPassword is the embedded sentinels' own password, the value of the Secret key
	// named by spec.sentinel.redisSecret; it must be set exactly when that is.
	SentinelPassword string
	// MasterHost is the address of the current master (its pod IP, or its DNS name with
	// AnnounceHostnames), which embedded sentinels monitor. While it is empty (no master elected yet) no sentinel objects are built; once
	// set, it seeds new sentinel pods only and is kept out of the config hash, so following a
	// failover never restarts the sentinels.
	MasterHost string
	// RetainLegacySentinels keeps the embedded sentinels an earlier version ran
	// (LegacyEmbeddedSentinelObjects) from being pruned: the controller retires them itself,
	// once the sentinels built here monitor the master.
	RetainLegacySentinels bool
	// AnnounceHostnames: the sentinels watching the replication name instances by DNS name
	// (ReplicationNamesHosts), so each pod announces its own (replica-announce-ip) and the
	// sentinels list, and fail over to, replicas by that name rather than their pod IP.
	AnnounceHostnames bool
	// DNSDomain is the cluster DNS domain of those names, "" for DefaultDNSDomain.
	DNSDomain string
	// Restore, when set, restores a backup into pod 0 before its Redis first starts, as for a
	// standalone Redis (RedisInput.Restore); the other pods skip it and sync from pod 0, which
	// the controller makes the first master. RestoredFrom is as RedisInput's.
	Restore      *RestoreInput
	RestoredFrom string
	// Restored: the replication was Ready on the restored data; the restore state ConfigMap
	// then tells every pod started later to skip the restore.
	Restored bool
}

// BuildRedisReplication returns the desired objects of a RedisReplication: StatefulSet <name>,
// Services <name>, <name>-headless, <name>-additional, <name>-master and <name>-replica
// (selecting redis-role master and slave), <name>-metrics (exporter on), PDB <name>
// (pdb.enabled), the redis.conf ConfigMap and, with a password, the auth Secret. With
// spec.sentinel and a known master it adds the sentinels: StatefulSet <name>-s, Services
// <name>-s, <name>-s-hl (headless), <name>-s-additional, the sentinel.conf ConfigMap and the
// sentinel auth Secret <name>-s-auth; they monitor master group mymaster.
//
// No pod is rendered as a replica of another: which pod is master changes at run time, and
// the controller sets replication with REPLICAOF. Each pod starts as a replica of no master
// (redis.NoMasterHost), so that it serves nothing to replicas before it is told its role.
func BuildRedisReplication(in RedisReplicationInput) (*Objects, error) {
	cr := in.CR
	if err := checkCR(cr, cr == nil); err != nil {
		return nil, err
	}
	s := &cr.Spec
	if s.Size == nil || *s.Size < 1 {
		return nil, errors.New("clusterSize must be at least 1")
	}
	w, err := newRedisServer(cr, "RedisReplication", SetupReplication, RoleReplication, replicationServerSpec(s), in.Password)
	if err != nil {
		return nil, err
	}
	w.replicas = *s.Size
	w.podManagementPolicy = podManagementPolicy(s.PodManagementPolicy)
	w.topologySpread = s.TopologySpreadConstraints
	w.pdb = s.PodDisruptionBudget
	w.handOverOnStop = true
	if s.KubernetesConfig.UpdateStrategy.Type == "" {
		// The operator rolls the pods itself, replicas first and the master last, after handing
		// its role to an updated replica; a strategy the user sets explicitly is kept.
		w.updateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}
	if in.Restore != nil {
		if err := in.Restore.check(); err != nil {
			return nil, err
		}
		w.restore, w.restoredFrom, w.restoreFirstMaster = in.Restore, in.Restore.BackupName, true
	} else {
		w.restoredFrom = in.RestoredFrom
	}
	if in.AnnounceHostnames {
		if !ReplicationPodsResolve(cr) {
			return nil, errors.New("pods can announce their DNS names only while the headless Service that makes them resolve is enabled")
		}
		w.hostnameSuffix = podDomainSuffix(w.name, cr.Namespace, in.DNSDomain)
	}
	out, err := w.redisServerObjects(s.RedisConfig, in.Password, in.ACL, in.ACLOperatorUser)
	if err != nil {
		return nil, err
	}
	if w.restore != nil {
		out.ConfigMaps = append(out.ConfigMaps, w.restoreStateConfigMap(in.Restored))
	}
	out.Services = append(out.Services,
		roleService(w, MasterServiceName(cr.Name), RedisRoleMaster, w.selectorLabels(), w.labels()),
		roleService(w, ReplicaServiceName(cr.Name), RedisRoleSlave, w.selectorLabels(), w.labels()),
	)
	if in.RetainLegacySentinels {
		if s.Sentinel == nil {
			return nil, errors.New("legacy sentinels can be retained only while spec.sentinel is set")
		}
		out.Retained = LegacyEmbeddedSentinelObjects(cr.Name)
	}
	if s.Sentinel == nil {
		if in.SentinelPassword != "" {
			return nil, errors.New("a sentinel password was given but spec.sentinel is not set")
		}
		return out, nil
	}
	if in.MasterHost == "" {
		return out, nil
	}
	if err := embeddedSentinel(cr, w, out, in); err != nil {
		return nil, err
	}
	return out, nil
}

// replicationServerSpec is the part of a replication's spec a standalone Redis has too, for
// newRedisServer.
func replicationServerSpec(s *v1beta2.RedisReplicationSpec) *v1beta2.RedisSpec {
	return &v1beta2.RedisSpec{
		KubernetesConfig:              s.KubernetesConfig,
		HostPort:                      s.HostPort,
		RedisExporter:                 s.RedisExporter,
		RedisConfig:                   s.RedisConfig,
		Storage:                       s.Storage,
		NodeSelector:                  s.NodeSelector,
		PodSecurityContext:            s.PodSecurityContext,
		SecurityContext:               s.SecurityContext,
		PriorityClassName:             s.PriorityClassName,
		Affinity:                      s.Affinity,
		Tolerations:                   s.Tolerations,
		TLS:                           s.TLS,
		ACL:                           s.ACL,
		ReadinessProbe:                s.ReadinessProbe,
		LivenessProbe:                 s.LivenessProbe,
		InitContainer:                 s.InitContainer,
		Sidecars:                      s.Sidecars,
		ServiceAccountName:            s.ServiceAccountName,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		EnvVars:                       s.EnvVars,
	}
}

// embeddedSentinel adds the sentinels of a RedisReplication. They share its TLS settings, since
// they must speak TLS to the Redis they monitor.
func embeddedSentinel(cr *v1beta2.RedisReplication, redis *workload, out *Objects, in RedisReplicationInput) error {
	sn := cr.Spec.Sentinel
	if sn.Size < 1 {
		return errors.New("sentinel.size must be at least 1")
	}
	if sn.Image == "" {
		return errors.New("sentinel.image is required")
	}
	if _, err := passwordRef(sn.ExistingPasswordSecret, in.SentinelPassword, "sentinel.redisSecret"); err != nil {
		return err
	}
	w := &workload{
		owner:                  redis.owner,
		namespace:              cr.Namespace,
		instance:               cr.Name,
		name:                   EmbeddedSentinelStatefulSetName(cr.Name),
		headlessName:           EmbeddedSentinelHeadlessServiceName(cr.Name),
		setupType:              SetupSentinel,
		role:                   RoleSentinel,
		replicas:               sn.Size,
		server:                 sentinelServer,
		port:                   DefaultSentinelPort,
		image:                  sn.Image,
		pullPolicy:             pullPolicy(sn.ImagePullPolicy, sn.Image),
		imagePullSecrets:       deref(sn.ImagePullSecrets),
		resources:              sn.Resources,
		updateStrategy:         updateStrategy(sn.UpdateStrategy),
		pvcRetention:           sn.PersistentVolumeClaimRetentionPolicy,
		minReadySeconds:        deref(sn.MinReadySeconds),
		services:               resolveServices(sn.Service),
		ignoreAnnotations:      sn.IgnoreAnnotations,
		podManagementPolicy:    podManagementPolicy(""),
		securityContext:        sn.SecurityContext,
		nodeSelector:           sn.NodeSelector,
		affinity:               sn.Affinity,
		tolerations:            deref(sn.Tolerations),
		topologySpread:         sn.TopologySpreadConstraints,
		userPodSecurityContext: sn.PodSecurityContext,
		priorityClassName:      sn.PriorityClassName,
		serviceAccountName:     deref(sn.ServiceAccountName),
		terminationGrace:       sn.TerminationGracePeriodSeconds,
		tls:                    cr.Spec.TLS,
		restartedAt:            restartedAt(cr),
	}
	w.readinessProbe, w.livenessProbe = probes(nil, nil)
	settings, err := resolveSentinelSettings(sn.SentinelConfig, EmbeddedMasterGroupName, i32(DefaultRedisPort), EmbeddedSentinelQuorum(cr))
	if err != nil {
		return err
	}
	return finishSentinel(w, out, settings, EmbeddedSentinelAuthSecretName(cr.Name), in.MasterHost, in.SentinelPassword, in.Password)
}
