package builder

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

// What a cluster node announces, to clients and to the other nodes.
//
// In-cluster (the default) every node announces its pod IP and the container ports. From
// Redis 7 on it also announces its pod's DNS name (cluster-announce-hostname), which CLUSTER
// SHARDS and CLUSTER SLOTS report beside the IP; under TLS the cluster then redirects clients
// by that name (cluster-preferred-endpoint-type hostname), so that a client verifying the
// server's certificate against the name it dials can use a certificate that names only DNS
// names. The operator itself dials pod IPs and checks the certificate chain only
// (redis.NewTLSConfig), so it is unaffected.
//
// With serviceType NodePort a client outside Kubernetes must be redirected to addresses it
// can reach: every pod gets a NodePort Service of its own (named after the pod, selecting it
// by its statefulset.kubernetes.io/pod-name label), and the node announces the IP of the
// Kubernetes node it runs on with the node ports of that Service. Those values are per pod
// and the node ports exist only once the API server allocated them, so they cannot be in the
// pod template:
//   - the node's IP is status.hostIP through the downward API, which the kubelet resolves
//     each time the container starts: a pod rescheduled to another node, or a node that came
//     back with a new address, announces the address it has now;
//   - the node ports are in the ConfigMap <sts>-nodeports, one file per pod (<pod>.conf),
//     written by the operator from the Services it created before the StatefulSet grew to that
//     pod; the container's command line includes the file of its own pod
//     (--include .../$(POD_NAME).conf, which the kubelet expands), so a pod restarted while the
//     operator is down still comes up announcing the right ports. redis.conf itself cannot
//     choose a file by pod name.
//
// The operator also compares, at every reconcile, what each node says of itself with the
// address it should announce, and sets the difference at run time (CONFIG SET), which covers
// what a restart would only fix later: a Service recreated with new node ports, a node
// address that changed under a running container (clusterplan's readdress stage).

// NodePorts are the node ports the API server allocated to a pod's NodePort Service.
type NodePorts struct {
	Client, Bus int32
}

// Paths and names of the NodePort announcement.
const (
	nodePortsVolume = "node-ports"
	nodePortsDir    = "/etc/redis-nodeports"
	hostIPEnv       = "HOST_IP"
	podNameEnv      = "POD_NAME"
	// tlsPortFileSuffix ends the name of a pod's file of Redis 7 settings in the ConfigMap.
	tlsPortFileSuffix = ".tls.conf"
	// PodNameLabel is the label the StatefulSet controller gives each pod, with its name.
	PodNameLabel = "statefulset.kubernetes.io/pod-name"
	// DefaultDNSDomain is the cluster DNS domain when none is configured.
	DefaultDNSDomain = "cluster.local"
)

// ClusterNodePorts tells whether a RedisCluster is reached through per-pod NodePort Services
// (kubernetesConfig.service.serviceType NodePort).
func ClusterNodePorts(cr *v1beta2.RedisCluster) bool {
	s := cr.Spec.KubernetesConfig.Service
	return s != nil && corev1.ServiceType(s.ServiceType) == corev1.ServiceTypeNodePort
}

// ClusterAnnouncesHostnames tells whether the nodes of a RedisCluster that run Redis 7 or later
// announce their pods' DNS names: while the headless Services that make those names resolve
// exist. Each pod decides by its own server's version when it starts (clusterCommand).
func ClusterAnnouncesHostnames(cr *v1beta2.RedisCluster) bool {
	return resolveServices(cr.Spec.KubernetesConfig.Service).headless.enabled
}

// ClusterAnnouncesTLSPort tells whether a node of a RedisCluster that runs server announces
// its TLS port apart (cluster-announce-tls-port, Redis 7 and later; Valkey reports the Redis
// version it has the commands of); before, the one announced port is the TLS port under TLS.
// It follows the version the server reported in INFO server, never clusterVersion.
func ClusterAnnouncesTLSPort(cr *v1beta2.RedisCluster, server redis.ServerInfo) bool {
	return cr.Spec.TLS != nil && server.Has(7, 0)
}

// PodFQDN is the DNS name of a pod of the StatefulSet stsName under its headless Service, in
// the cluster DNS domain ("" for DefaultDNSDomain).
func PodFQDN(pod, stsName, namespace, domain string) string {
	return pod + podDomainSuffix(stsName, namespace, domain)
}

func podDomainSuffix(stsName, namespace, domain string) string {
	if domain == "" {
		domain = DefaultDNSDomain
	}
	return "." + HeadlessServiceName(stsName) + "." + namespace + ".svc." + domain
}

// ClusterNodePortServices are the per-pod NodePort Services of a RedisCluster with
// serviceType NodePort, for the first pods.Leaders leader and pods.Followers follower pods;
// none otherwise. The controller creates them before the pods, to learn their node ports.
func ClusterNodePortServices(cr *v1beta2.RedisCluster, pods ClusterPods) []*corev1.Service {
	if !ClusterNodePorts(cr) {
		return nil
	}
	owner := ownerRef(cr, "RedisCluster")
	var out []*corev1.Service
	for _, r := range []struct {
		role  string
		count int32
	}{{RoleLeader, pods.Leaders}, {RoleFollower, pods.Followers}} {
		w := &workload{owner: owner, namespace: cr.Namespace, instance: cr.Name, name: ClusterStatefulSetName(cr.Name, r.role),
			setupType: SetupCluster, role: r.role, port: ClusterPort(cr), busPort: ClusterBusPort(cr),
			ignoreAnnotations: cr.Spec.KubernetesConfig.IgnoreAnnotations}
		out = append(out, w.podServices(r.count)...)
	}
	return out
}

