package builder

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// Distinctive secret values: no built object but the auth Secrets may contain them.
const (
	testPassword         = "canary-RedisPw-7f3a9e1c"
	testSentinelPassword = "canary-SentinelPw-2b8d44"
	testMasterHost       = "10.1.2.3"
	testNamespace        = "redis-ns"
	testRestartedAt      = "2026-12-06T09:00:00Z"
)

func crMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name)}
}

// fullCRMeta is crMeta with a restart request (kubectl redis restart), which every full
// fixture carries so that the golden files show where it lands.
func fullCRMeta(name string) metav1.ObjectMeta {
	m := crMeta(name)
	m.Annotations = map[string]string{AnnotationRestartedAt: testRestartedAt}
	return m
}

func secretRef(name, key string) *v1beta2.ExistingPasswordSecret {
	return &v1beta2.ExistingPasswordSecret{Name: &name, Key: &key}
}

func fullKubernetesConfig() v1beta2.KubernetesConfig {
	return v1beta2.KubernetesConfig{
		Image:           "registry.example/redis:7.4.2",
		ImagePullPolicy: corev1.PullAlways,
		Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		ExistingPasswordSecret: secretRef("user-redis-secret", "password"),
		ImagePullSecrets:       &[]corev1.LocalObjectReference{{Name: "regcred"}},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptrTo[int32](0)},
		},
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		},
		Service: &v1beta2.ServiceConfig{
			ServiceType:        "LoadBalancer",
			ServiceAnnotations: map[string]string{"lb.example/scheme": "internal"},
			IncludeBusPort:     true,
			Headless: &v1beta2.ServiceOption{
				Enabled:               ptrTo(true),
				AdditionalAnnotations: map[string]string{"headless.example/a": "1"},
				IncludeBusPort:        true,
			},
			Additional: &v1beta2.ServiceOption{
				Enabled:               ptrTo(true),
				Type:                  "NodePort",
				AdditionalAnnotations: map[string]string{"additional.example/b": "2"},
			},
		},
		IgnoreAnnotations: []string{"ignored.example/x"},
		MinReadySeconds:   ptrTo[int32](7),
	}
}

func fullExporter() *v1beta2.RedisExporter {
	return &v1beta2.RedisExporter{
		Enabled:         true,
		Image:           "quay.io/oliver006/redis_exporter:v1.67.0",
		Port:            ptrTo(9200),
		Resources:       &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		ImagePullPolicy: corev1.PullIfNotPresent,
		EnvVars:         &[]corev1.EnvVar{{Name: "REDIS_EXPORTER_INCL_SYSTEM_METRICS", Value: "true"}},
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptrTo(true)},
	}
}

func fullStorage() v1beta2.Storage {
	sc := "fast-ssd"
	return v1beta2.Storage{
		VolumeClaimTemplate: corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "ignored", Labels: map[string]string{"backup": "daily"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &sc,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
			},
		},
		VolumeMount: v1beta2.AdditionalVolume{
			Volume:    []corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra-cm"}}}}},
			MountPath: []corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}},
		},
	}
}

func fullAffinity() *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			},
		}},
	}}
}

func fullTolerations() *[]corev1.Toleration {
	return &[]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "redis", Effect: corev1.TaintEffectNoSchedule}}
}

func fullSpread() []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
	}}
}

func fullPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsUser: ptrTo[int64](1000), FSGroup: ptrTo[int64](1000), RunAsNonRoot: ptrTo(true)}
}

func fullSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

func userProbe(initialDelay int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"redis-cli", "ping"}}},
		InitialDelaySeconds: initialDelay, PeriodSeconds: 3, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 9,
	}
}

func fullInitContainer() *v1beta2.InitContainer {
	return &v1beta2.InitContainer{
		Enabled:         ptrTo(true),
		Image:           "busybox:1.37",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources:       &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptrTo[int64](0)},
		EnvVars:         &[]corev1.EnvVar{{Name: "INIT_MODE", Value: "fix-perms"}},
		Command:         []string{"sh", "-c"},
		Arguments:       []string{"chown -R 1000:1000 /data"},
	}
}

