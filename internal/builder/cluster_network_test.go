package builder

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

func nodePortCluster() *v1beta2.RedisCluster {
	cr := minimalCluster()
	cr.Spec.KubernetesConfig.Service = &v1beta2.ServiceConfig{ServiceType: "NodePort"}
	return cr
}

// testNodePorts gives each pod of a 3+3 cluster the node ports 30000+2i (client), +1 (bus).
func testNodePorts(leaders, followers int32) map[string]NodePorts {
	out := map[string]NodePorts{}
	next := int32(30000)
	for _, r := range []struct {
		role string
		n    int32
	}{{RoleLeader, leaders}, {RoleFollower, followers}} {
		for i := range r.n {
			out[PodName("shards-"+r.role, i)] = NodePorts{Client: next, Bus: next + 1}
			next += 2
		}
	}
	return out
}

// What each node announces, by the arguments a server of Redis 6.2 and one of 7.0 are started
// with (the command run against fake servers, cluster_start_test.go).
func TestClusterAnnouncement(t *testing.T) {
	hostname := func(role, domain string) []string {
		// The test pod is named shards-leader-1 whatever its role.
		return []string{"--cluster-announce-hostname", "shards-leader-1.shards-" + role + "-headless.redis-ns.svc." + domain}
	}
	preferred := []string{"--cluster-preferred-endpoint-type", "hostname"}
	podIP := []string{"--cluster-announce-ip", "10.1.2.3"}
	cat := func(parts ...[]string) []string {
		return slices.Concat(append([][]string{{redisConfPath}}, parts...)...)
	}
	tests := []struct {
		name    string
		cr      *v1beta2.RedisCluster
		in      RedisClusterInput
		want6   []string
		want7   func(role string) []string
		plain   bool              // no start script: nothing depends on the version
		wantEnv map[string]string // name → downward API field
	}{{
		name:    "in-cluster: pod IP, and from Redis 7 on the DNS name",
		cr:      minimalCluster(),
		want6:   cat(podIP),
		want7:   func(role string) []string { return cat(podIP, hostname(role, "cluster.local")) },
		wantEnv: map[string]string{"POD_IP": "status.podIP", "POD_NAME": "metadata.name"},
	}, {
		name:    "a configured DNS domain",
		cr:      minimalCluster(),
		in:      RedisClusterInput{DNSDomain: "corp.example"},
		want6:   cat(podIP),
		want7:   func(role string) []string { return cat(podIP, hostname(role, "corp.example")) },
		wantEnv: map[string]string{"POD_IP": "status.podIP", "POD_NAME": "metadata.name"},
	}, {
		name:    "TLS: from Redis 7 on clients are redirected by name",
		cr:      tlsCluster(minimalCluster()),
		want6:   cat(podIP),
		want7:   func(role string) []string { return cat(podIP, hostname(role, "cluster.local"), preferred) },
		wantEnv: map[string]string{"POD_IP": "status.podIP", "POD_NAME": "metadata.name"},
	}, {
		name: "clusterVersion v6 decides nothing",
		cr: func() *v1beta2.RedisCluster {
			cr := tlsCluster(minimalCluster())
			cr.Spec.ClusterVersion = ptrTo("v6")
			return cr
		}(),
		want6:   cat(podIP),
		want7:   func(role string) []string { return cat(podIP, hostname(role, "cluster.local"), preferred) },
		wantEnv: map[string]string{"POD_IP": "status.podIP", "POD_NAME": "metadata.name"},
	}, {
		name: "no headless Service, no name that resolves",
		cr: func() *v1beta2.RedisCluster {
			cr := tlsCluster(minimalCluster())
			cr.Spec.KubernetesConfig.Service = &v1beta2.ServiceConfig{Headless: &v1beta2.ServiceOption{Enabled: ptrTo(false)}}
			return cr
		}(),
		want6:   cat(podIP),
		want7:   func(string) []string { return cat(podIP) },
		plain:   true,
		wantEnv: map[string]string{"POD_IP": "status.podIP"},
	}, {
		name:  "NodePort: node IP, the pod's node ports from its file, and its name",
		cr:    tlsCluster(nodePortCluster()),
		in:    RedisClusterInput{NodePorts: testNodePorts(3, 3)},
		want6: cat([]string{"--include", "/etc/redis-nodeports/shards-leader-1.conf", "--cluster-announce-ip", "192.0.2.9"}),
		want7: func(role string) []string {
			// Clients outside the cluster cannot resolve pod names: no preferred hostname under TLS.
			return cat([]string{"--include", "/etc/redis-nodeports/shards-leader-1.conf", "--cluster-announce-ip", "192.0.2.9"},
				hostname(role, "cluster.local"), []string{"--include", "/etc/redis-nodeports/shards-leader-1" + tlsPortFileSuffix})
		},
		wantEnv: map[string]string{"POD_IP": "status.podIP", "HOST_IP": "status.hostIP", "POD_NAME": "metadata.name"},
	}}
	files := map[string]string{"shards-leader-1.conf": "x", "shards-leader-1" + tlsPortFileSuffix: "x"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.CR = tc.cr
			o := mustBuild(t)(BuildRedisCluster(in))
			for _, role := range []string{RoleLeader, RoleFollower} {
				name := "shards-" + role
				c := container(t, o.StatefulSet(name).Spec.Template.Spec, name)
				wantEqual(t, name+" on Redis 6.2", startedArgs(t, []string{"sh"}, c, redis62, files), tc.want6)
				wantEqual(t, name+" on Redis 7.0", startedArgs(t, []string{"sh"}, c, redis70, files), tc.want7(role))
				if plain := c.Command[0] == "redis-server"; plain != tc.plain {
					t.Errorf("%s command %q: plain %v, want %v", name, c.Command, plain, tc.plain)
				}
				got := map[string]string{}
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
						got[e.Name] = e.ValueFrom.FieldRef.FieldPath
					}
				}
				wantEqual(t, name+" downward API env", got, tc.wantEnv)
				conf := confOf(t, o, name+"-config", RedisConfKey)
				// What Redis 6 refuses is never in the file every version reads.
				lacksLines(t, name+" redis.conf", conf, "cluster-announce", "cluster-preferred-endpoint-type")
			}
		})
	}
}

