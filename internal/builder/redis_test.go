package builder

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

func TestBuildRedis(t *testing.T) {
	tests := []struct {
		name  string
		cr    func() *v1beta2.Redis
		pw    string
		check func(t *testing.T, o *Objects)
	}{{
		name: "minimal",
		cr:   minimalRedis,
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			sts := checkWorkloadShape(t, o, "cache", SetupStandalone, RoleStandalone, "Redis")
			checkServices(t, o, "cache", 6379, 0)
			wantNames(t, "Services", o.Services, "cache", "cache-headless", "cache-additional")
			wantNames(t, "Secrets", o.Secrets)
			wantNames(t, "ConfigMaps", o.ConfigMaps, "cache-config")
			wantNames(t, "PDBs", o.PodDisruptionBudgets)
			wantEqual(t, "replicas", *sts.Spec.Replicas, int32(1))
			if len(sts.Spec.VolumeClaimTemplates) != 0 {
				t.Errorf("claim templates without storage: %v", sts.Spec.VolumeClaimTemplates)
			}
			pod := sts.Spec.Template.Spec
			if v := volume(t, pod, "cache"); v.EmptyDir == nil {
				t.Errorf("/data volume is not an emptyDir: %+v", v)
			}
			redis := container(t, pod, "cache")
			// A command: the opstree images' entrypoint would drop args.
			wantEqual(t, "command", redis.Command, []string{"redis-server", "/etc/redis/redis.conf"})
			if redis.Args != nil {
				t.Errorf("args %v set: everything goes in the command", redis.Args)
			}
			wantEqual(t, "mounts", mounts(redis), map[string]string{"/data": "cache", "/etc/redis": "redis-config"})
			wantEqual(t, "container ports", containerPorts(redis), map[string]int32{redisPortName: 6379})
			wantEqual(t, "pull policy", redis.ImagePullPolicy, corev1.PullIfNotPresent)
			for _, p := range []*corev1.Probe{redis.ReadinessProbe, redis.LivenessProbe} {
				if p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "-p 6379 ping") {
					t.Errorf("default probe is not a PING of 6379: %+v", p)
				}
			}
			wantEqual(t, "default pod security", pod.SecurityContext, defaultPodSecurityContext())
			wantEqual(t, "default container security", redis.SecurityContext, defaultContainerSecurityContext())
			if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
				t.Errorf("containers %d init %d, want 1 and 0", len(pod.Containers), len(pod.InitContainers))
			}
			conf := confOf(t, o, "cache-config", RedisConfKey)
			wantLines(t, "redis.conf", conf, "port 6379", "dir /data", "protected-mode no", "appendonly yes")
			lacksLines(t, "redis.conf", conf, "include", "requirepass", "masterauth", "cluster-", "tls-", "maxmemory")
			wantEqual(t, "update strategy", sts.Spec.UpdateStrategy.Type, appsv1.RollingUpdateStatefulSetStrategyType)
		},
	}, {
		name: "full",
		cr:   fullRedis,
		pw:   testPassword,
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			cr := fullRedis()
			sts := checkWorkloadShape(t, o, "cache", SetupStandalone, RoleStandalone, "Redis")
			checkServices(t, o, "cache", 6379, 9200)
			wantNames(t, "Secrets", o.Secrets, "cache-redis-auth", "cache-acl")
			wantEqual(t, "client service type", o.Service("cache").Spec.Type, corev1.ServiceTypeLoadBalancer)
			ours := []string{AnnotationPrometheusPort, AnnotationPrometheusScrape, AnnotationManaged, AnnotationInstance}
			wantEqual(t, "client annotations", sortedKeys(o.Service("cache").Annotations), sortedKeys(keySet("lb.example/scheme", ours...)))
			wantEqual(t, "user's client annotation", o.Service("cache").Annotations["lb.example/scheme"], "internal")
			// The headless Service gets its own annotations only, not the client Service's: a
			// load-balancer annotation would act on every pod address.
			wantEqual(t, "headless annotations", sortedKeys(o.Service("cache-headless").Annotations), sortedKeys(keySet("headless.example/a", ours...)))
			wantEqual(t, "additional type", o.Service("cache-additional").Spec.Type, corev1.ServiceTypeNodePort)
			wantEqual(t, "additional annotations", sortedKeys(o.Service("cache-additional").Annotations),
				sortedKeys(keySet("additional.example/b", append(ours, "lb.example/scheme")...)))
			// A standalone Redis has no bus port, whatever includeBusPort says.
			wantEqual(t, "client ports", portsOf(o.Service("cache")), map[string]int32{redisPortName: 6379, exporterPortName: 9200})

			spec := sts.Spec
			wantEqual(t, "minReadySeconds", spec.MinReadySeconds, int32(7))
			wantEqual(t, "pvc retention", spec.PersistentVolumeClaimRetentionPolicy, cr.Spec.KubernetesConfig.PersistentVolumeClaimRetentionPolicy)
			wantEqual(t, "update strategy", spec.UpdateStrategy, cr.Spec.KubernetesConfig.UpdateStrategy)
			if len(spec.VolumeClaimTemplates) != 1 || spec.VolumeClaimTemplates[0].Name != "cache" ||
				spec.VolumeClaimTemplates[0].Labels["backup"] != "daily" || spec.VolumeClaimTemplates[0].Labels[LabelApp] != "cache" ||
				*spec.VolumeClaimTemplates[0].Spec.StorageClassName != "fast-ssd" {
				t.Errorf("claim templates %+v", spec.VolumeClaimTemplates)
			}
			pod := spec.Template.Spec
			wantEqual(t, "affinity", pod.Affinity, cr.Spec.Affinity)
			wantEqual(t, "tolerations", pod.Tolerations, *cr.Spec.Tolerations)
			wantEqual(t, "nodeSelector", pod.NodeSelector, cr.Spec.NodeSelector)
			wantEqual(t, "pod security", pod.SecurityContext, cr.Spec.PodSecurityContext)
			wantEqual(t, "priority", pod.PriorityClassName, "high")
			wantEqual(t, "service account", pod.ServiceAccountName, "redis-sa")
			wantEqual(t, "grace", *pod.TerminationGracePeriodSeconds, int64(90))
			wantEqual(t, "pull secrets", pod.ImagePullSecrets, *cr.Spec.KubernetesConfig.ImagePullSecrets)
			for _, v := range pod.Volumes {
				if v.Name == "cache" {
					t.Errorf("an emptyDir shadows the data claim: %+v", v)
				}
			}

			redis := container(t, pod, "cache")
			wantEqual(t, "image", redis.Image, "registry.example/redis:7.4.2")
			wantEqual(t, "pull policy", redis.ImagePullPolicy, corev1.PullAlways)
			wantEqual(t, "resources", redis.Resources, *cr.Spec.KubernetesConfig.Resources)
			wantEqual(t, "security", redis.SecurityContext, cr.Spec.SecurityContext)
			wantEqual(t, "readiness", redis.ReadinessProbe, cr.Spec.ReadinessProbe)
			wantEqual(t, "liveness", redis.LivenessProbe, cr.Spec.LivenessProbe)
			// maxMemoryPercentOfLimit 75 of the 1Gi limit, redis-cli's password from the auth
			// Secret, then the user's variables.
			wantEqual(t, "env", redis.Env, append([]corev1.EnvVar{{Name: "REDIS_MAX_MEMORY", Value: "805306368"},
				{Name: "REDISCLI_AUTH", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cache-redis-auth"}, Key: RedisPasswordKey}}}},
				*cr.Spec.EnvVars...))
			wantEqual(t, "host port", redis.Ports[0].HostPort, int32(16379))
			wantEqual(t, "mounts", mounts(redis), map[string]string{
				"/data": "cache", "/etc/redis": "redis-config", "/tls": "tls-certs", "/extra": "extra",
			})
			wantEqual(t, "tls volume", volume(t, pod, "tls-certs").Secret, &cr.Spec.TLS.Secret)
			wantEqual(t, "extra volume", volume(t, pod, "extra"), cr.Spec.Storage.VolumeMount.Volume[0])

			proj := volume(t, pod, "redis-config").Projected
			var got []string
			for _, s := range proj.Sources {
				switch {
				case s.ConfigMap != nil:
					got = append(got, "cm:"+s.ConfigMap.Name+":"+s.ConfigMap.Items[0].Path)
				case s.Secret != nil:
					got = append(got, "secret:"+s.Secret.Name+":"+s.Secret.Items[0].Path)
				}
			}
			wantEqual(t, "projected /etc/redis", got, []string{
				"cm:cache-config:redis.conf", "secret:cache-redis-auth:secret/redis-password.conf",
				"secret:cache-acl:user.acl", "cm:redis-extra:additional/redis-additional.conf",
			})

			exp := container(t, pod, "redis-exporter")
			wantEqual(t, "exporter image", exp.Image, cr.Spec.RedisExporter.Image)
			wantEqual(t, "exporter addr", env(exp, "REDIS_ADDR").Value, "rediss://localhost:6379")
			// It has the Secret's CA bundle, and skips the check of the name it dials (localhost)
			// unless the user's env says otherwise.
			wantEqual(t, "exporter CA", env(exp, "REDIS_EXPORTER_TLS_CA_CERT_FILE").Value, "/tls/ca.pem")
			wantEqual(t, "exporter skips verification", env(exp, "REDIS_EXPORTER_SKIP_TLS_VERIFICATION").Value, "true")
			wantEqual(t, "exporter password ref", env(exp, "REDIS_PASSWORD").ValueFrom.SecretKeyRef,
				&corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cache-redis-auth"}, Key: RedisPasswordKey})
			wantEqual(t, "exporter user env", env(exp, "REDIS_EXPORTER_INCL_SYSTEM_METRICS").Value, "true")
			wantEqual(t, "exporter ports", containerPorts(exp), map[string]int32{exporterPortName: 9200})
			wantEqual(t, "exporter security", exp.SecurityContext, cr.Spec.RedisExporter.SecurityContext)

			init := container(t, pod, "init")
			wantEqual(t, "init command", init.Command, []string{"sh", "-c"})
			wantEqual(t, "init args", init.Args, []string{"chown -R 1000:1000 /data"})
			wantEqual(t, "init mounts", mounts(init), map[string]string{"/data": "cache", "/extra": "extra"})
			side := container(t, pod, "log-shipper")
			wantEqual(t, "sidecar ports", containerPorts(side), map[string]int32{"shipper": 2020})
			wantEqual(t, "sidecar mounts", mounts(side), map[string]string{"/shipper": "extra"})

			conf := confOf(t, o, "cache-config", RedisConfKey)
			wantLines(t, "redis.conf", conf,
				"port 0", "tls-port 6379", "tls-cert-file /tls/cert.pem", "tls-key-file /tls/key.pem",
				"tls-ca-cert-file /tls/ca.pem", "tls-replication yes", "aclfile /etc/redis/user.acl",
				"maxmemory 805306368", // 75% of 1Gi
				"maxmemory-policy allkeys-lru",
				"include /etc/redis/additional/redis-additional.conf",
				"include /etc/redis/secret/redis-password.conf")
			lacksLines(t, "redis.conf", conf, "tls-cluster", "cluster-enabled", "cluster-require-full-coverage")
			wantEqual(t, "auth secret", string(o.Secret("cache-redis-auth").Data[RedisAuthKey]),
				"requirepass \""+testPassword+"\"\nmasterauth \""+testPassword+"\"\n")
		},
	}, {
		name: "headless and additional disabled, claim without size",
		cr: func() *v1beta2.Redis {
			cr := minimalRedis()
			cr.Spec.KubernetesConfig.Service = &v1beta2.ServiceConfig{
				Headless:   &v1beta2.ServiceOption{Enabled: ptrTo(false)},
				Additional: &v1beta2.ServiceOption{Enabled: ptrTo(false)},
			}
			cr.Spec.Storage = &v1beta2.Storage{}
			cr.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: false, Image: "x"}
			cr.Spec.InitContainer = &v1beta2.InitContainer{Enabled: ptrTo(false), Image: "busybox"}
			cr.Spec.KubernetesConfig.Image = "redis"
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			wantNames(t, "Services", o.Services, "cache")
			sts := o.StatefulSet("cache")
			if len(sts.Spec.VolumeClaimTemplates) != 0 || volume(t, sts.Spec.Template.Spec, "cache").EmptyDir == nil {
				t.Error("a storage section without a size must give an emptyDir")
			}
			pod := sts.Spec.Template.Spec
			if hasContainer(pod, "init") || hasContainer(pod, "redis-exporter") {
				t.Error("disabled init container or exporter built")
			}
			wantEqual(t, "untagged image pull policy", container(t, pod, "cache").ImagePullPolicy, corev1.PullAlways)
		},
	}, {
		name: "own pod security context, no container defaults",
		cr: func() *v1beta2.Redis {
			cr := minimalRedis()
			cr.Spec.PodSecurityContext = &corev1.PodSecurityContext{}
			cr.Spec.RedisExporter = &v1beta2.RedisExporter{Enabled: true, Image: "exporter:1"}
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			pod := o.StatefulSet("cache").Spec.Template.Spec
			wantEqual(t, "pod security", pod.SecurityContext, &corev1.PodSecurityContext{})
			for _, c := range pod.Containers {
				if c.SecurityContext != nil {
					t.Errorf("%s got a security context %+v the user did not ask for", c.Name, c.SecurityContext)
				}
			}
		},
	}, {
		name: "ACL from a claim",
		cr: func() *v1beta2.Redis {
			cr := minimalRedis()
			cr.Spec.ACL = &v1beta2.ACLConfig{PersistentVolumeClaim: ptrTo("acl-claim")}
			return cr
		},
		check: func(t *testing.T, o *Objects) {
			t.Helper()
			pod := o.StatefulSet("cache").Spec.Template.Spec
			wantEqual(t, "acl volume", volume(t, pod, "acl").PersistentVolumeClaim.ClaimName, "acl-claim")
			wantEqual(t, "acl mount", mounts(container(t, pod, "cache"))["/data/redis"], "acl")
			wantLines(t, "redis.conf", confOf(t, o, "cache-config", RedisConfKey), "aclfile /data/redis/user.acl")
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := BuildRedis(RedisInput{CR: tc.cr(), Password: tc.pw})
			tc.check(t, mustBuild(t)(o, err))
		})
	}
}

