package builder

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// RedisClusterInput is a RedisCluster with everything the builders cannot read from it.
type RedisClusterInput struct {
	CR *v1beta2.RedisCluster
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
	// Pods, when set, are the pod counts the StatefulSets get instead of the spec's: a scale-in
	// keeps the pods it removes until their slots have moved to the others.
	Pods *ClusterPods
	// NodePorts (serviceType NodePort) are the node ports of the per-pod Services, by pod
	// name, read from the Services ClusterNodePortServices built: every pod of Pods needs its
	// pair, so the controller creates those Services first.
	NodePorts map[string]NodePorts
	// ServicePods (serviceType NodePort), when larger than Pods, keeps the per-pod Services of
	// pods a scale-in removed that have not stopped yet: they are reached until they are gone.
	ServicePods *ClusterPods
	// DNSDomain is the cluster's DNS domain, the end of the pods' names; "" is cluster.local.
	DNSDomain string
	// Restore, when set (its Shards by leader ordinal), restores a backup into the leader
	// pods before their Redis first starts: leader i restores shard i, and claims the slots it
	// finds keys of. The followers restore nothing: they sync from their masters. RestoredFrom
	// is as RedisInput's, on the leader StatefulSet.
	Restore      *RestoreInput
	RestoredFrom string
	// Restored: the cluster was Ready on the restored data; the restore state ConfigMap then
	// tells every leader pod started later to skip the restore.
	Restored bool
}

// ClusterPods are the pod counts of the two StatefulSets of a RedisCluster.
type ClusterPods struct {
	Leaders, Followers int32
}

// BuildRedisCluster returns the desired objects of a RedisCluster. Per role R in leader and
// follower: StatefulSet <name>-R, Services <name>-R, -R-headless, -R-additional, -R-metrics
// (exporter on), PDB <name>-R (pdb.enabled) and ConfigMap <name>-R-config; plus the Service
// <name>-master and, with a password, the auth Secret shared by both roles.
//
// With zero followers (a cluster of leaders only) the follower objects are built all the same,
// the StatefulSet with 0 replicas: scripts and tools expect both StatefulSets of a cluster to
// exist, and scaling followers out again is then only a change of replicas.
//
// Role settings (redisLeader, redisFollower) win over the top-level ones field by field:
// replicas (default clusterSize), resources (role, then spec.resources, then
// kubernetesConfig.resources) and each redisConfig field.
func BuildRedisCluster(in RedisClusterInput) (*Objects, error) {
	cr := in.CR
	if err := checkCR(cr, cr == nil); err != nil {
		return nil, err
	}
	if cr.Spec.Size == nil || *cr.Spec.Size < 1 {
		return nil, errors.New("clusterSize must be at least 1")
	}
	ref, err := passwordRef(cr.Spec.KubernetesConfig.ExistingPasswordSecret, in.Password, "kubernetesConfig.redisSecret")
	if err != nil {
		return nil, err
	}
	out := &Objects{}
	owner := ownerRef(cr, "RedisCluster")
	authName := ""
	if ref != nil {
		authName = AuthSecretName(cr.Name)
		out.Secrets = append(out.Secrets, authSecret(owner, cr.Namespace, cr.Name, SetupCluster,
			authName, redisAuthData(in.Password, in.ACLOperatorUser)))
	}
	if acl := cr.Spec.ACL; acl != nil && acl.Secret != nil {
		out.Secrets = append(out.Secrets, aclSecret(owner, cr.Namespace, cr.Name, SetupCluster, in.ACL, in.Password, in.ACLOperatorUser))
	}
	pods := ClusterPods{Leaders: LeaderReplicas(cr), Followers: FollowerReplicas(cr)}
	if in.Pods != nil {
		pods = *in.Pods
	}
	roles := []struct {
		name     string
		replicas int32
		spec     *v1beta2.RedisClusterRole
	}{
		{RoleLeader, pods.Leaders, &cr.Spec.RedisLeader.RedisClusterRole},
		{RoleFollower, pods.Followers, &cr.Spec.RedisFollower.RedisClusterRole},
	}
	if pods.Leaders < 1 {
		return nil, errors.New("a cluster needs at least one leader")
	}
	if pods.Followers < 0 {
		return nil, errors.New("redisFollower.replicas must not be negative")
	}
	servicePods := pods
	if sp := in.ServicePods; sp != nil {
		servicePods = ClusterPods{Leaders: max(pods.Leaders, sp.Leaders), Followers: max(pods.Followers, sp.Followers)}
	}
	if err := checkClusterRestore(in.Restore); err != nil {
		return nil, err
	}
	var leader *workload
	for _, r := range roles {
		w, cm, err := clusterRole(cr, owner, r.name, r.replicas, r.spec, authName, in.DNSDomain)
		if err != nil {
			return nil, err
		}
		if leader == nil {
			leader = w
			leaderRestore(w, in, out)
		}
		w.aclOperatorUser = in.ACLOperatorUser
		out.ConfigMaps = append(out.ConfigMaps, cm)
		out.add(w)
		if w.nodePorts {
			for i := range r.replicas {
				if _, ok := in.NodePorts[PodName(w.name, i)]; !ok {
					return nil, fmt.Errorf("the node ports of pod %s are not known yet: its Service must exist first", PodName(w.name, i))
				}
			}
			count := servicePods.Leaders
			if r.name == RoleFollower {
				count = servicePods.Followers
			}
			out.Services = append(out.Services, w.podServices(count)...)
			out.ConfigMaps = append(out.ConfigMaps, w.nodePortsConfigMap(in.NodePorts))
		}
	}
	// <name>-master reaches whichever pods are masters now, of either StatefulSet.
	selector := map[string]string{LabelInstance: cr.Name, LabelSetupType: SetupCluster, LabelCluster: cr.Name}
	labels := map[string]string{LabelInstance: cr.Name, LabelSetupType: SetupCluster, LabelManagedBy: ManagedByValue, LabelCluster: cr.Name}
	out.Services = append(out.Services, roleService(leader, MasterServiceName(cr.Name), RedisRoleMaster, selector, labels))
	if ClusterNodePorts(cr) {
		// Written by the controller from what the nodes serve, not built here.
		out.Retained = append(out.Retained, "ConfigMap/"+ClusterAddressHoldersName(cr.Name))
	}
	return out, nil
}