func TestClusterNodePortObjects(t *testing.T) {
	cr := nodePortCluster()
	cr.Spec.TLS = &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "tls"}}
	cr.Spec.KubernetesConfig.Service.ServiceAnnotations = map[string]string{"external-dns.alpha.kubernetes.io/hostname": "redis.example"}
	ports := testNodePorts(3, 3)
	o := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: ports}))

	wantNames(t, "Services", o.Services,
		"shards-leader", "shards-leader-headless", "shards-leader-additional", "shards-leader-0", "shards-leader-1", "shards-leader-2",
		"shards-follower", "shards-follower-headless", "shards-follower-additional", "shards-follower-0", "shards-follower-1", "shards-follower-2",
		"shards-master")
	wantNames(t, "ConfigMaps", o.ConfigMaps, "shards-leader-config", "shards-leader-nodeports", "shards-follower-config", "shards-follower-nodeports")
	for _, role := range []string{RoleLeader, RoleFollower} {
		sts := "shards-" + role
		for i := range int32(3) {
			pod := PodName(sts, i)
			svc := o.Service(pod)
			wantEqual(t, pod+" type", svc.Spec.Type, corev1.ServiceTypeNodePort)
			wantEqual(t, pod+" selector", svc.Spec.Selector, map[string]string{
				LabelApp: sts, LabelSetupType: SetupCluster, LabelRole: role, PodNameLabel: pod,
			})
			wantEqual(t, pod+" ports", portsOf(svc), map[string]int32{redisPortName: 6379, busPortName: 16379})
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					t.Errorf("%s port %s asks for node port %d: the API server allocates them", pod, p.Name, p.NodePort)
				}
			}
			if !svc.Spec.PublishNotReadyAddresses {
				t.Errorf("%s does not publish its pod before it is ready", pod)
			}
			wantEqual(t, pod+" labels", svc.Labels, map[string]string{
				LabelApp: sts, LabelSetupType: SetupCluster, LabelRole: role, LabelInstance: "shards", LabelManagedBy: ManagedByValue,
			})
			if _, ok := svc.Annotations["external-dns.alpha.kubernetes.io/hostname"]; ok {
				t.Errorf("%s carries the user's client Service annotations", pod)
			}
			wantEqual(t, pod+" owner", svc.OwnerReferences[0].Kind, "RedisCluster")
		}
		cm := o.ConfigMap(NodePortsConfigMapName(sts))
		wantEqual(t, sts+" node port files", sortedKeys(cm.Data), []string{sts + "-0.conf", sts + "-0.tls.conf",
			sts + "-1.conf", sts + "-1.tls.conf", sts + "-2.conf", sts + "-2.tls.conf"})
		np := ports[sts+"-1"]
		// What Redis 6 refuses apart: only a server of Redis 7 or later includes it.
		wantEqual(t, sts+"-1.conf", cm.Data[sts+"-1.conf"],
			"cluster-announce-port "+i32(np.Client)+"\ncluster-announce-bus-port "+i32(np.Bus)+"\n")
		wantEqual(t, sts+"-1.tls.conf", cm.Data[sts+"-1.tls.conf"], "cluster-announce-tls-port "+i32(np.Client)+"\n")
		spec := o.StatefulSet(sts).Spec.Template.Spec
		wantEqual(t, sts+" node ports volume", volume(t, spec, nodePortsVolume).ConfigMap.Name, sts+"-nodeports")
		if items := volume(t, spec, nodePortsVolume).ConfigMap.Items; items != nil {
			t.Errorf("%s node ports volume lists items %v: a new pod's key would change the template", sts, items)
		}
		wantEqual(t, sts+" mount", mounts(container(t, spec, sts))[nodePortsDir], nodePortsVolume)
	}
	// The client Service keeps the type the spec asks for, and the user's annotations.
	wantEqual(t, "client type", o.Service("shards-leader").Spec.Type, corev1.ServiceTypeNodePort)
	wantEqual(t, "client annotation", o.Service("shards-leader").Annotations["external-dns.alpha.kubernetes.io/hostname"], "redis.example")

	// What the controller creates first is what the build keeps.
	for _, early := range ClusterNodePortServices(cr, ClusterPods{Leaders: 3, Followers: 3}) {
		wantEqual(t, early.Name, early, o.Service(early.Name))
	}
	if got := ClusterNodePortServices(minimalCluster(), ClusterPods{Leaders: 3, Followers: 3}); got != nil {
		t.Errorf("a ClusterIP cluster got per-pod Services %v", names(got))
	}
}

