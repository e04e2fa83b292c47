package builder

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestBuildRefusesBadInput: inputs that cannot give a working deployment are refused with an
// error that names the field, rather than built into something broken.
func TestBuildRefusesBadInput(t *testing.T) {
	redis := func(edit func(*v1beta2.Redis), pw string) func() error {
		return func() error {
			cr := minimalRedis()
			edit(cr)
			_, err := BuildRedis(RedisInput{CR: cr, Password: pw})
			return err
		}
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"nil CR", func() error { _, err := BuildRedis(RedisInput{}); return err }, "no custom resource"},
		{"no namespace", redis(func(r *v1beta2.Redis) { r.Namespace = "" }, ""), "namespace"},
		{"no image", redis(func(r *v1beta2.Redis) { r.Spec.KubernetesConfig.Image = "" }, ""), "kubernetesConfig.image"},
		{"secret without password", redis(func(r *v1beta2.Redis) {
			r.Spec.KubernetesConfig.ExistingPasswordSecret = secretRef("s", "k")
		}, ""), "no password was resolved"},
		{"password without secret", redis(func(*v1beta2.Redis) {}, testPassword), "names no Secret"},
		{"half a secret reference", redis(func(r *v1beta2.Redis) {
			r.Spec.KubernetesConfig.ExistingPasswordSecret = &v1beta2.ExistingPasswordSecret{Name: ptrTo("s")}
		}, testPassword), "both name and key"},
		{"exporter without image", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true}
		}, ""), "redisExporter.image"},
		{"init container without image", redis(func(r *v1beta2.Redis) {
			r.Spec.InitContainer = &v1beta2.InitContainer{Enabled: ptrTo(true)}
		}, ""), "initContainer.image"},
		{"sidecar named like the Redis container", redis(func(r *v1beta2.Redis) {
			r.Spec.Sidecars = &[]v1beta2.Sidecar{{Name: "cache", Image: "x"}}
		}, ""), "both the server container"},
		{"sidecar named like the exporter", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true, Image: "exporter:1"}
			r.Spec.Sidecars = &[]v1beta2.Sidecar{{Name: "redis-exporter", Image: "x"}}
		}, ""), "both the exporter container"},
		{"resource named like the exporter", redis(func(r *v1beta2.Redis) {
			r.Name = "redis-exporter"
			r.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true, Image: "exporter:1"}
		}, ""), "named after the StatefulSet"},
		{"maxmemory without a limit", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(50)}
			r.Spec.KubernetesConfig.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		}, ""), "memory limit"},
		{"dynamic config sets the password", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: []string{"requirepass hunter2"}}
		}, ""), "redisSecret"},
		{"dynamic config spans lines", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: []string{"hz 10\nrequirepass x"}}
		}, ""), "several lines"},
		{"dynamic config without a value", redis(func(r *v1beta2.Redis) {
			r.Spec.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: []string{"appendonly"}}
		}, ""), "name value"},
		{"TLS without secret", redis(func(r *v1beta2.Redis) { r.Spec.TLS = &v1beta2.TLSConfig{} }, ""), "TLS.secret.secretName"},
		{"ACL claim without name", redis(func(r *v1beta2.Redis) {
			r.Spec.ACL = &v1beta2.ACLConfig{PersistentVolumeClaim: ptrTo("")}
		}, ""), "acl.persistentVolumeClaim"},
		{"cluster without size", func() error {
			cr := minimalCluster()
			cr.Spec.Size = nil
			_, err := BuildRedisCluster(RedisClusterInput{CR: cr})
			return err
		}, "clusterSize"},
		{"cluster host port on the host network", func() error {
			cr := minimalCluster()
			cr.Spec.HostNetwork = true
			cr.Spec.HostPort = ptrTo(16379)
			_, err := BuildRedisCluster(RedisClusterInput{CR: cr})
			return err
		}, "hostPort"},
		{"cluster without leaders", func() error {
			cr := minimalCluster()
			cr.Spec.RedisLeader.Replicas = ptrTo[int32](0)
			_, err := BuildRedisCluster(RedisClusterInput{CR: cr})
			return err
		}, "leader"},
		{"cluster with negative followers", func() error {
			cr := minimalCluster()
			cr.Spec.RedisFollower.Replicas = ptrTo[int32](-1)
			_, err := BuildRedisCluster(RedisClusterInput{CR: cr})
			return err
		}, "negative"},
		{"replication without size", func() error {
			cr := minimalReplication()
			cr.Spec.Size = nil
			_, err := BuildRedisReplication(RedisReplicationInput{CR: cr})
			return err
		}, "clusterSize"},
		{"sentinel password without sentinel", func() error {
			_, err := BuildRedisReplication(RedisReplicationInput{CR: minimalReplication(), SentinelPassword: "x"})
			return err
		}, "spec.sentinel"},
		{"embedded sentinel without image", func() error {
			cr := minimalReplication()
			cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3}
			_, err := BuildRedisReplication(RedisReplicationInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "sentinel.image"},
		{"embedded sentinel password unresolved", func() error {
			cr := fullReplication()
			_, err := BuildRedisReplication(RedisReplicationInput{CR: cr, Password: testPassword, MasterHost: testMasterHost})
			return err
		}, "sentinel.redisSecret"},
		{"sentinel without master", func() error {
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel()})
			return err
		}, "master"},
		{"sentinel master address with a space", func() error {
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterHost: "10.0.0.1 6379"})
			return err
		}, "master"},
		{"sentinel without replication name given a master", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig = nil
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "names no RedisReplication"},
		{"sentinel with an empty replication name given a master password", func() error {
			cr := fullSentinel()
			cr.Spec.RedisSentinelConfig.RedisReplicationName = ""
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, Password: "ok", MasterPassword: "x"})
			return err
		}, "names no RedisReplication"},
		{"sentinel without replication name and a bad quorum", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.RedisReplicationName = ""
			cr.Spec.RedisSentinelConfig.Quorum = "0"
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr})
			return err
		}, "quorum"},
		{"sentinel master password without source", func() error {
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterPassword: "x", MasterHost: testMasterHost})
			return err
		}, "redisReplicationPassword"},
		{"sentinel master password sentinel cannot rewrite", func() error {
			cr := fullSentinel()
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, Password: "ok", MasterPassword: "has space", MasterHost: testMasterHost})
			return err
		}, "unquoted"},
		{"sentinel quorum not a number", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.Quorum = "2\nsentinel monitor evil 1.2.3.4 6379 1"
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "quorum"},
		{"sentinel failover timeout zero", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.FailoverTimeout = "0"
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "failoverTimeout"},
		{"sentinel resolveHostnames not yes/no", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.ResolveHostnames = "true"
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "resolveHostnames"},
		{"sentinel master group with a space", func() error {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.MasterGroupName = "my master"
			_, err := BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
			return err
		}, "masterGroupName"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestMaxMemory(t *testing.T) {
	limits := func(q string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}
	}
	for _, tc := range []struct {
		percent int
		limit   string
		want    int64
	}{
		{100, "1Gi", 1 << 30},
		{50, "1Gi", 1 << 29},
		{75, "1Gi", 805306368},
		{33, "1000", 330},
		{1, "199", 1},
		{90, "4Ei", 4150517416584649113}, // no overflow near the top of int64
	} {
		got, err := maxMemory(ptrTo(tc.percent), limits(tc.limit))
		if err != nil || got != tc.want {
			t.Errorf("%d%% of %s = %d, %v; want %d", tc.percent, tc.limit, got, err, tc.want)
		}
	}
	if got, err := maxMemory(nil, nil); got != 0 || err != nil {
		t.Errorf("unset percent = %d, %v", got, err)
	}
	if _, err := maxMemory(ptrTo(0), limits("1Gi")); err == nil {
		t.Error("0% accepted")
	}
}