// podServices are the NodePort Services of the workload's first count pods. Their node ports
// are left to the API server, which keeps what it allocated: they are not this operator's
// fields. They publish a pod that is not ready yet: the other nodes, and the replicas, reach
// it at its announced address from its start.
func (w *workload) podServices(count int32) []*corev1.Service {
	var out []*corev1.Service
	for i := range count {
		pod := PodName(w.name, i)
		sel := w.selectorLabels()
		sel[PodNameLabel] = pod
		// Ours only: the user's Service annotations (a load balancer's, external-dns') would
		// act once per pod.
		svc := w.service(pod, corev1.ServiceTypeNodePort, nil,
			[]corev1.ServicePort{servicePort(redisPortName, w.port), servicePort(busPortName, w.busPort)}, sel)
		svc.Spec.PublishNotReadyAddresses = true
		out = append(out, svc)
	}
	return out
}

// NodePortsOf reads the node ports of a per-pod Service, false while any is unallocated.
func NodePortsOf(svc *corev1.Service) (NodePorts, bool) {
	var np NodePorts
	for _, p := range svc.Spec.Ports {
		switch p.Name {
		case redisPortName:
			np.Client = p.NodePort
		case busPortName:
			np.Bus = p.NodePort
		}
	}
	return np, np.Client != 0 && np.Bus != 0
}

// NodePortsConfigMapName holds the node ports each pod of the StatefulSet stsName announces.
func NodePortsConfigMapName(stsName string) string { return stsName + "-nodeports" }

// nodePortsConfigMap renders, for every pod that has a Service, the directives it includes at
// start: <pod>.conf, which every version takes, and under TLS <pod>.tls.conf, which only
// Redis 7 and later know and which the pod includes only on those (clusterCommand). It is not
// part of the config hash: a pod reads its own files when it starts, and the operator sets a
// changed value at run time.
func (w *workload) nodePortsConfigMap(ports map[string]NodePorts) *corev1.ConfigMap {
	data := map[string]string{}
	for _, pod := range slices.Sorted(maps.Keys(ports)) {
		if podOrdinalOf(w.name, pod) < 0 {
			continue
		}
		np := ports[pod]
		data[pod+".conf"] = fmt.Sprintf("cluster-announce-port %d\ncluster-announce-bus-port %d\n", np.Client, np.Bus)
		if w.tls != nil {
			data[pod+tlsPortFileSuffix] = fmt.Sprintf("cluster-announce-tls-port %d\n", np.Client)
		}
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: w.meta(NodePortsConfigMapName(w.name), w.labels(), nil),
		Data:       data,
	}
}

// podOrdinalOf is the ordinal of pod in the StatefulSet stsName, -1 when it is none of its pods.
func podOrdinalOf(stsName, pod string) int {
	rest, ok := strings.CutPrefix(pod, stsName+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

// announceArgs are the redis-server arguments that say what the node announces that every
// version knows; the kubelet expands the $(VAR) references from announceEnv when the
// container starts (redis.conf cannot expand variables).
func (w *workload) announceArgs() []string {
	if w.busPort == 0 {
		if w.setupType != SetupReplication {
			return nil
		}
		var args []string
		// A replication pod: sentinels that name instances by DNS name learn replicas from
		// the master's INFO, which lists each by what it announces (Redis 7 takes a name here).
		if w.hostnameSuffix != "" {
			args = append(args, "--replica-announce-ip", "$("+podNameEnv+")"+w.hostnameSuffix)
		}
		// Replicas re-link to their master's address (or DNS name) by themselves, so a master
		// that restarts (in place, or under its DNS name) would be followed at once, and a
		// replica that syncs from a master that came back without its data drops its own. Each
		// pod therefore starts as a replica of an address where no server can listen
		// (redis.NoMasterHost): a replica never linked refuses to be synced from (NOMASTERLINK),
		// so the others keep their data until the operator, or the sentinels that see a master
		// reporting itself a replica, choose the master.
		return append(args, "--replicaof", redis.NoMasterHost, strconv.Itoa(redis.NoMasterPort))
	}
	var args []string
	if w.nodePorts {
		args = append(args, "--include", nodePortsDir+"/$("+podNameEnv+").conf", "--cluster-announce-ip", "$("+hostIPEnv+")")
	} else {
		args = append(args, "--cluster-announce-ip", "$("+podIPEnv+")")
	}
	return args
}

// announceEnv are the downward API variables announceArgs refers to.
func (w *workload) announceEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}}
	}
	if w.busPort == 0 {
		if w.hostnameSuffix != "" {
			return []corev1.EnvVar{field(podNameEnv, "metadata.name")}
		}
		return nil
	}
	env := []corev1.EnvVar{field(podIPEnv, "status.podIP")}
	if w.nodePorts {
		env = append(env, field(hostIPEnv, "status.hostIP"))
	}
	if w.nodePorts || w.hostnameSuffix != "" {
		env = append(env, field(podNameEnv, "metadata.name"))
	}
	return env
}
