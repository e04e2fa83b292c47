package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodHostsMapNamesAndIPs(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "rr-0"}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rr-1"}, Status: corev1.PodStatus{PodIP: "10.0.0.2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rr-2"}}, // being replaced: no address
	}
	names := newPodHosts(pods, "rr", "ns", "", true)
	ips := newPodHosts(pods, "rr", "ns", "", false)
	const name1 = "rr-1.rr-headless.ns.svc.cluster.local"
	for _, c := range []struct {
		what, got, want string
	}{
		{"a name reported", names.ip(name1), "10.0.0.2"},
		{"a name reported with a final dot and capitals", names.ip("RR-1.rr-headless.ns.svc.cluster.local."), "10.0.0.2"},
		{"a name reported without names", ips.ip(name1), "10.0.0.2"},
		{"an IP reported", names.ip("10.0.0.1"), "10.0.0.1"},
		{"a name of no pod with an address", names.ip("rr-2.rr-headless.ns.svc.cluster.local"), "rr-2.rr-headless.ns.svc.cluster.local"},
		{"another replication's pod", names.ip("rr-1.other-headless.ns.svc.cluster.local"), "rr-1.other-headless.ns.svc.cluster.local"},
		{"told by name", names.address("10.0.0.2"), name1},
		{"told by IP", ips.address("10.0.0.2"), "10.0.0.2"},
		{"an IP of no pod", names.address("10.9.9.9"), "10.9.9.9"},
		{"canonical of an IP", names.canonical("10.0.0.2"), name1},
		{"canonical of a name without names", ips.canonical(name1), "10.0.0.2"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
		}
	}
	if got := newPodHosts(pods, "rr", "ns", "example.internal", true).address("10.0.0.1"); got != "rr-0.rr-headless.ns.svc.example.internal" {
		t.Errorf("in another domain: %q", got)
	}
}
