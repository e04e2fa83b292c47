package builder

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// The tests in this file pin facts of the compatibility contract that users' runbooks,
// dashboards and scripts depend on (see DEVELOPERS.md): each one names the fact it checks.

// TestContainerNames: the Redis or sentinel container is named after its StatefulSet (runbooks
// run kubectl exec/logs -c <statefulset name>), the exporter container is redis-exporter.
func TestContainerNames(t *testing.T) {
	tests := []struct {
		name  string
		build func() (*Objects, error)
		// want maps each StatefulSet to the names of its containers, in order.
		want map[string][]string
	}{{
		name:  "standalone with exporter",
		build: func() (*Objects, error) { return BuildRedis(RedisInput{CR: fullRedis(), Password: testPassword}) },
		want:  map[string][]string{"cache": {"cache", "redis-exporter", "log-shipper"}},
	}, {
		name:  "standalone without exporter",
		build: func() (*Objects, error) { return BuildRedis(RedisInput{CR: minimalRedis()}) },
		want:  map[string][]string{"cache": {"cache"}},
	}, {
		name: "cluster",
		build: func() (*Objects, error) {
			return BuildRedisCluster(RedisClusterInput{CR: fullCluster(), Password: testPassword})
		},
		want: map[string][]string{
			"shards-leader":   {"shards-leader", "redis-exporter", "log-shipper"},
			"shards-follower": {"shards-follower", "redis-exporter", "log-shipper"},
		},
	}, {
		name: "replication with embedded sentinels",
		build: func() (*Objects, error) {
			return BuildRedisReplication(RedisReplicationInput{CR: fullReplication(), Password: testPassword,
				SentinelPassword: testSentinelPassword, MasterHost: testMasterHost})
		},
		want: map[string][]string{
			"repl":   {"repl", "redis-exporter", "log-shipper"},
			"repl-s": {"repl-s"},
		},
	}, {
		name: "sentinel",
		build: func() (*Objects, error) {
			return BuildRedisSentinel(RedisSentinelInput{CR: fullSentinel(), Password: testSentinelPassword,
				MasterPassword: testPassword, MasterHost: testMasterHost})
		},
		want: map[string][]string{"watch-sentinel": {"watch-sentinel", "redis-exporter", "log-shipper"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := mustBuild(t)(tc.build())
			if len(o.StatefulSets) != len(tc.want) {
				t.Errorf("StatefulSets %v, want %d", names(o.StatefulSets), len(tc.want))
			}
			for sts, want := range tc.want {
				s := o.StatefulSet(sts)
				if s == nil {
					t.Fatalf("no StatefulSet %s", sts)
				}
				wantEqual(t, sts+" containers", containerNames(s.Spec.Template.Spec.Containers), want)
			}
		})
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// allBuilds builds every kind, minimal and full (the golden cases).
func allBuilds(t *testing.T) map[string]*Objects {
	t.Helper()
	out := map[string]*Objects{}
	for _, c := range allCases() {
		out[c.name] = mustBuild(t)(c.build())
	}
	return out
}

// TestWorkloadAnnotations: every StatefulSet, its pod template and every Service carry
// redis.opstreelabs.in: "true" and redis.opstreelabs.instance: <the resource's name> (the
// cluster's, whichever role; the replication's, for its embedded sentinels too); every
// Service also the prometheus.io scrape annotations with the exporter port.
func TestWorkloadAnnotations(t *testing.T) {
	// resourceOf is the resource each build's objects belong to, by the build's kind.
	resourceOf := map[string]string{"redis": "cache", "rediscluster": "shards", "redisreplication": "repl", "redissentinel": "watch"}
	for name, o := range allBuilds(t) {
		t.Run(name, func(t *testing.T) {
			want, ok := resourceOf[strings.Split(name, "-")[0]]
			if !ok {
				t.Fatalf("build %s not in the table", name)
			}
			// The full fixtures run the exporter on port 9200; without one the default is named.
			port := "9121"
			if strings.HasSuffix(name, "-full") {
				port = "9200"
			}
			for _, sts := range o.StatefulSets {
				for what, a := range map[string]map[string]string{"StatefulSet " + sts.Name: sts.Annotations,
					"pod template of " + sts.Name: sts.Spec.Template.Annotations} {
					wantEqual(t, what+" "+AnnotationManaged, a[AnnotationManaged], "true")
					wantEqual(t, what+" "+AnnotationInstance, a[AnnotationInstance], want)
				}
			}
			for _, svc := range o.Services {
				a := svc.Annotations
				wantEqual(t, "Service "+svc.Name+" "+AnnotationManaged, a[AnnotationManaged], "true")
				wantEqual(t, "Service "+svc.Name+" "+AnnotationInstance, a[AnnotationInstance], want)
				wantEqual(t, "Service "+svc.Name+" "+AnnotationPrometheusScrape, a[AnnotationPrometheusScrape], "true")
				p := port
				if strings.HasPrefix(svc.Name, "repl-s") {
					p = "9121" // embedded sentinels run no exporter
				}
				wantEqual(t, "Service "+svc.Name+" "+AnnotationPrometheusPort, a[AnnotationPrometheusPort], p)
			}
		})
	}
}

// TestMetricsServices: <sts>-metrics carries the selector labels and
// app.kubernetes.io/component: metrics, the prometheus.io annotations and only the exporter
// port; with the exporter on, the client Service exposes redis-exporter too.
func TestMetricsServices(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) *Objects
		sts     []string
		port    int32
	}{{
		name: "standalone, default port",
		objects: func(t *testing.T) *Objects {
			t.Helper()
			cr := minimalRedis()
			cr.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true, Image: "exporter:1"}
			return mustBuild(t)(BuildRedis(RedisInput{CR: cr}))
		},
		sts: []string{"cache"}, port: 9121,
	}, {
		name: "cluster, port 9200",
		objects: func(t *testing.T) *Objects {
			t.Helper()
			return allBuilds(t)["rediscluster-full"]
		},
		sts: []string{"shards-leader", "shards-follower"}, port: 9200,
	}, {
		name: "replication",
		objects: func(t *testing.T) *Objects {
			t.Helper()
			return allBuilds(t)["redisreplication-full"]
		},
		sts: []string{"repl"}, port: 9200,
	}, {
		name: "sentinel",
		objects: func(t *testing.T) *Objects {
			t.Helper()
			return allBuilds(t)["redissentinel-full"]
		},
		sts: []string{"watch-sentinel"}, port: 9200,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.objects(t)
			for _, sts := range tc.sts {
				m := o.Service(sts + "-metrics")
				if m == nil {
					t.Fatalf("no Service %s-metrics", sts)
				}
				sel := o.StatefulSet(sts).Spec.Selector.MatchLabels
				for k, v := range sel {
					wantEqual(t, m.Name+" label "+k, m.Labels[k], v)
				}
				wantEqual(t, m.Name+" component label", m.Labels[LabelComponent], ComponentMetrics)
				wantEqual(t, m.Name+" selector", m.Spec.Selector, sel)
				wantEqual(t, m.Name+" ports", m.Spec.Ports, []corev1.ServicePort{{Name: "redis-exporter", Port: tc.port,
					TargetPort: intstr.FromInt32(tc.port), Protocol: corev1.ProtocolTCP}})
				wantEqual(t, m.Name+" scrape", m.Annotations[AnnotationPrometheusScrape], "true")
				wantEqual(t, m.Name+" scrape port", m.Annotations[AnnotationPrometheusPort], i32(tc.port))
				if got := portsOf(o.Service(sts))["redis-exporter"]; got != tc.port {
					t.Errorf("client Service %s exposes redis-exporter on %d, want %d", sts, got, tc.port)
				}
				// Only metrics Services are a metrics component.
				for _, svc := range o.Services {
					if !strings.HasSuffix(svc.Name, "-metrics") && svc.Labels[LabelComponent] != "" {
						t.Errorf("Service %s labelled %s", svc.Name, LabelComponent)
					}
				}
			}
		})
	}
	// Without the exporter the client Service has no exporter port.
	for name, o := range allBuilds(t) {
		if strings.HasSuffix(name, "-minimal") {
			for _, svc := range o.Services {
				if _, ok := portsOf(svc)["redis-exporter"]; ok {
					t.Errorf("%s: Service %s exposes the exporter port with the exporter off", name, svc.Name)
				}
			}
		}
	}
}

