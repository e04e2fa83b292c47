package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisInput is a standalone Redis with everything the builders cannot read from it.
type RedisInput struct {
	CR *v1beta2.Redis
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
	// Restore, when set, restores a backup into the pod's data before Redis first starts: the
	// controller sets it only for spec.restore, and only while the StatefulSet is new or was
	// created by that restore.
	Restore *RestoreInput
	// RestoredFrom is the backup the StatefulSet was created from (AnnotationRestoredFrom),
	// kept on it once the restore is done; Restore's BackupName when Restore is set.
	RestoredFrom string
}

// BuildRedis returns the desired objects of a standalone Redis: StatefulSet <name> (one pod),
// Services <name>, <name>-headless, <name>-additional, <name>-metrics (exporter on), the
// redis.conf ConfigMap and, with a password, the auth Secret.
func BuildRedis(in RedisInput) (*Objects, error) {
	cr := in.CR
	if err := checkCR(cr, cr == nil); err != nil {
		return nil, err
	}
	w, err := newRedisServer(cr, "Redis", SetupStandalone, RoleStandalone, &cr.Spec, in.Password)
	if err != nil {
		return nil, err
	}
	if in.Restore != nil {
		if err := in.Restore.check(); err != nil {
			return nil, err
		}
		w.restore, w.restoredFrom = in.Restore, in.Restore.BackupName
	} else {
		w.restoredFrom = in.RestoredFrom
	}
	return w.redisServerObjects(cr.Spec.RedisConfig, in.Password, in.ACL, in.ACLOperatorUser)
}

// newRedisServer resolves the spec fields a standalone Redis and a replication share (a
// replication's spec holds every field of a standalone one) into the workload of their one
// StatefulSet, named after the resource, of one pod; the kind sets what else it has.
func newRedisServer(cr metav1.Object, kind, setupType, role string, s *v1beta2.RedisSpec, password string) (*workload, error) {
	w := &workload{
		owner:                  ownerRef(cr, kind),
		namespace:              cr.GetNamespace(),
		instance:               cr.GetName(),
		name:                   cr.GetName(),
		setupType:              setupType,
		role:                   role,
		replicas:               1,
		server:                 redisServer,
		port:                   DefaultRedisPort,
		podManagementPolicy:    podManagementPolicy(""),
		securityContext:        s.SecurityContext,
		env:                    deref(s.EnvVars),
		hostPort:               s.HostPort,
		nodeSelector:           s.NodeSelector,
		affinity:               s.Affinity,
		tolerations:            deref(s.Tolerations),
		userPodSecurityContext: s.PodSecurityContext,
		priorityClassName:      s.PriorityClassName,
		serviceAccountName:     deref(s.ServiceAccountName),
		terminationGrace:       s.TerminationGracePeriodSeconds,
		tls:                    s.TLS,
		acl:                    s.ACL,
		restartedAt:            restartedAt(cr),
	}
	if err := w.applyKubernetesConfig(&s.KubernetesConfig); err != nil {
		return nil, err
	}
	ref, err := passwordRef(s.KubernetesConfig.ExistingPasswordSecret, password, "kubernetesConfig.redisSecret")
	if err != nil {
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
	w.applyStorage(s.Storage)
	w.readinessProbe, w.livenessProbe = probes(s.ReadinessProbe, s.LivenessProbe)
	if ref != nil {
		w.authSecretName = AuthSecretName(w.instance)
		w.passwordSecret = w.authSecretName
	}
	return w, nil
}

// redisServerObjects returns the objects of a standalone Redis or a replication's Redis: the
// auth Secret (with a password), the ACL Secret (acl.secret), redis.conf and the workload's.
func (w *workload) redisServerObjects(redisConfig *v1beta2.RedisConfig, password, acl string, aclOperatorUser bool) (*Objects, error) {
	out := &Objects{}
	if w.authSecretName != "" {
		w.aclOperatorUser = aclOperatorUser
		out.Secrets = append(out.Secrets, authSecret(w.owner, w.namespace, w.instance, w.setupType,
			w.authSecretName, redisAuthData(password, w.aclOperatorUser)))
	}
	if w.acl != nil && w.acl.Secret != nil {
		out.Secrets = append(out.Secrets, aclSecret(w.owner, w.namespace, w.instance, w.setupType, acl, password, aclOperatorUser))
	}
	conf, err := w.redisConfFor(redisConfig, true)
	if err != nil {
		return nil, err
	}
	out.ConfigMaps = append(out.ConfigMaps, w.renderRedisConf(conf))
	out.add(w)
	return out, nil
}