func fullSidecars() *[]v1beta2.Sidecar {
	return &[]v1beta2.Sidecar{{
		Name:            "log-shipper",
		Image:           "fluent/fluent-bit:3.2",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources:       &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}},
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptrTo(true)},
		EnvVars:         &[]corev1.EnvVar{{Name: "SHIP_TO", Value: "loki"}},
		Volumes:         &[]corev1.VolumeMount{{Name: "extra", MountPath: "/shipper"}},
		Command:         []string{"fluent-bit"},
		Ports:           &[]corev1.ContainerPort{{Name: "shipper", ContainerPort: 2020}},
	}}
}

func fullTLS() *v1beta2.TLSConfig {
	return &v1beta2.TLSConfig{CaKeyFile: "ca.pem", CertKeyFile: "cert.pem", KeyFile: "key.pem",
		Secret: corev1.SecretVolumeSource{SecretName: "redis-tls", DefaultMode: ptrTo[int32](0o400)}}
}

func fullACL() *v1beta2.ACLConfig {
	return &v1beta2.ACLConfig{Secret: &corev1.SecretVolumeSource{SecretName: "redis-acl"}}
}

func fullRedisConfig() *v1beta2.RedisConfig {
	return &v1beta2.RedisConfig{
		AdditionalRedisConfig:   ptrTo("redis-extra"),
		DynamicConfig:           []string{"maxmemory-policy allkeys-lru", "slowlog-log-slower-than 5000"},
		MaxMemoryPercentOfLimit: ptrTo(75),
	}
}

func userEnv() *[]corev1.EnvVar { return &[]corev1.EnvVar{{Name: "TZ", Value: "UTC"}} }

func minimalRedis() *v1beta2.Redis {
	return &v1beta2.Redis{ObjectMeta: crMeta("cache"), Spec: v1beta2.RedisSpec{
		KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.4.2"},
	}}
}

func fullRedis() *v1beta2.Redis {
	st := fullStorage()
	return &v1beta2.Redis{ObjectMeta: fullCRMeta("cache"), Spec: v1beta2.RedisSpec{
		KubernetesConfig:              fullKubernetesConfig(),
		HostPort:                      ptrTo(16379),
		RedisExporter:                 fullExporter(),
		RedisConfig:                   fullRedisConfig(),
		Storage:                       &st,
		NodeSelector:                  map[string]string{"disk": "ssd"},
		PodSecurityContext:            fullPodSecurityContext(),
		SecurityContext:               fullSecurityContext(),
		PriorityClassName:             "high",
		Affinity:                      fullAffinity(),
		Tolerations:                   fullTolerations(),
		TLS:                           fullTLS(),
		ACL:                           fullACL(),
		ReadinessProbe:                userProbe(11),
		LivenessProbe:                 userProbe(22),
		InitContainer:                 fullInitContainer(),
		Sidecars:                      fullSidecars(),
		ServiceAccountName:            ptrTo("redis-sa"),
		TerminationGracePeriodSeconds: ptrTo[int64](90),
		EnvVars:                       userEnv(),
	}}
}

func minimalCluster() *v1beta2.RedisCluster {
	return &v1beta2.RedisCluster{ObjectMeta: crMeta("shards"), Spec: v1beta2.RedisClusterSpec{
		Size:             ptrTo[int32](3),
		KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.4.2"},
	}}
}

func fullClusterRole(replicas int32, pdb *v1beta2.RedisPodDisruptionBudget, mem string) v1beta2.RedisClusterRole {
	return v1beta2.RedisClusterRole{
		Replicas:                      ptrTo(replicas),
		RedisConfig:                   &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(50)},
		Affinity:                      fullAffinity(),
		PodDisruptionBudget:           pdb,
		ReadinessProbe:                userProbe(11),
		LivenessProbe:                 userProbe(22),
		Tolerations:                   fullTolerations(),
		NodeSelector:                  map[string]string{"disk": "ssd"},
		TopologySpreadConstraints:     fullSpread(),
		TerminationGracePeriodSeconds: ptrTo[int64](90),
		SecurityContext:               fullSecurityContext(),
		Resources:                     &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}},
	}
}

