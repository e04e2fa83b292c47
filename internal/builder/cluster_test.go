package builder

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

func TestBuildRedisCluster(t *testing.T) {
	tests := []struct {
		name  string
		cr    func() *v1beta2.RedisCluster
		pw    string
		check func(t *testing.T, o *Objects)
	}{{
		name: "minimal",
		cr:   minimalCluster,
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			for _, role := range []string{RoleLeader, RoleFollower} {
				name := "shards-" + role
				sts := checkWorkloadShape(t, o, name, SetupCluster, role, "RedisCluster")
				checkServices(t, o, name, 6379, 0)
				wantEqual(t, name+" replicas", *sts.Spec.Replicas, int32(3))
				pod := sts.Spec.Template.Spec
				redis := container(t, pod, name)
				// The start script adds the hostname on Redis 7 (cluster_start_test.go).
				wantEqual(t, "command", redis.Command[3:], []string{"redis-server", "/etc/redis/redis.conf", "--cluster-announce-ip", "$(POD_IP)"})
				if !strings.Contains(redis.Command[2], `--cluster-announce-hostname "$POD_NAME"'.`+name+`-headless.redis-ns.svc.cluster.local'`) {
					t.Errorf("the start script announces no hostname:\n%s", redis.Command[2])
				}
				podIP := env(redis, "POD_IP")
				if podIP == nil || podIP.ValueFrom == nil || podIP.ValueFrom.FieldRef == nil || podIP.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("POD_IP env %+v, want the downward API status.podIP", podIP)
				}
				wantEqual(t, "container ports", containerPorts(redis), map[string]int32{redisPortName: 6379, busPortName: 16379})
				wantEqual(t, "client ports without includeBusPort", portsOf(o.Service(name)), map[string]int32{redisPortName: 6379})
				conf := confOf(t, o, name+"-config", RedisConfKey)
				wantLines(t, name+" redis.conf", conf, "cluster-enabled yes", "cluster-config-file /data/nodes.conf",
					"appendonly yes", "port 6379", "cluster-require-full-coverage no", "cluster-migration-barrier 1")
				lacksLines(t, name+" redis.conf", conf, "cluster-announce-ip", "save ")
				if pod.HostNetwork || pod.DNSPolicy != "" {
					t.Errorf("host network %v dns %q", pod.HostNetwork, pod.DNSPolicy)
				}
			}
			wantNames(t, "StatefulSets", o.StatefulSets, "shards-leader", "shards-follower")
			wantNames(t, "Services", o.Services,
				"shards-leader", "shards-leader-headless", "shards-leader-additional",
				"shards-follower", "shards-follower-headless", "shards-follower-additional",
				"shards-master")
			wantNames(t, "PDBs", o.PodDisruptionBudgets)
			wantNames(t, "Secrets", o.Secrets)
			master := o.Service("shards-master")
			wantEqual(t, "master selector", master.Spec.Selector, map[string]string{
				LabelInstance: "shards", LabelSetupType: SetupCluster, LabelRedisRole: RedisRoleMaster, LabelCluster: "shards",
			})
			wantEqual(t, "master label cluster", master.Labels[LabelCluster], "shards")
			// The master Service must reach pods of both StatefulSets: its selector is a subset
			// of both pod label sets (with redis-role added by the controller).
			for _, sts := range o.StatefulSets {
				for k, v := range master.Spec.Selector {
					if k != LabelRedisRole && sts.Spec.Template.Labels[k] != v {
						t.Errorf("%s pods lack %s=%s", sts.Name, k, v)
					}
				}
				// The StatefulSet's selector is immutable: the cluster label is the pods' alone.
				wantEqual(t, sts.Name+" selector", sts.Spec.Selector.MatchLabels, map[string]string{
					LabelApp: sts.Name, LabelSetupType: SetupCluster, LabelRole: sts.Labels[LabelRole]})
			}
		},
	}, {
		name: "full",
		cr:   fullCluster,
		pw:   testPassword,
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			cr := fullCluster()
			wantNames(t, "Secrets", o.Secrets, "shards-redis-auth")
			wantNames(t, "ConfigMaps", o.ConfigMaps, "shards-leader-config", "shards-follower-config")
			wantNames(t, "PDBs", o.PodDisruptionBudgets, "shards-leader", "shards-follower")
			leaderPDB, followerPDB := o.PodDisruptionBudget("shards-leader"), o.PodDisruptionBudget("shards-follower")
			if leaderPDB.Spec.MinAvailable.IntValue() != 2 || leaderPDB.Spec.MaxUnavailable != nil {
				t.Errorf("leader PDB %+v, want minAvailable 2", leaderPDB.Spec)
			}
			if followerPDB.Spec.MaxUnavailable.IntValue() != 1 || followerPDB.Spec.MinAvailable != nil {
				t.Errorf("follower PDB %+v, want the default maxUnavailable 1", followerPDB.Spec)
			}
			wantEqual(t, "leader PDB selector", leaderPDB.Spec.Selector.MatchLabels, o.StatefulSet("shards-leader").Spec.Selector.MatchLabels)

			for role, want := range map[string]struct {
				replicas  int32
				memory    string
				maxmemory string
			}{
				RoleLeader:   {3, "2Gi", "maxmemory 1073741824"},
				RoleFollower: {6, "1Gi", "maxmemory 536870912"},
			} {
				name := "shards-" + role
				sts := checkWorkloadShape(t, o, name, SetupCluster, role, "RedisCluster")
				checkServices(t, o, name, 6380, 9200)
				wantEqual(t, name+" replicas", *sts.Spec.Replicas, want.replicas)
				wantEqual(t, name+" pod management", string(sts.Spec.PodManagementPolicy), "Parallel")
				wantEqual(t, name+" client ports", portsOf(o.Service(name)), map[string]int32{redisPortName: 6380, busPortName: 16380, exporterPortName: 9200})
				wantEqual(t, name+" headless ports", portsOf(o.Service(name+"-headless")), map[string]int32{redisPortName: 6380, busPortName: 16380})
				wantEqual(t, name+" additional ports", portsOf(o.Service(name+"-additional")), map[string]int32{redisPortName: 6380})
				var templates []string
				for _, c := range sts.Spec.VolumeClaimTemplates {
					templates = append(templates, c.Name)
				}
				wantEqual(t, name+" claim templates", templates, []string{name, "node-conf"})
				if q := sts.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
					t.Errorf("node-conf default size %s", q.String())
				}

				pod := sts.Spec.Template.Spec
				if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
					t.Errorf("host network %v dns %q", pod.HostNetwork, pod.DNSPolicy)
				}
				wantEqual(t, "spread", pod.TopologySpreadConstraints, cr.Spec.RedisLeader.TopologySpreadConstraints)
				wantEqual(t, "tolerations", pod.Tolerations, *cr.Spec.RedisLeader.Tolerations)
				wantEqual(t, "grace", *pod.TerminationGracePeriodSeconds, int64(90))
				redis := container(t, pod, name)
				wantEqual(t, "role resources win", redis.Resources.Limits[corev1.ResourceMemory], resource.MustParse(want.memory))
				wantEqual(t, "readiness", redis.ReadinessProbe, cr.Spec.RedisLeader.ReadinessProbe)
				wantEqual(t, "host ports on the host network", redis.Ports, []corev1.ContainerPort{
					{Name: redisPortName, ContainerPort: 6380, HostPort: 6380, Protocol: corev1.ProtocolTCP},
					{Name: busPortName, ContainerPort: 16380, HostPort: 16380, Protocol: corev1.ProtocolTCP},
				})
				wantEqual(t, "mounts", mounts(redis), map[string]string{
					"/data": name, "/etc/redis": "redis-config", "/node-conf": "node-conf", "/data/redis": "acl",
					"/tls": "tls-certs", "/extra": "extra",
				})
				wantEqual(t, "init mounts", mounts(container(t, pod, "init")), map[string]string{
					"/data": name, "/node-conf": "node-conf", "/extra": "extra",
				})
				wantEqual(t, "exporter addr", env(container(t, pod, "redis-exporter"), "REDIS_ADDR").Value, "rediss://localhost:6380")
				if env(redis, "POD_IP") == nil || env(redis, "TZ") == nil {
					t.Errorf("env %+v lacks POD_IP or the user's TZ", redis.Env)
				}
				conf := confOf(t, o, name+"-config", RedisConfKey)
				wantLines(t, name+" redis.conf", conf, "cluster-config-file /node-conf/nodes.conf", "tls-port 6380",
					"tls-cluster yes", "appendonly no", `save ""`, want.maxmemory, "aclfile /data/redis/user.acl",
					"include /etc/redis/secret/redis-password.conf")
			}
		},
	}, {
		name: "no followers",
		cr: func() *v1beta2.RedisCluster {
			cr := minimalCluster()
			cr.Spec.RedisFollower.Replicas = ptrTo[int32](0)
			cr.Spec.RedisFollower.PodDisruptionBudget = &v1beta2.RedisPodDisruptionBudget{Enabled: true}
			cr.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true, Image: "exporter:1"}
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			// The follower objects are all there, the StatefulSet with 0 replicas.
			wantNames(t, "StatefulSets", o.StatefulSets, "shards-leader", "shards-follower")
			wantEqual(t, "leader replicas", *o.StatefulSet("shards-leader").Spec.Replicas, int32(3))
			wantEqual(t, "follower replicas", *o.StatefulSet("shards-follower").Spec.Replicas, int32(0))
			checkWorkloadShape(t, o, "shards-follower", SetupCluster, RoleFollower, "RedisCluster")
			wantNames(t, "ConfigMaps", o.ConfigMaps, "shards-leader-config", "shards-follower-config")
			wantNames(t, "Services", o.Services, "shards-leader", "shards-leader-headless", "shards-leader-additional",
				"shards-leader-metrics", "shards-follower", "shards-follower-headless", "shards-follower-additional",
				"shards-follower-metrics", "shards-master")
			wantNames(t, "PDBs", o.PodDisruptionBudgets, "shards-follower")
		},
	}, {
		name: "leader count overrides clusterSize, followers default to it",
		cr: func() *v1beta2.RedisCluster {
			cr := minimalCluster()
			cr.Spec.RedisLeader.Replicas = ptrTo[int32](5)
			cr.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}
			cr.Spec.KubernetesConfig.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}}
			cr.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(10), DynamicConfig: []string{"hz 20"}}
			cr.Spec.RedisFollower.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: []string{"hz 50"}}
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantEqual(t, "leaders", *o.StatefulSet("shards-leader").Spec.Replicas, int32(5))
			wantEqual(t, "followers", *o.StatefulSet("shards-follower").Spec.Replicas, int32(3))
			mem := container(t, o.StatefulSet("shards-follower").Spec.Template.Spec, "shards-follower").Resources.Limits[corev1.ResourceMemory]
			wantEqual(t, "spec.resources over kubernetesConfig.resources", mem.String(), "100Mi")
			// maxmemory from the top level, dynamic config from the role.
			wantLines(t, "follower conf", confOf(t, o, "shards-follower-config", RedisConfKey), "maxmemory 10485760", "hz 50")
			wantLines(t, "leader conf", confOf(t, o, "shards-leader-config", RedisConfKey), "maxmemory 10485760", "hz 20")
		},
	}, {
		name: "node-conf volume without data volume",
		cr: func() *v1beta2.RedisCluster {
			cr := minimalCluster()
			cr.Spec.Storage = &v1beta2.ClusterStorage{NodeConfVolume: true}
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			sts := o.StatefulSet("shards-leader")
			if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "node-conf" {
				t.Errorf("claim templates %+v", sts.Spec.VolumeClaimTemplates)
			}
			if volume(t, sts.Spec.Template.Spec, "shards-leader").EmptyDir == nil {
				t.Error("data is not an emptyDir")
			}
			wantLines(t, "conf", confOf(t, o, "shards-leader-config", RedisConfKey), "cluster-config-file /node-conf/nodes.conf")
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := BuildRedisCluster(RedisClusterInput{CR: tc.cr(), Password: tc.pw})
			tc.check(t, mustBuild(t)(o, err))
		})
	}
}

