package builder

// Label keys and values that users' Services, dashboards and scripts select on; they are part
// of the compatibility contract and must not change.
const (
	LabelApp       = "app"
	LabelSetupType = "redis_setup_type"
	LabelRole      = "role"
	// LabelRedisRole is kept current on pods by the controller, never set by the builders:
	// a pod template carrying it would reset it on every pod re-creation.
	LabelRedisRole = "redis-role"

	// LabelInstance names the custom resource an object belongs to. It is not part of any
	// selector (StatefulSet selectors are immutable), but lets a controller list everything it
	// owns for one CR, and lets the cluster's -master Service tell two clusters apart.
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "redis-operator"

	// LabelCluster (the RedisCluster's name) is on a cluster's pods and on its -master
	// Service, which selects on it, as the replaced operator's are: users' selectors and
	// NetworkPolicies use it. Pod templates carry it, not the StatefulSets' immutable
	// selectors; the controller also puts it on running pods, with redis-role.
	LabelCluster = "cluster"

	SetupStandalone  = "standalone"
	SetupCluster     = "cluster"
	SetupReplication = "replication"
	SetupSentinel    = "sentinel"

	RoleStandalone  = "standalone"
	RoleLeader      = "leader"
	RoleFollower    = "follower"
	RoleReplication = "replication"
	RoleSentinel    = "sentinel"

	RedisRoleMaster = "master"
	RedisRoleSlave  = "slave"

	// LabelComponent marks the metrics Services, with ComponentMetrics; ServiceMonitors select
	// on it.
	LabelComponent   = "app.kubernetes.io/component"
	ComponentMetrics = "metrics"

	// AnnotationManaged ("true") and AnnotationInstance (the resource's name) mark the
	// StatefulSets, Services and pods the operator made; tools that find them so rely on both.
	AnnotationManaged  = "redis.opstreelabs.in"
	AnnotationInstance = "redis.opstreelabs.instance"
	// AnnotationPrometheusScrape ("true") and AnnotationPrometheusPort (the exporter port) on
	// every Service let annotation-driven Prometheus scrape configs find the exporters.
	AnnotationPrometheusScrape = "prometheus.io/scrape"
	AnnotationPrometheusPort   = "prometheus.io/port"

	// AnnotationConfigHash on the pod template holds a digest of the rendered configuration, so
	// that a changed redis.conf rolls the pods (they read it only at start). Parts applied at run
	// time (dynamicConfig, the monitored master's address) and secret values are left out of it.
	AnnotationConfigHash = "redis.opstreelabs.in/config-hash"
)

// Keys of the data the builders render.
const (
	// RedisConfKey is the ConfigMap key holding redis.conf.
	RedisConfKey = "redis.conf"
	// SentinelConfKey is the ConfigMap key holding the sentinel.conf template.
	SentinelConfKey = "sentinel.conf"
	// RedisAuthKey is the auth Secret key holding requirepass/masterauth for redis-server.
	RedisAuthKey = "redis-password.conf"
	// RedisPasswordKey is the auth Secret key holding the bare password, for redis-cli in the
	// pod's preStop hook: a file follows a rotation, an environment variable would not.
	RedisPasswordKey = "redis-password"
	// RedisUserKey is the auth Secret key holding the user redis-cli logs in as in the hook:
	// "default", or the operator's own ACL user when the ACL file turns the default one off.
	RedisUserKey = "redis-user"
	// SentinelAuthKey is the auth Secret key holding requirepass and auth-pass for sentinels.
	SentinelAuthKey = "sentinel-auth.conf"
	// AdditionalRedisConfKey is the key read from the user's redisConfig.additionalRedisConfig
	// ConfigMap.
	AdditionalRedisConfKey = "redis-additional.conf"
	// ACLFileKey is the key of the user's ACL Secret that becomes the aclfile.
	ACLFileKey = "user.acl"
)

// ClusterStatefulSetName is the StatefulSet (and Service base) name of a RedisCluster role.
func ClusterStatefulSetName(crName, role string) string { return crName + "-" + role }

