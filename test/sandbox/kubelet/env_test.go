package kubelet

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	cases := map[string]string{
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(B)z":    "x1ytwoz",
		"$(UNKNOWN)":     "$(UNKNOWN)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"$A":             "$A",
		"$(EMPTY)|":      "|",
		"$(A":            "$(A",
		"$()":            "$()",
		"trailing $":     "trailing $",
		"$(A)$(A)$$$(B)": "11$two",
	}
	for in, want := range cases {
		if got := Expand(in, lookup); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	notFound := func(what, name string) error {
		return apierrors.NewNotFound(schema.GroupResource{Resource: what}, name)
	}
	opt := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{NodeName: "sandbox-a", ServiceAccountName: "sa"},
	}
	e := &envContext{
		pod: pod, podIP: "10.244.0.9", hostIP: "127.0.0.1",
		configMap: func(ns, name string) (*corev1.ConfigMap, error) {
			if name == "cm" {
				return &corev1.ConfigMap{Data: map[string]string{"K": "cmv", "bad-key": "skipped"}}, nil
			}
			return nil, notFound("configmaps", name)
		},
		secret: func(ns, name string) (*corev1.Secret, error) {
			if name == "s" {
				return &corev1.Secret{Data: map[string][]byte{"pw": []byte("hunter2")}}, nil
			}
			return nil, notFound("secrets", name)
		},
		serviceEnv: map[string]string{"KUBERNETES_SERVICE_HOST": "10.244.0.1"},
		allocCPU:   resource.MustParse("16"),
		allocMem:   resource.MustParse("64Gi"),
	}
	c := &corev1.Container{
		Name: "main",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: &opt}},
		},
		Env: []corev1.EnvVar{
			{Name: "K", Value: "override $(K)"},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "x", Optional: &opt}}},
			{Name: "URL", Value: "redis://$(IP):6379"},
		},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
	}
	_, vars, err := e.containerEnv(c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.244.0.1",
		"K":                       "override cmv",
		"S_pw":                    "hunter2",
		"IP":                      "10.244.0.9",
		"NODE":                    "sandbox-a",
		"APP":                     "x",
		"MEM":                     "128",
		"CPU":                     "16",
		"PW":                      "hunter2",
		"URL":                     "redis://10.244.0.9:6379",
		"bad-key":                 "skipped",
	}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s = %q, want %q", k, vars[k], v)
		}
	}
	for _, k := range []string{"OPT"} {
		if _, ok := vars[k]; ok {
			t.Errorf("%s should not be set", k)
		}
	}

	c.Env = append(c.Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "missing"}}})
	if _, _, err := e.containerEnv(c); err == nil {
		t.Error("a missing non-optional secret key must be a config error")
	} else if ce := (*configError)(nil); !errors.As(err, &ce) {
		t.Errorf("want *configError, got %T", err)
	}
}

func TestResolvConf(t *testing.T) {
	dnsIP := netip.MustParseAddr("10.244.0.1")
	pod := func(policy corev1.DNSPolicy, hostNet bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db"},
			Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: cfg}}
	}
	two := "2"
	cases := []struct {
		name string
		pod  *corev1.Pod
		dns  netip.Addr
		want string
		ok   bool
	}{
		{"cluster first", pod("", false, nil), dnsIP,
			"search db.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.244.0.1\noptions ndots:5\n", true},
		{"host network keeps the host's", pod(corev1.DNSClusterFirst, true, nil), dnsIP, "", false},
		{"with host net", pod(corev1.DNSClusterFirstWithHostNet, true, nil), dnsIP,
			"search db.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.244.0.1\noptions ndots:5\n", true},
		{"default", pod(corev1.DNSDefault, false, nil), dnsIP, "", false},
		{"no cluster DNS", pod("", false, nil), netip.Addr{}, "", false},
		{"none with config", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.244.0.99"}, Searches: []string{"example.internal"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}}), dnsIP,
			"search example.internal\nnameserver 10.244.0.99\noptions ndots:2 edns0\n", true},
		{"cluster plus options", pod("", false, &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}}}), dnsIP,
			"search db.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.244.0.1\noptions ndots:2\n", true},
	}
	for _, tc := range cases {
		got, ok := resolvConf(tc.pod, tc.dns)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: resolvConf = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Service variables as a kubelet sets them: the kubernetes Service always, the pod's
// namespace's Services with a ClusterIP when service links are on.
func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	services := []*corev1.Service{
		svc("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		svc("db", "redis-leader", "10.96.0.20",
			corev1.ServicePort{Name: "redis-client", Port: 6379, Protocol: corev1.ProtocolTCP},
			corev1.ServicePort{Name: "metrics", Port: 9121}),
		svc("db", "redis-headless", corev1.ClusterIPNone, corev1.ServicePort{Name: "redis", Port: 6379}),
		svc("other", "elsewhere", "10.96.0.30", corev1.ServicePort{Port: 80}),
	}
	got := serviceEnv(services, "db", true)
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":                "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":                "443",
		"KUBERNETES_SERVICE_PORT_HTTPS":          "443",
		"KUBERNETES_PORT":                        "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":                "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO":          "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":           "443",
		"KUBERNETES_PORT_443_TCP_ADDR":           "10.96.0.1",
		"REDIS_LEADER_SERVICE_HOST":              "10.96.0.20",
		"REDIS_LEADER_SERVICE_PORT":              "6379",
		"REDIS_LEADER_SERVICE_PORT_REDIS_CLIENT": "6379",
		"REDIS_LEADER_SERVICE_PORT_METRICS":      "9121",
		"REDIS_LEADER_PORT":                      "tcp://10.96.0.20:6379",
		"REDIS_LEADER_PORT_6379_TCP":             "tcp://10.96.0.20:6379",
		"REDIS_LEADER_PORT_6379_TCP_PROTO":       "tcp",
		"REDIS_LEADER_PORT_6379_TCP_PORT":        "6379",
		"REDIS_LEADER_PORT_6379_TCP_ADDR":        "10.96.0.20",
		"REDIS_LEADER_PORT_9121_TCP":             "tcp://10.96.0.20:9121",
		"REDIS_LEADER_PORT_9121_TCP_PROTO":       "tcp",
		"REDIS_LEADER_PORT_9121_TCP_PORT":        "9121",
		"REDIS_LEADER_PORT_9121_TCP_ADDR":        "10.96.0.20",
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected %s=%q", k, v)
			}
		}
	}
	noLinks := serviceEnv(services, "db", false)
	if len(noLinks) != 8 || noLinks["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("without service links only the kubernetes Service's 8 variables remain: %v", noLinks)
	}
}