// TestDynamicConfigKeepsPodsRunning: dynamicConfig is applied with CONFIG SET, so changing it
// must not change the pod template (which would restart every pod).
func TestDynamicConfigKeepsPodsRunning(t *testing.T) {
	a, b := minimalCluster(), minimalCluster()
	b.Spec.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: []string{"maxmemory-policy allkeys-lru"}}
	oa := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: a}))
	ob := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: b}))
	wantEqual(t, "pod template", ob.StatefulSet("shards-leader").Spec.Template, oa.StatefulSet("shards-leader").Spec.Template)
	if oa.ConfigMaps[0].Data[RedisConfKey] == ob.ConfigMaps[0].Data[RedisConfKey] {
		t.Error("dynamicConfig not rendered into redis.conf")
	}
	// A static change does roll the pods.
	b.Spec.PersistenceEnabled = ptrTo(false)
	oc := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: b}))
	if oc.StatefulSet("shards-leader").Spec.Template.Annotations[AnnotationConfigHash] == oa.StatefulSet("shards-leader").Spec.Template.Annotations[AnnotationConfigHash] {
		t.Error("a static redis.conf change left the config hash unchanged")
	}
}

// TestScaleInKeepsPodsUntilDrained: the controller's pod counts win over the spec's while a
// scale-in drains the pods it removes (down to zero followers), and a scale-in deletes the
// removed pods' volumes unless the user chose a retention policy.
func TestScaleInKeepsPodsUntilDrained(t *testing.T) {
	cr := minimalCluster()
	cr.Spec.RedisFollower.Replicas = ptrTo[int32](0)
	o := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, Pods: &ClusterPods{Leaders: 4, Followers: 2}}))
	wantEqual(t, "leaders kept", *o.StatefulSet("shards-leader").Spec.Replicas, int32(4))
	if sts := o.StatefulSet("shards-follower"); sts == nil || *sts.Spec.Replicas != 2 {
		t.Fatalf("the follower StatefulSet must stay with 2 pods while they drain, got %v", sts)
	}
	wantEqual(t, "default retention", *o.StatefulSet("shards-leader").Spec.PersistentVolumeClaimRetentionPolicy,
		appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType})

	drained := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr}))
	if sts := drained.StatefulSet("shards-follower"); sts == nil || *sts.Spec.Replicas != 0 {
		t.Errorf("without a hold, zero followers build the follower StatefulSet with 0 replicas, got %v", sts)
	}
	cr.Spec.KubernetesConfig.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	kept := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr}))
	wantEqual(t, "user's retention", kept.StatefulSet("shards-leader").Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
}