// SentinelStatefulSetName is the StatefulSet (and Service base) name of a RedisSentinel.
func SentinelStatefulSetName(crName string) string { return crName + "-sentinel" }

// EmbeddedSentinelStatefulSetName is the StatefulSet (and Service base) name of the sentinels
// embedded in a RedisReplication (spec.sentinel).
func EmbeddedSentinelStatefulSetName(crName string) string { return crName + "-s" }

// EmbeddedSentinelHeadlessServiceName is the governing Service of the embedded sentinels, the
// name clients are given in the replication's status.connectionInfo.
func EmbeddedSentinelHeadlessServiceName(crName string) string { return crName + "-s-hl" }

// EmbeddedSentinelAuthSecretName holds the embedded sentinels' password directives.
func EmbeddedSentinelAuthSecretName(crName string) string { return crName + "-s-auth" }

// LegacyEmbeddedSentinelStatefulSetName is where earlier versions of this operator ran the
// sentinels embedded in a RedisReplication; they are replaced by EmbeddedSentinelStatefulSetName
// once the new sentinels monitor the master.
func LegacyEmbeddedSentinelStatefulSetName(crName string) string { return crName + "-sentinel" }

// LegacyEmbeddedSentinelObjects lists, as "Kind/name", the objects earlier versions made for
// the embedded sentinels of the RedisReplication crName.
func LegacyEmbeddedSentinelObjects(crName string) []string {
	sts := LegacyEmbeddedSentinelStatefulSetName(crName)
	return []string{
		"StatefulSet/" + sts,
		"Service/" + sts,
		"Service/" + HeadlessServiceName(sts),
		"Service/" + AdditionalServiceName(sts),
		"ConfigMap/" + ConfigMapName(sts),
		"Secret/" + SentinelAuthSecretName(crName),
	}
}

// HeadlessServiceName is the governing Service of the StatefulSet named stsName; pods resolve as
// <pod>.<headless>.<namespace>.svc.
func HeadlessServiceName(stsName string) string { return stsName + "-headless" }

// AdditionalServiceName is the optional second client Service of a workload.
func AdditionalServiceName(stsName string) string { return stsName + "-additional" }

// MetricsServiceName fronts the exporter sidecars of a workload.
func MetricsServiceName(stsName string) string { return stsName + "-metrics" }

// MasterServiceName selects the pods labelled redis-role=master (replication and cluster).
func MasterServiceName(crName string) string { return crName + "-master" }

// ReplicaServiceName selects the pods labelled redis-role=slave (replication).
func ReplicaServiceName(crName string) string { return crName + "-replica" }

// ConfigMapName holds the rendered configuration of the StatefulSet named stsName. Each
// StatefulSet gets its own, because cluster roles may be configured apart.
func ConfigMapName(stsName string) string { return stsName + "-config" }

// RestoreStateConfigMapName is the ConfigMap, owned by a restored RedisReplication, whose key
// RestoreDoneKey the controller sets once the replication is Ready on the restored data: the
// restore init container of any pod started after that finds it and skips.
func RestoreStateConfigMapName(stsName string) string { return stsName + "-restore" }

// AuthSecretName is the Secret, owned by the CR, that holds the redis-server password
// directives (key RedisAuthKey).
func AuthSecretName(crName string) string { return crName + "-redis-auth" }

// SentinelAuthSecretName is the Secret, owned by the CR, that holds the sentinel password
// directives (key SentinelAuthKey).
func SentinelAuthSecretName(crName string) string { return crName + "-sentinel-auth" }

// PodName is the name of the pod with the given ordinal of the StatefulSet named stsName.
func PodName(stsName string, ordinal int32) string {
	return stsName + "-" + itoa(int64(ordinal))
}

// PodDNSName is the stable in-cluster DNS name of a pod of a StatefulSet built here; it
// resolves only while the headless Service is enabled (the default).
func PodDNSName(stsName string, ordinal int32, namespace string) string {
	return PodName(stsName, ordinal) + "." + HeadlessServiceName(stsName) + "." + namespace + ".svc"
}