// TestRoleServiceLabels: the -master and -replica Services carry redis-role in their own labels
// as in their selectors.
func TestRoleServiceLabels(t *testing.T) {
	builds := allBuilds(t)
	for _, tc := range []struct{ build, svc, role string }{
		{"redisreplication-minimal", "repl-master", RedisRoleMaster},
		{"redisreplication-minimal", "repl-replica", RedisRoleSlave},
		{"redisreplication-full", "repl-master", RedisRoleMaster},
		{"redisreplication-full", "repl-replica", RedisRoleSlave},
		{"rediscluster-minimal", "shards-master", RedisRoleMaster},
		{"rediscluster-full", "shards-master", RedisRoleMaster},
	} {
		t.Run(tc.build+"/"+tc.svc, func(t *testing.T) {
			svc := builds[tc.build].Service(tc.svc)
			if svc == nil {
				t.Fatalf("no Service %s", tc.svc)
			}
			wantEqual(t, "label", svc.Labels[LabelRedisRole], tc.role)
			wantEqual(t, "selector", svc.Spec.Selector[LabelRedisRole], tc.role)
			// It is still found as one of the CR's objects.
			wantEqual(t, "instance label", svc.Labels[LabelInstance], builds[tc.build].StatefulSets[0].Labels[LabelInstance])
			wantEqual(t, "managed-by label", svc.Labels[LabelManagedBy], ManagedByValue)
		})
	}
}