// TestBuildDoesNotModifyInput guards the CR (often straight from the informer cache).
func TestBuildDoesNotModifyInput(t *testing.T) {
	r, c, rp, s := fullRedis(), fullCluster(), fullReplication(), fullSentinel()
	r0, c0, rp0, s0 := r.DeepCopy(), c.DeepCopy(), rp.DeepCopy(), s.DeepCopy()
	objs := []*Objects{}
	for _, b := range []func() (*Objects, error){
		func() (*Objects, error) { return BuildRedis(RedisInput{CR: r, Password: testPassword}) },
		func() (*Objects, error) { return BuildRedisCluster(RedisClusterInput{CR: c, Password: testPassword}) },
		func() (*Objects, error) {
			return BuildRedisReplication(RedisReplicationInput{CR: rp, Password: testPassword, SentinelPassword: testSentinelPassword, MasterHost: testMasterHost})
		},
		func() (*Objects, error) {
			return BuildRedisSentinel(RedisSentinelInput{CR: s, Password: testSentinelPassword, MasterPassword: testPassword, MasterHost: testMasterHost})
		},
	} {
		o, err := b()
		objs = append(objs, mustBuild(t)(o, err))
	}
	// Scribble over every output; the inputs must not notice.
	for _, o := range objs {
		for _, sts := range o.StatefulSets {
			p := &sts.Spec.Template.Spec
			p.NodeSelector["scribble"] = "x"
			p.Tolerations[0].Key = "scribble"
			p.Affinity.PodAntiAffinity = nil
			p.Containers[0].Env = append(p.Containers[0].Env[:0], corev1.EnvVar{Name: "scribble"})
			p.SecurityContext.RunAsUser = ptrTo[int64](7)
		}
		for _, svc := range o.Services {
			if svc.Annotations != nil {
				svc.Annotations["scribble"] = "x"
			}
		}
	}
	for name, pair := range map[string][2]any{"Redis": {r, r0}, "RedisCluster": {c, c0}, "RedisReplication": {rp, rp0}, "RedisSentinel": {s, s0}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("building or editing the output changed the %s input", name)
		}
	}
}

// TestAProbeWithTimingsOnlyChecksTheRedisPort: the first v1beta1 shape's probes carry only
// timings; the pod gets the PING check of its port with them, as a probe must name a check.
func TestAProbeWithTimingsOnlyChecksTheRedisPort(t *testing.T) {
	r, l := probes(&corev1.Probe{PeriodSeconds: 7}, &corev1.Probe{InitialDelaySeconds: 9, FailureThreshold: 4})
	w := &workload{server: redisServer, port: 6380}
	for name, p := range map[string]*corev1.Probe{"readiness": w.withCheck(r, false), "liveness": w.withCheck(l, true)} {
		if p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "-p 6380 ping") {
			t.Errorf("%s probe checks %+v, want a PING of 6380", name, p.ProbeHandler)
		}
	}
	if r.PeriodSeconds != 7 || l.InitialDelaySeconds != 9 || l.FailureThreshold != 4 {
		t.Errorf("the user's timings were not kept: readiness %+v, liveness %+v", r, l)
	}
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}}}
	if r, _ := probes(exec, nil); w.withCheck(r, false).Exec != nil || r.TCPSocket == nil {
		t.Errorf("a probe naming its check was changed: %+v", r.ProbeHandler)
	}
}
