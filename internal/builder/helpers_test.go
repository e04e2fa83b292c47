package builder

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// mustBuild(t)(BuildX(in)) fails the test on a build error.
func mustBuild(t *testing.T) func(*Objects, error) *Objects {
	t.Helper()
	return func(o *Objects, err error) *Objects {
		t.Helper()
		if err != nil {
			t.Fatalf("build: %v", err)
		}
		return o
	}
}

func names[T interface{ GetName() string }](list []T) []string {
	var out []string
	for _, x := range list {
		out = append(out, x.GetName())
	}
	return out
}

func wantNames[T interface{ GetName() string }](t *testing.T, what string, list []T, want ...string) {
	t.Helper()
	if got := names(list); !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func hasContainer(spec corev1.PodSpec, name string) bool {
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		if c.Name == name {
			return true
		}
	}
	return false
}

func mounts(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		out[m.MountPath] = m.Name
	}
	return out
}

func volume(t *testing.T, spec corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %q", name)
	return corev1.Volume{}
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func portsOf(svc *corev1.Service) map[string]int32 {
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.Port
	}
	return out
}

func containerPorts(c corev1.Container) map[string]int32 {
	out := map[string]int32{}
	for _, p := range c.Ports {
		out[p.Name] = p.ContainerPort
	}
	return out
}

// checkWorkloadShape asserts what every StatefulSet built here must satisfy: compatible labels
// on it and its pods, a selector on exactly those labels, the headless governing Service, and a
// controller reference to the CR.
func checkWorkloadShape(t *testing.T, o *Objects, stsName, setupType, role, ownerKind string) *appsv1.StatefulSet {
	t.Helper()
	sts := o.StatefulSet(stsName)
	if sts == nil {
		t.Fatalf("no StatefulSet %q among %v", stsName, names(o.StatefulSets))
	}
	sel := map[string]string{LabelApp: stsName, LabelSetupType: setupType, LabelRole: role}
	wantEqual(t, stsName+" selector", sts.Spec.Selector.MatchLabels, sel)
	for what, labels := range map[string]map[string]string{"labels": sts.Labels, "pod labels": sts.Spec.Template.Labels} {
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s %s[%s] = %q, want %q", stsName, what, k, labels[k], v)
			}
		}
		if _, ok := labels[LabelRedisRole]; ok {
			t.Errorf("%s %s carry %s, which only the controller may set", stsName, what, LabelRedisRole)
		}
	}
	headless := stsName + "-headless"
	if ownerKind == "RedisReplication" && setupType == SetupSentinel {
		headless = stsName + "-hl" // the embedded sentinels' <name>-s-hl
	}
	if sts.Spec.ServiceName != headless {
		t.Errorf("%s serviceName = %q, want %q", stsName, sts.Spec.ServiceName, headless)
	}
	for _, obj := range o.All() {
		refs := obj.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != ownerKind || refs[0].Controller == nil || !*refs[0].Controller ||
			refs[0].APIVersion != "redis.redis.opstreelabs.in/v1beta2" || refs[0].UID == "" {
			t.Errorf("%s %s: owner references %+v, want one controller reference to the %s", reflect.TypeOf(obj).Elem().Name(), obj.GetName(), refs, ownerKind)
		}
		if obj.GetNamespace() != testNamespace {
			t.Errorf("%s namespace = %q", obj.GetName(), obj.GetNamespace())
		}
	}
	if sts.Spec.Template.Annotations[AnnotationConfigHash] == "" {
		t.Errorf("%s pod template has no config hash", stsName)
	}
	return sts
}

// checkServices asserts the client/headless/additional(/metrics) Services of a workload.
func checkServices(t *testing.T, o *Objects, stsName string, port int32, metricsPort int32) {
	t.Helper()
	sel := o.StatefulSet(stsName).Spec.Selector.MatchLabels
	for _, n := range []string{stsName, stsName + "-headless", stsName + "-additional"} {
		svc := o.Service(n)
		if svc == nil {
			t.Errorf("no Service %q", n)
			continue
		}
		wantEqual(t, n+" selector", svc.Spec.Selector, sel)
		var p corev1.ServicePort
		for _, sp := range svc.Spec.Ports {
			if sp.Port == port {
				p = sp
			}
		}
		if p.Port != port || p.TargetPort.IntValue() != int(port) {
			t.Errorf("%s ports %+v lack %d", n, svc.Spec.Ports, port)
		}
	}
	if h := o.Service(stsName + "-headless"); h != nil {
		if h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
			t.Errorf("%s-headless: clusterIP %q publishNotReadyAddresses %v", stsName, h.Spec.ClusterIP, h.Spec.PublishNotReadyAddresses)
		}
	}
	m := o.Service(stsName + "-metrics")
	switch {
	case metricsPort == 0 && m != nil:
		t.Errorf("metrics Service %q built with the exporter off", m.Name)
	case metricsPort != 0 && m == nil:
		t.Errorf("no metrics Service %s-metrics", stsName)
	case metricsPort != 0:
		wantEqual(t, m.Name+" ports", portsOf(m), map[string]int32{exporterPortName: metricsPort})
		wantEqual(t, m.Name+" selector", m.Spec.Selector, sel)
	}
}

func confOf(t *testing.T, o *Objects, cmName, key string) string {
	t.Helper()
	cm := o.ConfigMap(cmName)
	if cm == nil {
		t.Fatalf("no ConfigMap %q among %v", cmName, names(o.ConfigMaps))
	}
	return cm.Data[key]
}

func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("%s lacks line %q:\n%s", what, l, text)
		}
	}
}

func lacksLines(t *testing.T, what, text string, prefixes ...string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				t.Errorf("%s has unexpected line %q", what, l)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// keySet is a map with the given keys, for comparing key sets with sortedKeys.
func keySet(first string, more ...string) map[string]string {
	m := map[string]string{first: ""}
	for _, k := range more {
		m[k] = ""
	}
	return m
}
