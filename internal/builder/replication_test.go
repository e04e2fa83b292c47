package builder

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestBuildRedisReplication(t *testing.T) {
	tests := []struct {
		name  string
		in    func() RedisReplicationInput
		check func(t *testing.T, o *Objects)
	}{{
		name: "minimal",
		in:   func() RedisReplicationInput { return RedisReplicationInput{CR: minimalReplication()} },
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			sts := checkWorkloadShape(t, o, "repl", SetupReplication, RoleReplication, "RedisReplication")
			checkServices(t, o, "repl", 6379, 0)
			wantEqual(t, "replicas", *sts.Spec.Replicas, int32(3))
			wantNames(t, "Services", o.Services, "repl", "repl-headless", "repl-additional", "repl-master", "repl-replica")
			wantNames(t, "StatefulSets", o.StatefulSets, "repl")
			wantNames(t, "PDBs", o.PodDisruptionBudgets)
			for svc, role := range map[string]string{"repl-master": RedisRoleMaster, "repl-replica": RedisRoleSlave} {
				wantEqual(t, svc+" selector", o.Service(svc).Spec.Selector, map[string]string{
					LabelApp: "repl", LabelSetupType: SetupReplication, LabelRole: RoleReplication, LabelRedisRole: role,
				})
				wantEqual(t, svc+" ports", portsOf(o.Service(svc)), map[string]int32{redisPortName: 6379})
			}
			conf := confOf(t, o, "repl-config", RedisConfKey)
			lacksLines(t, "redis.conf", conf, "replicaof", "slaveof", "cluster-")
			// The operator rolls the pods itself, master last.
			wantEqual(t, "update strategy", sts.Spec.UpdateStrategy.Type, appsv1.OnDeleteStatefulSetStrategyType)
		},
	}, {
		name: "an update strategy the user sets is kept",
		in: func() RedisReplicationInput {
			cr := minimalReplication()
			cr.Spec.KubernetesConfig.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
			return RedisReplicationInput{CR: cr}
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantEqual(t, "update strategy", o.StatefulSet("repl").Spec.UpdateStrategy.Type, appsv1.RollingUpdateStatefulSetStrategyType)
		},
	}, {
		name: "sentinel waits for a master",
		in: func() RedisReplicationInput {
			return RedisReplicationInput{CR: fullReplication(), Password: testPassword, SentinelPassword: testSentinelPassword}
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantNames(t, "StatefulSets", o.StatefulSets, "repl")
			wantNames(t, "Secrets", o.Secrets, "repl-redis-auth", "repl-acl")
			wantNames(t, "ConfigMaps", o.ConfigMaps, "repl-config")
		},
	}, {
		name: "full with sentinel",
		in: func() RedisReplicationInput {
			return RedisReplicationInput{CR: fullReplication(), Password: testPassword, SentinelPassword: testSentinelPassword, MasterHost: testMasterHost}
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			cr := fullReplication()
			checkWorkloadShape(t, o, "repl", SetupReplication, RoleReplication, "RedisReplication")
			checkServices(t, o, "repl", 6379, 9200)
			wantNames(t, "StatefulSets", o.StatefulSets, "repl", "repl-s")
			wantNames(t, "Secrets", o.Secrets, "repl-redis-auth", "repl-acl", "repl-s-auth")
			wantNames(t, "ConfigMaps", o.ConfigMaps, "repl-config", "repl-s-config")
			wantNames(t, "Services", o.Services, "repl", "repl-headless", "repl-additional", "repl-metrics",
				"repl-master", "repl-replica", "repl-s", "repl-s-hl")
			wantNames(t, "PDBs", o.PodDisruptionBudgets, "repl")
			if p := o.PodDisruptionBudget("repl"); p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.MinAvailable != nil {
				t.Errorf("PDB %+v", p.Spec)
			}
			redisPod := o.StatefulSet("repl").Spec.Template.Spec
			wantEqual(t, "spread", redisPod.TopologySpreadConstraints, cr.Spec.TopologySpreadConstraints)
			wantEqual(t, "pod management", string(o.StatefulSet("repl").Spec.PodManagementPolicy), "Parallel")

			sts := checkWorkloadShape(t, o, "repl-s", SetupSentinel, RoleSentinel, "RedisReplication")
			wantEqual(t, "sentinel replicas", *sts.Spec.Replicas, int32(3))
			wantEqual(t, "sentinel update strategy", sts.Spec.UpdateStrategy.Type, appsv1.OnDeleteStatefulSetStrategyType)
			wantEqual(t, "sentinel minReadySeconds", sts.Spec.MinReadySeconds, int32(3))
			pod := sts.Spec.Template.Spec
			wantEqual(t, "sentinel node selector", pod.NodeSelector, map[string]string{"pool": "sentinel"})
			wantEqual(t, "sentinel service account", pod.ServiceAccountName, "sentinel-sa")
			sentinel := container(t, pod, sts.Name)
			// redis-sentinel: the opstree sentinel image has no redis-server.
			wantEqual(t, "sentinel command", sentinel.Command, []string{"redis-sentinel", "/data/sentinel.conf"})
			wantEqual(t, "sentinel ports", containerPorts(sentinel), map[string]int32{sentinelPortName: 26379})
			wantEqual(t, "sentinel mounts", mounts(sentinel), map[string]string{"/data": "repl-s", "/tls": "tls-certs"})
			wantEqual(t, "sentinel service ports", portsOf(o.Service("repl-s")), map[string]int32{sentinelPortName: 26379})
			if o.Service("repl-s-additional") != nil {
				t.Error("disabled sentinel additional Service built")
			}

			conf := confOf(t, o, "repl-s-config", SentinelConfKey)
			wantLines(t, "sentinel.conf", conf,
				"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
				"sentinel monitor mymaster 10.1.2.3 6379 2", "sentinel down-after-milliseconds mymaster 3000",
				"sentinel parallel-syncs mymaster 2", "sentinel failover-timeout mymaster 20000",
				"tls-port 26379", "tls-replication yes")
			if strings.Index(conf, "resolve-hostnames") > strings.Index(conf, "sentinel monitor") {
				t.Error("resolve-hostnames must precede the monitor line that may use a hostname")
			}
			wantEqual(t, "sentinel auth", string(o.Secret("repl-s-auth").Data[SentinelAuthKey]),
				"requirepass \""+testSentinelPassword+"\"\nsentinel auth-pass mymaster \""+testPassword+"\"\n")
			script := container(t, pod, "sentinel-config").Command[2]
			for _, want := range []string{"/etc/sentinel/sentinel.conf", "/etc/sentinel-additional/*.conf", "/etc/sentinel/secret/sentinel-auth.conf", "/data/sentinel.conf"} {
				if !strings.Contains(script, want) {
					t.Errorf("init script lacks %s:\n%s", want, script)
				}
			}
			// The template first, the auth file last: auth-pass must follow the monitor line.
			if strings.Index(script, "sentinel-auth.conf") < strings.Index(script, "sentinel/sentinel.conf") {
				t.Errorf("auth file copied before the template:\n%s", script)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustBuild(t)(BuildRedisReplication(tc.in())))
		})
	}
}