// TestIgnoreAnnotations: keys listed in ignoreAnnotations are set on none of the objects, be
// they the operator's own or the user's; the others stay.
func TestIgnoreAnnotations(t *testing.T) {
	ignore := []string{AnnotationPrometheusScrape, AnnotationInstance, "lb.example/scheme"}
	tests := []struct {
		name  string
		build func() (*Objects, error)
	}{
		{"standalone", func() (*Objects, error) {
			cr := fullRedis()
			cr.Spec.KubernetesConfig.IgnoreAnnotations = ignore
			return BuildRedis(RedisInput{CR: cr, Password: testPassword})
		}},
		{"cluster", func() (*Objects, error) {
			cr := fullCluster()
			cr.Spec.KubernetesConfig.IgnoreAnnotations = ignore
			return BuildRedisCluster(RedisClusterInput{CR: cr, Password: testPassword})
		}},
		{"replication and its sentinels", func() (*Objects, error) {
			cr := fullReplication()
			cr.Spec.KubernetesConfig.IgnoreAnnotations = ignore
			cr.Spec.Sentinel.IgnoreAnnotations = ignore
			return BuildRedisReplication(RedisReplicationInput{CR: cr, Password: testPassword,
				SentinelPassword: testSentinelPassword, MasterHost: testMasterHost})
		}},
		{"sentinel", func() (*Objects, error) {
			cr := fullSentinel()
			cr.Spec.KubernetesConfig.IgnoreAnnotations = ignore
			return BuildRedisSentinel(RedisSentinelInput{CR: cr, Password: testSentinelPassword,
				MasterPassword: testPassword, MasterHost: testMasterHost})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := mustBuild(t)(tc.build())
			for _, obj := range o.All() {
				for _, k := range ignore {
					if v, ok := obj.GetAnnotations()[k]; ok {
						t.Errorf("%T %s has ignored annotation %s=%q", obj, obj.GetName(), k, v)
					}
				}
			}
			for _, sts := range o.StatefulSets {
				wantEqual(t, sts.Name+" "+AnnotationManaged, sts.Annotations[AnnotationManaged], "true")
			}
			for _, svc := range o.Services {
				wantEqual(t, svc.Name+" "+AnnotationPrometheusPort+" (not ignored)", svc.Annotations[AnnotationPrometheusPort] != "", true)
			}
		})
	}
	// A user annotation not ignored is still set.
	o := mustBuild(t)(BuildRedis(RedisInput{CR: fullRedis(), Password: testPassword}))
	wantEqual(t, "user annotation kept", o.Service("cache").Annotations["lb.example/scheme"], "internal")
}