// TestClusterNodePortScaling: a scale-out needs the new pods' node ports before it builds
// them; a scale-in keeps the Services of pods that have not stopped yet; neither changes the
// pod template, and neither do other node ports.
func TestClusterNodePortScaling(t *testing.T) {
	cr := nodePortCluster()
	base := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(3, 3)}))

	cr.Spec.Size = ptrTo[int32](4)
	if _, err := BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(3, 3)}); err == nil ||
		!strings.Contains(err.Error(), "shards-leader-3") {
		t.Errorf("a scale-out without the new pod's node ports built, error %v", err)
	}
	grown := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(4, 4)}))
	if grown.Service("shards-leader-3") == nil || grown.Service("shards-follower-3") == nil {
		t.Errorf("Services after the scale-out: %v", names(grown.Services))
	}
	other := testNodePorts(4, 4)
	other["shards-leader-0"] = NodePorts{Client: 32000, Bus: 32001}
	moved := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: other}))
	for _, sts := range []string{"shards-leader", "shards-follower"} {
		wantEqual(t, sts+" template after a scale-out", grown.StatefulSet(sts).Spec.Template, base.StatefulSet(sts).Spec.Template)
		wantEqual(t, sts+" template with other node ports", moved.StatefulSet(sts).Spec.Template, base.StatefulSet(sts).Spec.Template)
	}

	// Scaled in to 2 shards: pods 2 and 3 are gone from the StatefulSets, not yet from the node.
	cr.Spec.Size = ptrTo[int32](2)
	shrinking := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(4, 4),
		ServicePods: &ClusterPods{Leaders: 4, Followers: 3}}))
	wantEqual(t, "leaders", *shrinking.StatefulSet("shards-leader").Spec.Replicas, int32(2))
	for _, name := range []string{"shards-leader-2", "shards-leader-3", "shards-follower-2"} {
		if shrinking.Service(name) == nil {
			t.Errorf("Service %s removed while its pod may still run", name)
		}
	}
	if shrinking.Service("shards-follower-3") != nil {
		t.Error("Service shards-follower-3 kept after its pod is gone")
	}
	gone := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(2, 2)}))
	for _, name := range []string{"shards-leader-2", "shards-follower-2"} {
		if gone.Service(name) != nil {
			t.Errorf("Service %s kept after the scale-in", name)
		}
	}
	wantEqual(t, "files after the scale-in", sortedKeys(gone.ConfigMap("shards-leader-nodeports").Data), []string{"shards-leader-0.conf", "shards-leader-1.conf"})
}