func fullCluster() *v1beta2.RedisCluster {
	st := fullStorage()
	return &v1beta2.RedisCluster{ObjectMeta: fullCRMeta("shards"), Spec: v1beta2.RedisClusterSpec{
		Size:             ptrTo[int32](3),
		KubernetesConfig: fullKubernetesConfig(),
		HostNetwork:      true,
		HostPort:         ptrTo(6380),
		Port:             ptrTo(6380),
		ClusterVersion:   ptrTo("v7"),
		RedisConfig:      fullRedisConfig(),
		RedisLeader: v1beta2.RedisLeader{RedisClusterRole: fullClusterRole(3,
			&v1beta2.RedisPodDisruptionBudget{Enabled: true, MinAvailable: ptrTo[int32](2)}, "2Gi")},
		RedisFollower: v1beta2.RedisFollower{RedisClusterRole: fullClusterRole(6,
			&v1beta2.RedisPodDisruptionBudget{Enabled: true}, "1Gi")},
		RedisExporter: fullExporter(),
		Storage: &v1beta2.ClusterStorage{
			Storage:        st,
			NodeConfVolume: true,
		},
		PodManagementPolicy: "Parallel",
		PodSecurityContext:  fullPodSecurityContext(),
		PriorityClassName:   "high",
		Resources:           &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
		TLS:                 fullTLS(),
		ACL:                 &v1beta2.ACLConfig{PersistentVolumeClaim: ptrTo("acl-claim")},
		InitContainer:       fullInitContainer(),
		Sidecars:            fullSidecars(),
		ServiceAccountName:  ptrTo("redis-sa"),
		PersistenceEnabled:  ptrTo(false),
		EnvVars:             userEnv(),
	}}
}

func minimalReplication() *v1beta2.RedisReplication {
	return &v1beta2.RedisReplication{ObjectMeta: crMeta("repl"), Spec: v1beta2.RedisReplicationSpec{
		Size:             ptrTo[int32](3),
		KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.4.2"},
	}}
}

func fullReplication() *v1beta2.RedisReplication {
	st := fullStorage()
	return &v1beta2.RedisReplication{ObjectMeta: fullCRMeta("repl"), Spec: v1beta2.RedisReplicationSpec{
		Size:                          ptrTo[int32](3),
		KubernetesConfig:              fullKubernetesConfig(),
		RedisExporter:                 fullExporter(),
		RedisConfig:                   fullRedisConfig(),
		Storage:                       &st,
		NodeSelector:                  map[string]string{"disk": "ssd"},
		PodSecurityContext:            fullPodSecurityContext(),
		SecurityContext:               fullSecurityContext(),
		PriorityClassName:             "high",
		Affinity:                      fullAffinity(),
		Tolerations:                   fullTolerations(),
		TLS:                           fullTLS(),
		ACL:                           fullACL(),
		PodDisruptionBudget:           &v1beta2.RedisPodDisruptionBudget{Enabled: true, MaxUnavailable: ptrTo[int32](1)},
		ReadinessProbe:                userProbe(11),
		LivenessProbe:                 userProbe(22),
		InitContainer:                 fullInitContainer(),
		Sidecars:                      fullSidecars(),
		ServiceAccountName:            ptrTo("redis-sa"),
		TerminationGracePeriodSeconds: ptrTo[int64](90),
		EnvVars:                       userEnv(),
		TopologySpreadConstraints:     fullSpread(),
		HostPort:                      ptrTo(16379),
		PodManagementPolicy:           "Parallel",
		Sentinel: &v1beta2.Sentinel{
			Size:                   3,
			Image:                  "registry.example/redis:7.4.2",
			ImagePullPolicy:        corev1.PullIfNotPresent,
			ImagePullSecrets:       &[]corev1.LocalObjectReference{{Name: "regcred"}},
			Resources:              &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			ExistingPasswordSecret: secretRef("user-sentinel-secret", "password"),
			UpdateStrategy:         appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Service: &v1beta2.ServiceConfig{
				ServiceType: "ClusterIP",
				Additional:  &v1beta2.ServiceOption{Enabled: ptrTo(false)},
			},
			MinReadySeconds:               ptrTo[int32](3),
			NodeSelector:                  map[string]string{"pool": "sentinel"},
			PodSecurityContext:            fullPodSecurityContext(),
			SecurityContext:               fullSecurityContext(),
			PriorityClassName:             "high",
			Affinity:                      fullAffinity(),
			Tolerations:                   fullTolerations(),
			TopologySpreadConstraints:     fullSpread(),
			ServiceAccountName:            ptrTo("sentinel-sa"),
			TerminationGracePeriodSeconds: ptrTo[int64](30),
			SentinelConfig: v1beta2.SentinelConfig{
				AdditionalSentinelConfig: ptrTo("sentinel-extra"),
				Quorum:                   "2",
				ParallelSyncs:            "2",
				FailoverTimeout:          "20000",
				DownAfterMilliseconds:    "3000",
				ResolveHostnames:         "yes",
				AnnounceHostnames:        "yes",
			},
		},
	}}
}