// TestMaxMemoryEnv: with maxMemoryPercentOfLimit and a memory limit, maxmemory is that share of
// the limit and the Redis container gets REDIS_MAX_MEMORY with the same value.
func TestMaxMemoryEnv(t *testing.T) {
	limit := func(q string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}
	}
	tests := []struct {
		name   string
		build  func() (*Objects, error)
		sts    string
		config string
		want   string // "" for no maxmemory at all
	}{{
		name: "standalone 50% of 1Gi",
		build: func() (*Objects, error) {
			cr := minimalRedis()
			cr.Spec.KubernetesConfig.Resources = limit("1Gi")
			cr.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(50)}
			return BuildRedis(RedisInput{CR: cr})
		},
		sts: "cache", want: "536870912",
	}, {
		name: "standalone 75% of 100Mi, not a round number",
		build: func() (*Objects, error) {
			cr := minimalRedis()
			cr.Spec.KubernetesConfig.Resources = limit("100Mi")
			cr.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(75)}
			return BuildRedis(RedisInput{CR: cr})
		},
		sts: "cache", want: "78643200",
	}, {
		name:  "standalone without the setting",
		build: func() (*Objects, error) { return BuildRedis(RedisInput{CR: minimalRedis()}) },
		sts:   "cache",
	}, {
		name: "cluster leader, role limit and role percentage",
		build: func() (*Objects, error) {
			return BuildRedisCluster(RedisClusterInput{CR: fullCluster(), Password: testPassword})
		},
		sts: "shards-leader", want: "1073741824",
	}, {
		name: "cluster follower, top-level percentage",
		build: func() (*Objects, error) {
			cr := minimalCluster()
			cr.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(10)}
			cr.Spec.RedisFollower.Resources = limit("2Gi")
			cr.Spec.RedisLeader.Resources = limit("1Gi")
			return BuildRedisCluster(RedisClusterInput{CR: cr})
		},
		sts: "shards-follower", want: "214748364",
	}, {
		name: "replication",
		build: func() (*Objects, error) {
			cr := minimalReplication()
			cr.Spec.KubernetesConfig.Resources = limit("256Mi")
			cr.Spec.RedisConfig = &v1beta2.RedisConfig{MaxMemoryPercentOfLimit: ptrTo(100)}
			return BuildRedisReplication(RedisReplicationInput{CR: cr})
		},
		sts: "repl", want: "268435456",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := mustBuild(t)(tc.build())
			c := container(t, o.StatefulSet(tc.sts).Spec.Template.Spec, tc.sts)
			conf := confOf(t, o, tc.sts+"-config", RedisConfKey)
			e := env(c, "REDIS_MAX_MEMORY")
			if tc.want == "" {
				if e != nil {
					t.Errorf("REDIS_MAX_MEMORY %+v without maxMemoryPercentOfLimit", e)
				}
				lacksLines(t, "redis.conf", conf, "maxmemory ")
				return
			}
			if e == nil || e.Value != tc.want || e.ValueFrom != nil {
				t.Errorf("REDIS_MAX_MEMORY %+v, want %s", e, tc.want)
			}
			wantLines(t, "redis.conf", conf, "maxmemory "+tc.want)
		})
	}
}