// TestSentinelFollowsFailoverWithoutRestart: a new master address changes the seed config
// but not the pod template, so sentinels are not restarted for a failover.
func TestSentinelFollowsFailoverWithoutRestart(t *testing.T) {
	a := mustBuild(t)(BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterHost: "10.0.0.1"}))
	b := mustBuild(t)(BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterHost: "10.0.0.2"}))
	wantEqual(t, "pod template", b.StatefulSet("watch-sentinel").Spec.Template, a.StatefulSet("watch-sentinel").Spec.Template)
	wantLines(t, "new seed", confOf(t, b, "watch-sentinel-config", SentinelConfKey), "sentinel monitor myMaster 10.0.0.2 6379 2")
}

// TestSentinelStartsMonitoringOnceTold: sentinels without a replication to monitor start with
// none, and naming one later changes the pod template, so the StatefulSet replaces them with
// sentinels seeded with its master (as any change of the monitoring settings does).
func TestSentinelStartsMonitoringOnceTold(t *testing.T) {
	idle := minimalSentinel()
	idle.Spec.RedisSentinelConfig = nil
	a := mustBuild(t)(BuildRedisSentinel(RedisSentinelInput{CR: idle}))
	b := mustBuild(t)(BuildRedisSentinel(RedisSentinelInput{CR: minimalSentinel(), MasterHost: testMasterHost}))
	hash := func(o *Objects) string {
		return o.StatefulSet("watch-sentinel").Spec.Template.Annotations[AnnotationConfigHash]
	}
	if hash(a) == "" || hash(a) == hash(b) {
		t.Errorf("config hash %q without a replication, %q with one: naming a replication must replace the pods", hash(a), hash(b))
	}
	lacksLines(t, "idle sentinel.conf", confOf(t, a, "watch-sentinel-config", SentinelConfKey), "sentinel monitor")
	wantLines(t, "monitoring sentinel.conf", confOf(t, b, "watch-sentinel-config", SentinelConfKey), "sentinel monitor myMaster 10.1.2.3 6379 2")
}

