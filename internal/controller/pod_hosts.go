package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/builder"
)

// podHosts maps the pods of a RedisReplication between the two forms Redis and sentinels may
// know them by: the pod IP, and the pod's DNS name under the replication's headless Service
// (builder.ReplicationPodFQDN). The replication planner works with IPs; what Redis and
// sentinels report is mapped to IPs on the way in (ip), and what the operator tells them is
// mapped to the form the sentinels use on the way out (address). A name maps to the IP its
// pod has now, as Redis resolves it again at each connection.
type podHosts struct {
	// names: the sentinels name instances by DNS name (builder.ReplicationNamesHosts).
	names  bool
	ipOf   map[string]string // DNS name -> pod IP
	nameOf map[string]string // pod IP -> DNS name
}

// newPodHosts maps the pods (with an IP) of the RedisReplication crName.
func newPodHosts(pods []corev1.Pod, crName, namespace, domain string, names bool) podHosts {
	h := podHosts{names: names, ipOf: map[string]string{}, nameOf: map[string]string{}}
	for i := range pods {
		ip := pods[i].Status.PodIP
		if ip == "" {
			continue
		}
		name := strings.ToLower(builder.ReplicationPodFQDN(pods[i].Name, crName, namespace, domain))
		h.ipOf[name], h.nameOf[ip] = ip, name
	}
	return h
}

// ip is the pod IP a reported host stands for: the IP of the pod the DNS name names (DNS
// names compare without case and without a final dot), else the host unchanged.
func (h podHosts) ip(host string) string {
	if ip, ok := h.ipOf[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		return ip
	}
	return host
}

// address is how Redis and the sentinels are told of the pod at ip: its DNS name when the
// sentinels name hosts, else the IP.
func (h podHosts) address(ip string) string {
	if name, ok := h.nameOf[ip]; ok && h.names {
		return name
	}
	return ip
}

// canonical is a reported host in the form the sentinels should report it: a pod's IP or
// name both become address of that pod.
func (h podHosts) canonical(host string) string {
	return h.address(h.ip(host))
}