// The TLS port is set at run time by the version a node reported, never by clusterVersion: Redis
// 6 has no cluster-announce-tls-port (under TLS its one announced port is the TLS one); Valkey
// reports the Redis version it has the commands of.
func TestClusterAnnouncesTLSPortByTheServersVersion(t *testing.T) {
	info := func(text string) redis.ServerInfo {
		s, err := redis.ParseServerInfo(text)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cr := tlsCluster(nodePortCluster())
	cr.Spec.ClusterVersion = ptrTo("v6")
	for _, tc := range []struct {
		server redis.ServerInfo
		want   bool
	}{
		{info("redis_version:6.2.14\r\n"), false},
		{info("redis_version:7.0.15\r\n"), true},
		{info("redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"), true},
		{redis.ServerInfo{}, false},
	} {
		if got := ClusterAnnouncesTLSPort(cr, tc.server); got != tc.want {
			t.Errorf("%s under TLS: TLS port %v, want %v", tc.server, got, tc.want)
		}
	}
	cr.Spec.ClusterVersion = nil
	cr.Spec.TLS = nil
	if ClusterAnnouncesTLSPort(cr, info("redis_version:7.0.15\r\n")) {
		t.Error("a cluster without TLS would announce a TLS port")
	}
}

func TestNodePortsOf(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: redisPortName, Port: 6379, NodePort: 31000},
		{Name: busPortName, Port: 16379},
	}}}
	if _, ok := NodePortsOf(svc); ok {
		t.Error("a Service without its bus node port counted as allocated")
	}
	svc.Spec.Ports[1].NodePort = 31001
	np, ok := NodePortsOf(svc)
	wantEqual(t, "node ports", np, NodePorts{Client: 31000, Bus: 31001})
	wantEqual(t, "allocated", ok, true)
}

func TestPodOrdinalOf(t *testing.T) {
	for pod, want := range map[string]int{"a-leader-0": 0, "a-leader-12": 12, "a-leader-": -1, "a-leader-01": -1, "a-follower-1": -1, "a-leader-x": -1} {
		wantEqual(t, pod, podOrdinalOf("a-leader", pod), want)
	}
}