func TestBuildRedisSentinel(t *testing.T) {
	tests := []struct {
		name  string
		in    RedisSentinelInput
		check func(t *testing.T, o *Objects)
	}{{
		name: "minimal",
		in:   RedisSentinelInput{CR: minimalSentinel(), MasterHost: testMasterHost},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			sts := checkWorkloadShape(t, o, "watch-sentinel", SetupSentinel, RoleSentinel, "RedisSentinel")
			checkServices(t, o, "watch-sentinel", 26379, 0)
			wantEqual(t, "default size", *sts.Spec.Replicas, int32(3))
			wantNames(t, "Services", o.Services, "watch-sentinel", "watch-sentinel-headless", "watch-sentinel-additional")
			wantNames(t, "Secrets", o.Secrets)
			wantNames(t, "PDBs", o.PodDisruptionBudgets)
			pod := sts.Spec.Template.Spec
			wantEqual(t, "init containers", len(pod.InitContainers), 1)
			init := container(t, pod, "sentinel-config")
			wantEqual(t, "init mounts", mounts(init), map[string]string{"/data": "watch-sentinel", "/etc/sentinel": "sentinel-config"})
			if strings.Contains(init.Command[2], "secret") || strings.Contains(init.Command[2], "additional") {
				t.Errorf("script copies files that do not exist:\n%s", init.Command[2])
			}
			s := container(t, pod, sts.Name)
			if s.ReadinessProbe.TCPSocket.Port.IntValue() != 26379 || s.LivenessProbe.TCPSocket.Port.IntValue() != 26379 {
				t.Error("default sentinel probes are not TCP on 26379")
			}
			conf := confOf(t, o, "watch-sentinel-config", SentinelConfKey)
			wantLines(t, "sentinel.conf", conf, "port 26379", "dir /data", "sentinel monitor myMaster 10.1.2.3 6379 2",
				"sentinel down-after-milliseconds myMaster 5000", "sentinel parallel-syncs myMaster 1",
				"sentinel failover-timeout myMaster 10000")
			lacksLines(t, "sentinel.conf", conf, "sentinel resolve-hostnames", "sentinel announce-hostnames", "requirepass", "sentinel auth-pass", "tls-")
		},
	}, {
		name: "full",
		in:   RedisSentinelInput{CR: fullSentinel(), Password: testSentinelPassword, MasterPassword: testPassword, MasterHost: testMasterHost},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			cr := fullSentinel()
			sts := checkWorkloadShape(t, o, "watch-sentinel", SetupSentinel, RoleSentinel, "RedisSentinel")
			checkServices(t, o, "watch-sentinel", 26379, 9200)
			wantEqual(t, "size", *sts.Spec.Replicas, int32(5))
			wantNames(t, "Secrets", o.Secrets, "watch-sentinel-auth")
			wantNames(t, "PDBs", o.PodDisruptionBudgets, "watch-sentinel")
			wantEqual(t, "PDB minAvailable", o.PodDisruptionBudget("watch-sentinel").Spec.MinAvailable.IntValue(), 3)
			pod := sts.Spec.Template.Spec
			s := container(t, pod, sts.Name)
			wantEqual(t, "host port", s.Ports[0].HostPort, int32(26380))
			wantEqual(t, "readiness", s.ReadinessProbe, cr.Spec.ReadinessProbe)
			wantEqual(t, "mounts", mounts(s), map[string]string{"/data": "watch-sentinel", "/tls": "tls-certs", "/extra": "extra"})
			exp := container(t, pod, "redis-exporter")
			wantEqual(t, "exporter addr", env(exp, "REDIS_ADDR").Value, "rediss://localhost:26379")
			wantEqual(t, "exporter password", env(exp, "REDIS_PASSWORD").ValueFrom.SecretKeyRef.Name, "watch-sentinel-auth")
			if !hasContainer(pod, "init") || !hasContainer(pod, "log-shipper") {
				t.Error("user init container or sidecar missing")
			}
			wantEqual(t, "additional volume", volume(t, pod, "sentinel-additional").ConfigMap.Name, "sentinel-extra")
			conf := confOf(t, o, "watch-sentinel-config", SentinelConfKey)
			wantLines(t, "sentinel.conf", conf, "sentinel monitor primary 10.1.2.3 6379 3", "sentinel failover-timeout primary 15000")
			wantEqual(t, "auth", string(o.Secret("watch-sentinel-auth").Data[SentinelAuthKey]),
				"requirepass \""+testSentinelPassword+"\"\nsentinel auth-pass primary \""+testPassword+"\"\n")
		},
	}, {
		name: "only a master password",
		in: func() RedisSentinelInput {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig.RedisReplicationPassword = fullSentinel().Spec.RedisSentinelConfig.RedisReplicationPassword
			return RedisSentinelInput{CR: cr, MasterPassword: testPassword, MasterHost: testMasterHost}
		}(),
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantEqual(t, "auth", string(o.Secret("watch-sentinel-auth").Data[SentinelAuthKey]),
				"sentinel auth-pass myMaster \""+testPassword+"\"\n")
			exp := o.StatefulSet("watch-sentinel").Spec.Template.Spec
			if hasContainer(exp, "redis-exporter") {
				t.Error("exporter without being enabled")
			}
		},
	}, {
		name: "no redisSentinelConfig: sentinels monitoring nothing",
		in: func() RedisSentinelInput {
			cr := minimalSentinel()
			cr.Spec.RedisSentinelConfig = nil
			return RedisSentinelInput{CR: cr}
		}(),
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			sts := checkWorkloadShape(t, o, "watch-sentinel", SetupSentinel, RoleSentinel, "RedisSentinel")
			checkServices(t, o, "watch-sentinel", 26379, 0)
			wantEqual(t, "default size", *sts.Spec.Replicas, int32(3))
			wantNames(t, "Secrets", o.Secrets)
			conf := confOf(t, o, "watch-sentinel-config", SentinelConfKey)
			wantLines(t, "sentinel.conf", conf, "port 26379", "protected-mode no", "dir /data")
			lacksLines(t, "sentinel.conf", conf, "sentinel monitor", "sentinel down-after-milliseconds",
				"sentinel parallel-syncs", "sentinel failover-timeout", "sentinel auth-pass")
		},
	}, {
		name: "empty replication name with a sentinel password: only requirepass",
		in: func() RedisSentinelInput {
			cr := fullSentinel()
			cr.Spec.RedisSentinelConfig.RedisReplicationName = ""
			return RedisSentinelInput{CR: cr, Password: testSentinelPassword}
		}(),
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			lacksLines(t, "sentinel.conf", confOf(t, o, "watch-sentinel-config", SentinelConfKey), "sentinel monitor", "sentinel failover-timeout")
			wantEqual(t, "auth", string(o.Secret("watch-sentinel-auth").Data[SentinelAuthKey]),
				"requirepass \""+testSentinelPassword+"\"\n")
		},
	}, {
		name: "size one gets quorum one",
		in: func() RedisSentinelInput {
			cr := minimalSentinel()
			cr.Spec.Size = ptrTo[int32](1)
			return RedisSentinelInput{CR: cr, MasterHost: "redis-0.redis-headless"}
		}(),
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantLines(t, "conf", confOf(t, o, "watch-sentinel-config", SentinelConfKey), "sentinel monitor myMaster redis-0.redis-headless 6379 1")
		},
	}, {
		// The schema's default "2" (the reference's) on a single sentinel: the quorum it can reach.
		name: "size one with the default quorum two runs quorum one",
		in: func() RedisSentinelInput {
			cr := minimalSentinel()
			cr.Spec.Size = ptrTo[int32](1)
			cr.Spec.RedisSentinelConfig.Quorum = "2"
			return RedisSentinelInput{CR: cr, MasterHost: "redis-0.redis-headless"}
		}(),
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantLines(t, "conf", confOf(t, o, "watch-sentinel-config", SentinelConfKey), "sentinel monitor myMaster redis-0.redis-headless 6379 1")
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustBuild(t)(BuildRedisSentinel(tc.in)))
		})
	}
}