// hostnamesReplicationInput is a replication under TLS whose embedded sentinels name
// instances by DNS name: the pods announce theirs and the sentinels are seeded with the
// master's.
func hostnamesReplicationInput() RedisReplicationInput {
	cr := minimalReplication()
	cr.Spec.TLS = fullTLS()
	cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.4.2",
		SentinelConfig: v1beta2.SentinelConfig{ResolveHostnames: "yes", AnnounceHostnames: "yes"}}
	return RedisReplicationInput{CR: cr, AnnounceHostnames: true, DNSDomain: "example.internal",
		MasterHost: ReplicationPodFQDN("repl-0", "repl", testNamespace, "example.internal")}
}

func minimalSentinel() *v1beta2.RedisSentinel {
	return &v1beta2.RedisSentinel{ObjectMeta: crMeta("watch"), Spec: v1beta2.RedisSentinelSpec{
		KubernetesConfig:    v1beta2.KubernetesConfig{Image: "redis:7.4.2"},
		RedisSentinelConfig: &v1beta2.RedisSentinelConfig{RedisReplicationName: "repl"},
	}}
}

func fullSentinel() *v1beta2.RedisSentinel {
	return &v1beta2.RedisSentinel{ObjectMeta: fullCRMeta("watch"), Spec: v1beta2.RedisSentinelSpec{
		Size:             ptrTo[int32](5),
		KubernetesConfig: fullKubernetesConfig(),
		RedisExporter:    fullExporter(),
		RedisSentinelConfig: &v1beta2.RedisSentinelConfig{
			SentinelConfig: v1beta2.SentinelConfig{
				AdditionalSentinelConfig: ptrTo("sentinel-extra"),
				Quorum:                   "3",
				ParallelSyncs:            "1",
				FailoverTimeout:          "15000",
				DownAfterMilliseconds:    "4000",
				ResolveHostnames:         "no",
				AnnounceHostnames:        "no",
			},
			RedisReplicationName: "repl",
			RedisReplicationPassword: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "user-redis-secret"}, Key: "password",
			}},
			MasterGroupName: "primary",
			RedisPort:       "6379",
		},
		NodeSelector:                  map[string]string{"disk": "ssd"},
		PodSecurityContext:            fullPodSecurityContext(),
		SecurityContext:               fullSecurityContext(),
		PriorityClassName:             "high",
		Affinity:                      fullAffinity(),
		Tolerations:                   fullTolerations(),
		TLS:                           fullTLS(),
		PodDisruptionBudget:           &v1beta2.RedisPodDisruptionBudget{Enabled: true, MinAvailable: ptrTo[int32](3)},
		ReadinessProbe:                userProbe(11),
		LivenessProbe:                 userProbe(22),
		InitContainer:                 fullInitContainer(),
		Sidecars:                      fullSidecars(),
		ServiceAccountName:            ptrTo("sentinel-sa"),
		TerminationGracePeriodSeconds: ptrTo[int64](30),
		EnvVars:                       userEnv(),
		VolumeMount:                   ptrTo(fullStorage().VolumeMount),
		TopologySpreadConstraints:     fullSpread(),
		HostPort:                      ptrTo(26380),
		PodManagementPolicy:           "Parallel",
	}}
}