// StatefulSetNamesOf lists every StatefulSet a resource of the given kind (Redis,
// RedisCluster, RedisReplication, RedisSentinel) and name may have, whatever its spec: what
// its deletion cleans up is found from these names, never by building from a spec that may
// not build.
func StatefulSetNamesOf(kind, crName string) []string {
	switch kind {
	case "Redis":
		return []string{crName}
	case "RedisCluster":
		return []string{ClusterStatefulSetName(crName, RoleLeader), ClusterStatefulSetName(crName, RoleFollower)}
	case "RedisReplication":
		return []string{crName, EmbeddedSentinelStatefulSetName(crName), LegacyEmbeddedSentinelStatefulSetName(crName)}
	case "RedisSentinel":
		return []string{SentinelStatefulSetName(crName)}
	}
	return nil
}

// ClaimTemplateNamesOf lists the names of the claim templates the builders give the
// StatefulSet named stsName: its data claim and the cluster's node-conf claim.
func ClaimTemplateNamesOf(stsName string) []string { return []string{stsName, nodeConfVolume} }

// ExporterContainerName is the name of the redis_exporter sidecar container.
const ExporterContainerName = exporterContainerName

// Annotations a user (or kubectl redis failover) sets on a resource to ask for a safe
// failover: AnnotationFailover names the pod that should become master, a master whose shard a
// replica should take over (cluster), or "*" for the best replica (replication). The operator
// notes the replica it chose in AnnotationFailoverTarget and removes both once done.
const (
	AnnotationFailover       = "redis.opstreelabs.in/failover"
	AnnotationFailoverTarget = "redis.opstreelabs.in/failover-target"
)

// AnnotationHandMadeMasters lists, comma-separated, the follower pods of a RedisCluster that a
// CLUSTER FAILOVER made by hand (not by the operator, not after a failure) made master: the
// operator writes it and keeps those masters, each until it is master no more. Removing a pod
// from it lets the shard's leader pod take the shard back.
const AnnotationHandMadeMasters = "redis.opstreelabs.in/hand-made-masters"

// AnnotationRestartedAt, on a resource, asks for a rolling restart of all its pods (kubectl
// redis restart sets it to the time of the request, RFC 3339). The builders copy its value
// into the pod template of each StatefulSet of the resource, so that a new value is a new
// template revision: the operator then replaces the pods as for any other template change
// (replicas first, each master only once it handed its role over), and the StatefulSet
// controller rolls the sentinels and a standalone pod. The value is opaque to the operator;
// only its change matters, and the operator never removes it.
const AnnotationRestartedAt = "redis.opstreelabs.in/restarted-at"

// Annotations that stop all action of the operator on a resource while "true", one per kind
// (the names the OT-CONTAINER-KIT operator gave them). They live here so that the plugin's
// pause and resume name the very keys the controllers read.
const (
	AnnotationSkipReconcileRedis       = "redis.opstreelabs.in/skip-reconcile"
	AnnotationSkipReconcileCluster     = "rediscluster.opstreelabs.in/skip-reconcile"
	AnnotationSkipReconcileReplication = "redisreplication.opstreelabs.in/skip-reconcile"
	AnnotationSkipReconcileSentinel    = "redissentinel.opstreelabs.in/skip-reconcile"
)

// SkipReconcileAnnotationOf is the skip-reconcile annotation of a kind, "" for another kind.
func SkipReconcileAnnotationOf(kind string) string {
	switch kind {
	case "Redis":
		return AnnotationSkipReconcileRedis
	case "RedisCluster":
		return AnnotationSkipReconcileCluster
	case "RedisReplication":
		return AnnotationSkipReconcileReplication
	case "RedisSentinel":
		return AnnotationSkipReconcileSentinel
	}
	return ""
}

// ACLSecretName is the Secret, owned by the CR, that holds the aclfile the pods read (key
// ACLFileKey): the user's ACL Secret once checked, with the operator's default password.
func ACLSecretName(crName string) string { return crName + "-acl" }