// TestEmbeddedSentinelQuorumIsAMajority: embedded sentinels that set no quorum need a majority
// of themselves to agree that the master is down; an explicit quorum is kept.
func TestEmbeddedSentinelQuorumIsAMajority(t *testing.T) {
	for _, tc := range []struct {
		size   int32
		quorum string
		want   string
	}{{1, "", "1"}, {2, "", "2"}, {3, "", "2"}, {4, "", "3"}, {5, "", "3"}, {5, "2", "2"},
		// A quorum above the number of sentinels (the schema's default "2" on one sentinel, or
		// a size lowered under an explicit quorum) is the largest they can reach.
		{1, "2", "1"}, {3, "5", "3"}} {
		cr := fullReplication()
		cr.Spec.Sentinel.Size = tc.size
		cr.Spec.Sentinel.Quorum = tc.quorum
		o := mustBuild(t)(BuildRedisReplication(RedisReplicationInput{CR: cr, Password: testPassword,
			SentinelPassword: testSentinelPassword, MasterHost: testMasterHost}))
		wantLines(t, fmt.Sprintf("size %d quorum %q", tc.size, tc.quorum), confOf(t, o, "repl-s-config", SentinelConfKey),
			"sentinel monitor mymaster "+testMasterHost+" 6379 "+tc.want)
	}
}