// checkClusterRestore refuses a restore a cluster's leaders could not run.
func checkClusterRestore(in *RestoreInput) error {
	if in == nil {
		return nil
	}
	if err := in.check(); err != nil {
		return err
	}
	if len(in.Shards) == 0 {
		return errors.New("restore: a cluster restores one snapshot per shard, and none is given")
	}
	return nil
}

// leaderRestore gives the leader workload the restore of in (checkClusterRestore), with its
// state ConfigMap, if any.
func leaderRestore(w *workload, in RedisClusterInput, out *Objects) {
	if in.Restore == nil {
		w.restoredFrom = in.RestoredFrom
		return
	}
	w.restore, w.restoredFrom = in.Restore, in.Restore.BackupName
	out.ConfigMaps = append(out.ConfigMaps, w.restoreStateConfigMap(in.Restored))
}

func clusterRole(cr *v1beta2.RedisCluster, owner metav1.OwnerReference, role string, replicas int32, r *v1beta2.RedisClusterRole,
	authName, dnsDomain string) (*workload, *corev1.ConfigMap, error) {
	s := &cr.Spec
	w := &workload{
		owner:                  owner,
		namespace:              cr.Namespace,
		instance:               cr.Name,
		name:                   ClusterStatefulSetName(cr.Name, role),
		setupType:              SetupCluster,
		role:                   role,
		replicas:               replicas,
		server:                 redisServer,
		port:                   ClusterPort(cr),
		busPort:                ClusterBusPort(cr),
		podManagementPolicy:    podManagementPolicy(s.PodManagementPolicy),
		securityContext:        r.SecurityContext,
		env:                    deref(s.EnvVars),
		hostNetwork:            s.HostNetwork,
		hostPort:               s.HostPort,
		nodeSelector:           r.NodeSelector,
		affinity:               r.Affinity,
		tolerations:            deref(r.Tolerations),
		topologySpread:         r.TopologySpreadConstraints,
		userPodSecurityContext: s.PodSecurityContext,
		priorityClassName:      s.PriorityClassName,
		serviceAccountName:     deref(s.ServiceAccountName),
		terminationGrace:       r.TerminationGracePeriodSeconds,
		tls:                    s.TLS,
		acl:                    s.ACL,
		pdb:                    r.PodDisruptionBudget,
		authSecretName:         authName,
		passwordSecret:         authName,
		handOverOnStop:         true,
		podLabels:              map[string]string{LabelCluster: cr.Name},
		restartedAt:            restartedAt(cr),
	}
	if err := w.applyKubernetesConfig(&s.KubernetesConfig); err != nil {
		return nil, nil, err
	}
	w.nodePorts = ClusterNodePorts(cr)
	if ClusterAnnouncesHostnames(cr) {
		w.hostnameSuffix = podDomainSuffix(w.name, cr.Namespace, dnsDomain)
	}
	if s.KubernetesConfig.UpdateStrategy.Type == "" {
		// The operator rolls the pods itself: replicas first, then each master once a replica
		// in sync has taken its shard over; a strategy the user sets explicitly is kept.
		w.updateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}
	if w.pvcRetention == nil {
		// A scale-in removes pods only once their slots have moved: their volumes hold nothing
		// of value, and a node identity (nodes.conf) kept on them would come back stale, as a
		// replica that cannot be made an empty master again, at the next scale-out.
		w.pvcRetention = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	}
	if s.HostNetwork && s.HostPort != nil && portNumber(*s.HostPort) != w.port {
		return nil, nil, fmt.Errorf("hostPort %d differs from port %d: on the host network Redis listens on the host at port", *s.HostPort, w.port)
	}
	switch {
	case r.Resources != nil:
		w.resources = r.Resources
	case s.Resources != nil:
		w.resources = s.Resources
	}
	if err := w.applyExporter(s.RedisExporter); err != nil {
		return nil, nil, err
	}
	if err := w.applyInitContainer(s.InitContainer); err != nil {
		return nil, nil, err
	}
	if err := w.applySidecars(s.Sidecars); err != nil {
		return nil, nil, err
	}
	nodesDir := dataDir
	if st := s.Storage; st != nil {
		w.applyStorage(&st.Storage)
		if st.NodeConfVolume {
			// nodes.conf is the node's identity; on its own volume it survives even without a
			// data volume. Without one it lives beside the data.
			w.nodeConfClaim = nodeConfClaim(st)
			nodesDir = nodeConfDir
		}
	}
	w.readinessProbe, w.livenessProbe = probes(r.ReadinessProbe, r.LivenessProbe)

	conf, err := w.redisConfFor(mergeRedisConfig(s.RedisConfig, r.RedisConfig), ClusterPersistence(cr))
	if err != nil {
		return nil, nil, err
	}
	conf.cluster = true
	conf.nodesConfDir = nodesDir
	w.nodesConfDir = nodesDir
	// Behind node ports clients are outside the cluster's DNS: they are sent to node IPs.
	w.preferHostname = s.TLS != nil && !w.nodePorts && w.hostnameSuffix != ""
	return w, w.renderRedisConf(conf), nil
}

// mergeRedisConfig lays the role's redisConfig over the top-level one, field by field.
func mergeRedisConfig(top, role *v1beta2.RedisConfig) *v1beta2.RedisConfig {
	if role == nil {
		return top
	}
	if top == nil {
		return role
	}
	out := *top.DeepCopy()
	if role.AdditionalRedisConfig != nil {
		out.AdditionalRedisConfig = role.AdditionalRedisConfig
	}
	if role.DynamicConfig != nil {
		out.DynamicConfig = role.DynamicConfig
	}
	if role.MaxMemoryPercentOfLimit != nil {
		out.MaxMemoryPercentOfLimit = role.MaxMemoryPercentOfLimit
	}
	return &out
}
