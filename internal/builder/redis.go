package builder

import (
	corev1 "k8s.io/api/core/v1"

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
}

// BuildRedis returns the desired objects of a standalone Redis: StatefulSet <name> (one pod),
// Services <name>, <name>-headless, <name>-additional, <name>-metrics (exporter on), the
// redis.conf ConfigMap and, with a password, the auth Secret.
func BuildRedis(in RedisInput) (*Objects, error) {
	cr := in.CR
	if err := checkCR(cr, cr == nil); err != nil {
		return nil, err
	}
	s := &cr.Spec
	w := &workload{
		owner:                  ownerRef(cr, "Redis"),
		namespace:              cr.Namespace,
		instance:               cr.Name,
		name:                   cr.Name,
		setupType:              SetupStandalone,
		role:                   RoleStandalone,
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
	}
	if err := w.applyKubernetesConfig(&s.KubernetesConfig); err != nil {
		return nil, err
	}
	ref, err := passwordRef(s.KubernetesConfig.ExistingPasswordSecret, in.Password, "kubernetesConfig.redisSecret")
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

	out := &Objects{}
	if ref != nil {
		w.authSecretName = AuthSecretName(cr.Name)
		w.passwordSecret = w.authSecretName
		w.aclOperatorUser = in.ACLOperatorUser
		out.Secrets = append(out.Secrets, authSecret(w.owner, w.namespace, cr.Name, w.setupType,
			w.authSecretName, redisAuthData(in.Password, in.ACLOperatorUser)))
	}
	if s.ACL != nil && s.ACL.Secret != nil {
		out.Secrets = append(out.Secrets, aclSecret(w.owner, w.namespace, cr.Name, w.setupType, in.ACL, in.Password, in.ACLOperatorUser))
	}
	conf, err := w.redisConfFor(s.RedisConfig, true)
	if err != nil {
		return nil, err
	}
	out.ConfigMaps = []*corev1.ConfigMap{w.renderRedisConf(conf)}
	out.add(w)
	return out, nil
}