// TestSentinelQuorumSaysWhenItIsLowered: what the controllers report on the resource.
func TestSentinelQuorumSaysWhenItIsLowered(t *testing.T) {
	sentinel := minimalSentinel()
	for _, tc := range []struct {
		size   int32
		quorum string
		want   SentinelQuorum
	}{
		{3, "", SentinelQuorum{Configured: 2, Sentinels: 3}},
		{3, "2", SentinelQuorum{Requested: 2, Configured: 2, Sentinels: 3}},
		{1, "2", SentinelQuorum{Requested: 2, Configured: 1, Sentinels: 1}},
		{3, "two", SentinelQuorum{Sentinels: 3}}, // refused by the builders (and the schema)
	} {
		sentinel.Spec.Size = ptrTo(tc.size)
		sentinel.Spec.RedisSentinelConfig.Quorum = tc.quorum
		got := RedisSentinelQuorum(sentinel)
		wantEqual(t, fmt.Sprintf("RedisSentinel size %d quorum %q", tc.size, tc.quorum), got, tc.want)
		wantEqual(t, fmt.Sprintf("RedisSentinel size %d quorum %q lowered", tc.size, tc.quorum), got.Lowered(), tc.want.Requested > tc.want.Configured)
	}
	replication := fullReplication()
	replication.Spec.Sentinel.Size, replication.Spec.Sentinel.Quorum = 2, "3"
	wantEqual(t, "embedded", EmbeddedSentinelQuorum(replication), SentinelQuorum{Requested: 3, Configured: 2, Sentinels: 2})
	replication.Spec.Sentinel = nil
	wantEqual(t, "no embedded sentinels", EmbeddedSentinelQuorum(replication), SentinelQuorum{})
}

// TestLegacySentinelsRetainedWhileMigrating: while the controller retires the sentinels of an
// earlier version, their objects are listed as retained (so not pruned), and only then.
func TestLegacySentinelsRetainedWhileMigrating(t *testing.T) {
	in := RedisReplicationInput{CR: fullReplication(), Password: testPassword, SentinelPassword: testSentinelPassword, MasterHost: testMasterHost}
	if o := mustBuild(t)(BuildRedisReplication(in)); len(o.Retained) != 0 {
		t.Errorf("retained %v without a migration", o.Retained)
	}
	in.RetainLegacySentinels = true
	o := mustBuild(t)(BuildRedisReplication(in))
	wantEqual(t, "retained", o.Retained, []string{"StatefulSet/repl-sentinel", "Service/repl-sentinel", "Service/repl-sentinel-headless",
		"Service/repl-sentinel-additional", "ConfigMap/repl-sentinel-config", "Secret/repl-sentinel-auth"})
	for _, built := range o.All() {
		for _, kept := range o.Retained {
			if strings.HasSuffix(kept, "/"+built.GetName()) {
				t.Errorf("%s is both built and retained", kept)
			}
		}
	}
	in.CR.Spec.Sentinel = nil
	in.SentinelPassword, in.MasterHost = "", ""
	if _, err := BuildRedisReplication(in); err == nil {
		t.Error("legacy sentinels retained for a replication without spec.sentinel")
	}
}