// testRestore is a resolved restore with every setting.
func testRestore() *RestoreInput {
	return &RestoreInput{
		BackupName: "nightly-1", Image: "ghcr.io/rediskube/redis-operator:v1.2.3",
		Endpoint: "https://s3.example:9000", Bucket: "backups", Region: "eu-west-1", ForcePathStyle: true,
		Key: "redis/default/nightly-1/cache-0.rdb", SHA256: strings.Repeat("ab", 32), Bytes: 4096,
		CredentialsSecret: "s3-credentials", CASecret: "s3-ca",
	}
}

// buildCase is one input of the golden and secret tests.
type buildCase struct {
	name  string
	build func() (*Objects, error)
}

func allCases() []buildCase {
	return []buildCase{
		{"redis-minimal", func() (*Objects, error) { return BuildRedis(RedisInput{CR: minimalRedis()}) }},
		{"redis-full", func() (*Objects, error) {
			return BuildRedis(RedisInput{CR: fullRedis(), Password: testPassword})
		}},
		{"redis-restore-full", func() (*Objects, error) {
			cr := fullRedis()
			cr.Spec.Restore = &v1beta2.RestoreSpec{BackupName: "nightly-1"}
			return BuildRedis(RedisInput{CR: cr, Password: testPassword, Restore: testRestore()})
		}},
		{"rediscluster-minimal", func() (*Objects, error) { return BuildRedisCluster(RedisClusterInput{CR: minimalCluster()}) }},
		{"rediscluster-full", func() (*Objects, error) {
			return BuildRedisCluster(RedisClusterInput{CR: fullCluster(), Password: testPassword})
		}},
		{"rediscluster-zero-followers", func() (*Objects, error) {
			cr := minimalCluster()
			cr.Spec.RedisFollower.Replicas = ptrTo[int32](0)
			return BuildRedisCluster(RedisClusterInput{CR: cr})
		}},
		{"rediscluster-nodeport", func() (*Objects, error) {
			cr := nodePortCluster()
			cr.Spec.TLS = &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "tls"}}
			return BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(3, 3)})
		}},
		{"redisreplication-minimal", func() (*Objects, error) {
			return BuildRedisReplication(RedisReplicationInput{CR: minimalReplication()})
		}},
		{"redisreplication-full", func() (*Objects, error) {
			return BuildRedisReplication(RedisReplicationInput{CR: fullReplication(), Password: testPassword,
				SentinelPassword: testSentinelPassword, MasterHost: testMasterHost})
		}},
		{"redisreplication-hostnames", func() (*Objects, error) {
			return BuildRedisReplication(hostnamesReplicationInput())
		}},
		{"redissentinel-minimal", func() (*Objects, error) {
			return BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterHost: testMasterHost})
		}},
		{"redissentinel-unmonitored", func() (*Objects, error) {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig = nil
			return BuildRedisSentinel(RedisSentinelInput{CR: cr})
		}},
		{"redissentinel-full", func() (*Objects, error) {
			return BuildRedisSentinel(RedisSentinelInput{CR: fullSentinel(), Password: testSentinelPassword,
				MasterPassword: testPassword, MasterHost: testMasterHost})
		}},
	}
}
