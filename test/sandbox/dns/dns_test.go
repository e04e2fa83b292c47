package dns

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type fakeRecords struct {
	services map[string]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice
}

func (f fakeRecords) Service(ns, name string) (*corev1.Service, error) {
	if s, ok := f.services[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
}

func (f fakeRecords) EndpointSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	return f.slices[ns+"/"+name], nil
}

func (f fakeRecords) ServicesByIP(ip string) []*corev1.Service {
	var out []*corev1.Service
	for _, s := range f.services {
		if s.Spec.ClusterIP == ip {
			out = append(out, s)
		}
	}
	return out
}

func (f fakeRecords) EndpointSlicesByIP(ip string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, ss := range f.slices {
		for _, s := range ss {
			for _, ep := range s.Endpoints {
				for _, a := range ep.Addresses {
					if a == ip {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// service is a Service of namespace db.
func service(name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports}}
}

func records() fakeRecords {
	yes, no := true, false
	slice := func(ns, svc string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps, Ports: ports,
		}
	}
	redisPort := []discoveryv1.EndpointPort{{Name: ptr("redis"), Port: ptr(int32(6379)), Protocol: ptr(corev1.ProtocolTCP)}}
	external := service("ext", "")
	external.Spec.Type = corev1.ServiceTypeExternalName
	external.Spec.ExternalName = "redis.example.com"
	return fakeRecords{
		services: map[string]*corev1.Service{
			"db/redis":  service("redis", corev1.ClusterIPNone, corev1.ServicePort{Name: "redis", Port: 6379, Protocol: corev1.ProtocolTCP}),
			"db/master": service("master", "10.96.0.10", corev1.ServicePort{Name: "redis", Port: 6379, Protocol: corev1.ProtocolTCP}),
			"db/empty":  service("empty", corev1.ClusterIPNone),
			"db/ext":    external,
		},
		slices: map[string][]*discoveryv1.EndpointSlice{
			"db/redis": {slice("db", "redis", redisPort,
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.5"}, Hostname: ptr("redis-0"), Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.6"}, Hostname: ptr("redis-1"), Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.7"}, Hostname: ptr("redis-2"), Conditions: discoveryv1.EndpointConditions{Ready: &no}},
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.8"}},
			)},
			"db/master": {slice("db", "master", redisPort,
				discoveryv1.Endpoint{Addresses: []string{"10.244.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}})},
		},
	}
}

// ask resolves name/typ and renders the answer section as strings.
func ask(name string, typ dnsmessage.Type) (dnsmessage.RCode, []string) {
	a := Resolve(records(), dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
	var out []string
	for _, rr := range a.Answers {
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			out = append(out, fmt.Sprintf("A %d.%d.%d.%d", b.A[0], b.A[1], b.A[2], b.A[3]))
		case *dnsmessage.SRVResource:
			out = append(out, fmt.Sprintf("SRV %d %s", b.Port, b.Target))
		case *dnsmessage.PTRResource:
			out = append(out, "PTR "+b.PTR.String())
		case *dnsmessage.CNAMEResource:
			out = append(out, "CNAME "+b.CNAME.String())
		}
	}
	sort.Strings(out)
	return a.RCode, out
}

func TestResolve(t *testing.T) {
	ok, nx := dnsmessage.RCodeSuccess, dnsmessage.RCodeNameError
	A, AAAA, SRV, PTR := dnsmessage.TypeA, dnsmessage.TypeAAAA, dnsmessage.TypeSRV, dnsmessage.TypePTR
	cases := []struct {
		name  string
		typ   dnsmessage.Type
		rcode dnsmessage.RCode
		want  []string
	}{
		// Headless: every ready endpoint, by Service name and by hostname.
		{"redis.db.svc.cluster.local.", A, ok, []string{"A 10.244.0.5", "A 10.244.0.6", "A 10.244.0.8"}},
		{"REDIS-1.redis.db.svc.cluster.local.", A, ok, []string{"A 10.244.0.6"}},
		{"10-244-0-8.redis.db.svc.cluster.local.", A, ok, []string{"A 10.244.0.8"}},
		{"redis-2.redis.db.svc.cluster.local.", A, nx, nil}, // not ready
		{"redis-9.redis.db.svc.cluster.local.", A, nx, nil},
		{"empty.db.svc.cluster.local.", A, nx, nil},
		{"redis.db.svc.cluster.local.", AAAA, ok, nil},
		{"_redis._tcp.redis.db.svc.cluster.local.", SRV, ok, []string{
			"SRV 6379 10-244-0-8.redis.db.svc.cluster.local.", "SRV 6379 redis-0.redis.db.svc.cluster.local.",
			"SRV 6379 redis-1.redis.db.svc.cluster.local."}},
		{"_other._tcp.redis.db.svc.cluster.local.", SRV, nx, nil},
		// ClusterIP: the VIP; its endpoints by dashed address.
		{"master.db.svc.cluster.local.", A, ok, []string{"A 10.96.0.10"}},
		{"_redis._tcp.master.db.svc.cluster.local.", SRV, ok, []string{"SRV 6379 master.db.svc.cluster.local."}},
		{"master.db.svc.cluster.local.", SRV, ok, []string{"SRV 6379 master.db.svc.cluster.local."}},
		{"10-244-0-5.master.db.svc.cluster.local.", A, ok, []string{"A 10.244.0.5"}},
		{"x.master.db.svc.cluster.local.", A, nx, nil},
		{"ext.db.svc.cluster.local.", A, ok, []string{"CNAME redis.example.com."}},
		{"nothing.db.svc.cluster.local.", A, nx, nil},
		{"master.db.cluster.local.", A, nx, nil},
		{"db.svc.cluster.local.", A, nx, nil},
		{"svc.cluster.local.", A, ok, nil},
		{"cluster.local.", A, ok, nil},
		// Pods by address.
		{"10-244-0-9.db.pod.cluster.local.", A, ok, []string{"A 10.244.0.9"}},
		{"pod-name.db.pod.cluster.local.", A, nx, nil},
		// Reverse.
		{"10.0.96.10.in-addr.arpa.", PTR, ok, []string{"PTR master.db.svc.cluster.local."}},
		{"6.0.244.10.in-addr.arpa.", PTR, ok, []string{"PTR redis-1.redis.db.svc.cluster.local."}},
		{"5.0.244.10.in-addr.arpa.", PTR, ok, []string{"PTR 10-244-0-5.master.db.svc.cluster.local.", "PTR redis-0.redis.db.svc.cluster.local."}},
		{"7.0.244.10.in-addr.arpa.", PTR, nx, nil},
		{"8.8.8.8.in-addr.arpa.", PTR, nx, nil},
		// Nothing outside the cluster, at once.
		{"example.com.", A, nx, nil},
		{"cluster.local.example.com.", A, nx, nil},
	}
	for _, tc := range cases {
		rcode, got := ask(tc.name, tc.typ)
		if rcode != tc.rcode || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s = %v %v; want %v %v", tc.typ, tc.name, rcode, got, tc.rcode, tc.want)
		}
	}
}

func TestWireFormat(t *testing.T) {
	query := func(name string, typ dnsmessage.Type, edns int) []byte {
		t.Helper()
		q := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: 4242, RecursionDesired: true},
			Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}},
		}
		if edns > 0 {
			var h dnsmessage.ResourceHeader
			if err := h.SetEDNS0(edns, dnsmessage.RCodeSuccess, false); err != nil {
				t.Fatal(err)
			}
			q.Additionals = []dnsmessage.Resource{{Header: h, Body: &dnsmessage.OPTResource{}}}
		}
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	unpack := func(name string, b []byte) dnsmessage.Message {
		t.Helper()
		var m dnsmessage.Message
		if err := m.Unpack(b); err != nil {
			t.Fatalf("unpack answer to %s: %v", name, err)
		}
		if m.ID != 4242 || !m.Response || !m.RecursionDesired || len(m.Questions) != 1 || m.Questions[0].Name.String() != name {
			t.Errorf("header/question of answer to %s: %+v", name, m)
		}
		return m
	}
	ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		return unpack(name, respond(records(), query(name, typ, 0), true))
	}
	m := ask("redis.db.svc.cluster.local.", dnsmessage.TypeA)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 3 || !m.Authoritative {
		t.Fatalf("A answer: %+v", m)
	}
	if a := m.Answers[1].Body.(*dnsmessage.AResource); a.A != [4]byte{10, 244, 0, 6} || m.Answers[1].Header.Name.String() != "redis.db.svc.cluster.local." {
		t.Errorf("second answer: %+v", m.Answers[1])
	}
	if m := ask("redis.db.svc.cluster.local.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 ||
		len(m.Authorities) != 1 || m.Authorities[0].Header.Type != dnsmessage.TypeSOA {
		t.Errorf("AAAA of an existing name must be an empty success with the zone's SOA: %+v", m)
	}
	if m := ask("none.db.svc.cluster.local.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("unknown service: %v", m.RCode)
	}
	if m := ask("example.com.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError || m.Authoritative {
		t.Errorf("outside the cluster domain: %v", m.RCode)
	}
	if m := ask("_redis._tcp.redis.db.svc.cluster.local.", dnsmessage.TypeSRV); len(m.Answers) != 3 || len(m.Additionals) != 3 {
		t.Errorf("SRV answers need the targets' addresses: %+v", m)
	}
	if m := unpack("redis.db.svc.cluster.local.", respond(records(), query("redis.db.svc.cluster.local.", dnsmessage.TypeA, 1232), true)); len(m.Additionals) != 1 ||
		m.Additionals[0].Header.Type != dnsmessage.TypeOPT {
		t.Errorf("an EDNS0 query gets an OPT record back: %+v", m.Additionals)
	}
	if respond(records(), []byte{1, 2, 3}, true) != nil {
		t.Error("a message shorter than a header must get no answer")
	}
}

// An answer too large for UDP is truncated so the client retries over TCP.
func TestTruncation(t *testing.T) {
	r := records()
	var eps []discoveryv1.Endpoint
	for i := range 60 {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.1.%d", i+1)}})
	}
	r.slices["db/redis"] = []*discoveryv1.EndpointSlice{{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "db", Labels: map[string]string{discoveryv1.LabelServiceName: "redis"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
	}}
	q, _ := (&dnsmessage.Message{Header: dnsmessage.Header{ID: 1}, Questions: []dnsmessage.Question{{
		Name: dnsmessage.MustNewName("redis.db.svc.cluster.local."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}).Pack()
	var udp, tcp dnsmessage.Message
	if err := udp.Unpack(respond(r, q, true)); err != nil || !udp.Truncated || len(udp.Answers) != 0 {
		t.Errorf("UDP answer: truncated %v with %d answers (%v)", udp.Truncated, len(udp.Answers), err)
	}
	if err := tcp.Unpack(respond(r, q, false)); err != nil || tcp.Truncated || len(tcp.Answers) != 60 {
		t.Errorf("TCP answer: truncated %v with %d answers (%v)", tcp.Truncated, len(tcp.Answers), err)
	}
}