// TestACLFromClaim: acl.persistentVolumeClaim is mounted at /data/redis and redis.conf reads
// /data/redis/user.acl; an ACL from a Secret stays in /etc/redis.
func TestACLFromClaim(t *testing.T) {
	claim := &v1beta2.ACLConfig{PersistentVolumeClaim: ptrTo("acl-claim")}
	tests := []struct {
		name  string
		build func() (*Objects, error)
		sts   []string
	}{
		{"standalone", func() (*Objects, error) {
			cr := minimalRedis()
			cr.Spec.ACL = claim
			return BuildRedis(RedisInput{CR: cr})
		}, []string{"cache"}},
		{"cluster", func() (*Objects, error) {
			cr := minimalCluster()
			cr.Spec.ACL = claim
			return BuildRedisCluster(RedisClusterInput{CR: cr})
		}, []string{"shards-leader", "shards-follower"}},
		{"replication", func() (*Objects, error) {
			cr := minimalReplication()
			cr.Spec.ACL = claim
			return BuildRedisReplication(RedisReplicationInput{CR: cr})
		}, []string{"repl"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := mustBuild(t)(tc.build())
			for _, sts := range tc.sts {
				pod := o.StatefulSet(sts).Spec.Template.Spec
				m := mounts(container(t, pod, sts))
				v := volume(t, pod, m["/data/redis"])
				if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "acl-claim" {
					t.Errorf("%s: /data/redis is volume %+v, want claim acl-claim", sts, v)
				}
				if m["/data"] == "" {
					t.Errorf("%s: no data volume at /data", sts)
				}
				wantLines(t, sts+" redis.conf", confOf(t, o, sts+"-config", RedisConfKey), "aclfile /data/redis/user.acl")
			}
		})
	}
	o := mustBuild(t)(BuildRedis(RedisInput{CR: fullRedis(), Password: testPassword}))
	wantLines(t, "redis.conf with a Secret ACL", confOf(t, o, "cache-config", RedisConfKey), "aclfile /etc/redis/user.acl")
	if _, ok := mounts(container(t, o.StatefulSet("cache").Spec.Template.Spec, "cache"))["/data/redis"]; ok {
		t.Error("an ACL from a Secret mounts something at /data/redis")
	}
}

// TestRedisCLIAuthEnv: with a password, every Redis container has REDISCLI_AUTH, so that
// `kubectl exec POD -- redis-cli ping` needs no -a: a reference to the key of the operator's
// auth Secret that holds the bare (trimmed) password, never a value in the pod spec. Without a
// password, and in sentinel and exporter containers, there is none.
func TestRedisCLIAuthEnv(t *testing.T) {
	for name, o := range allBuilds(t) {
		t.Run(name, func(t *testing.T) {
			auth := ""
			for _, s := range o.Secrets {
				if strings.HasSuffix(s.Name, "-redis-auth") {
					auth = s.Name
				}
			}
			for _, sts := range o.StatefulSets {
				sentinel := sts.Labels[LabelSetupType] == SetupSentinel
				for _, c := range sts.Spec.Template.Spec.Containers {
					e := envNamed(c.Env, redisCLIAuthEnv)
					if c.Name != sts.Name || sentinel || auth == "" {
						if e != nil {
							t.Errorf("%s container %s has %s: %+v", sts.Name, c.Name, redisCLIAuthEnv, e)
						}
						continue
					}
					if e == nil || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s container %s: %s %+v, want a secretKeyRef", sts.Name, c.Name, redisCLIAuthEnv, e)
						continue
					}
					wantEqual(t, sts.Name+" "+redisCLIAuthEnv+" Secret", e.ValueFrom.SecretKeyRef.Name, auth)
					wantEqual(t, sts.Name+" "+redisCLIAuthEnv+" key", e.ValueFrom.SecretKeyRef.Key, RedisPasswordKey)
				}
			}
		})
	}
}
