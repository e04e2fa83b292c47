package dns

import (
	"net/netip"
	"reflect"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

func records() fakeRecords {
	yes, no := true, false
	h0, h1, h2 := "redis-0", "redis-1", "redis-2"
	return fakeRecords{
		services: map[string]*corev1.Service{
			"db/redis":  {Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
			"db/master": {Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}},
		},
		slices: map[string][]*discoveryv1.EndpointSlice{
			"db/redis": {{
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{"10.244.0.5"}, Hostname: &h0, Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
					{Addresses: []string{"10.244.0.6"}, Hostname: &h1, Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
					{Addresses: []string{"10.244.0.7"}, Hostname: &h2, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
				},
			}},
		},
	}
}

func TestResolve(t *testing.T) {
	ips := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	cases := []struct {
		name  string
		ips   []netip.Addr
		rcode int
	}{
		{"redis.db.svc.cluster.local.", ips("10.244.0.5", "10.244.0.6"), rcodeOK},
		{"REDIS-2.redis.db.svc.cluster.local", ips("10.244.0.7"), rcodeOK},
		{"redis-9.redis.db.svc.cluster.local", nil, rcodeNXDomain},
		{"master.db.svc.cluster.local", ips("10.96.0.10"), rcodeOK},
		{"x.master.db.svc.cluster.local", nil, rcodeNXDomain},
		{"nothing.db.svc.cluster.local", nil, rcodeNXDomain},
		{"10-244-0-9.db.pod.cluster.local", ips("10.244.0.9"), rcodeOK},
		{"db.svc.cluster.local", nil, rcodeNXDomain},
		{"example.com", nil, rcodeRefused},
		{"cluster.local.example.com", nil, rcodeRefused},
	}
	for _, tc := range cases {
		got, rcode := Resolve(records(), tc.name)
		if rcode != tc.rcode || !reflect.DeepEqual(got, tc.ips) {
			t.Errorf("Resolve(%q) = %v, %d; want %v, %d", tc.name, got, rcode, tc.ips, tc.rcode)
		}
	}
}

func TestWireFormat(t *testing.T) {
	ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		t.Helper()
		q := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: 4242, RecursionDesired: true},
			Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}},
		}
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(respond(records(), b)); err != nil {
			t.Fatalf("unpack answer to %s: %v", name, err)
		}
		if m.ID != 4242 || !m.Response || !m.RecursionDesired || len(m.Questions) != 1 || m.Questions[0].Name.String() != name {
			t.Errorf("header/question of answer to %s: %+v", name, m)
		}
		return m
	}
	m := ask("redis.db.svc.cluster.local.", dnsmessage.TypeA)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 2 || !m.Authoritative {
		t.Fatalf("A answer: %+v", m)
	}
	if a := m.Answers[1].Body.(*dnsmessage.AResource); a.A != [4]byte{10, 244, 0, 6} || m.Answers[1].Header.Name.String() != "redis.db.svc.cluster.local." {
		t.Errorf("second answer: %+v", m.Answers[1])
	}
	if m := ask("redis.db.svc.cluster.local.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("AAAA of an existing name must be an empty success: %+v", m)
	}
	if m := ask("none.db.svc.cluster.local.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("unknown service: %v", m.RCode)
	}
	if m := ask("example.com.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeRefused {
		t.Errorf("outside the cluster domain: %v", m.RCode)
	}
	if respond(records(), []byte{1, 2, 3}) != nil {
		t.Error("a message shorter than a header must get no answer")
	}
}