func TestPullPolicyDefault(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"redis":                        corev1.PullAlways,
		"redis:latest":                 corev1.PullAlways,
		"redis:7.4":                    corev1.PullIfNotPresent,
		"registry:5000/redis":          corev1.PullAlways,
		"registry:5000/redis:7":        corev1.PullIfNotPresent,
		"redis@sha256:0123456789abcde": corev1.PullIfNotPresent,
	} {
		if got := pullPolicy("", image); got != want {
			t.Errorf("%s: %s, want %s", image, got, want)
		}
	}
	if got := pullPolicy(corev1.PullNever, "redis"); got != corev1.PullNever {
		t.Errorf("explicit policy overridden: %s", got)
	}
}

func TestNames(t *testing.T) {
	wantEqual(t, "pod DNS", PodDNSName("shards-leader", 2, "ns"), "shards-leader-2.shards-leader-headless.ns.svc")
	wantEqual(t, "cluster sts", ClusterStatefulSetName("x", RoleFollower), "x-follower")
	wantEqual(t, "sentinel sts", SentinelStatefulSetName("x"), "x-sentinel")
	wantEqual(t, "port", ClusterPort(&v1beta2.RedisCluster{}), int32(6379))
	wantEqual(t, "bus", ClusterBusPort(&v1beta2.RedisCluster{Spec: v1beta2.RedisClusterSpec{Port: ptrTo(7000)}}), int32(17000))
	wantEqual(t, "master group", MasterGroupName(&v1beta2.RedisSentinel{}), DefaultMasterGroupName)
}
