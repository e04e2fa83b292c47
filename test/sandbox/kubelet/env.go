package kubelet

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Expand replaces $(VAR) references in s with values from lookup, as the kubelet does for
// command, args and env values: $$ escapes a $, and references to unknown variables stay
// as they are.
func Expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// configError is a container configuration that cannot be satisfied yet (a missing Secret,
// ConfigMap or key): the container waits with reason CreateContainerConfigError.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, a ...any) error { return &configError{msg: fmt.Sprintf(format, a...)} }

// envContext is what environment resolution reads from the cluster and the pod.
type envContext struct {
	pod        *corev1.Pod
	podIP      string
	hostIP     string
	configMap  func(ns, name string) (*corev1.ConfigMap, error)
	secret     func(ns, name string) (*corev1.Secret, error)
	serviceEnv map[string]string
	allocCPU   resource.Quantity
	allocMem   resource.Quantity
}

// containerEnv resolves a container's environment in the kubelet's order: service
// variables, envFrom sources, then env entries (each may reference the ones before it).
func (e *envContext) containerEnv(c *corev1.Container) ([]string, map[string]string, error) {
	vars := map[string]string{}
	for k, v := range e.serviceEnv {
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := e.configMap(e.pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if optional(from.ConfigMapRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, nil, configErrorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				putEnv(vars, from.Prefix+k, v)
			}
		case from.SecretRef != nil:
			s, err := e.secret(e.pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if optional(from.SecretRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, nil, configErrorf("secret %q not found", from.SecretRef.Name)
			}
			for k, v := range s.Data {
				putEnv(vars, from.Prefix+k, string(v))
			}
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, ev := range c.Env {
		if ev.ValueFrom == nil {
			vars[ev.Name] = Expand(ev.Value, lookup)
			continue
		}
		v, ok, err := e.valueFrom(c, ev.ValueFrom)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			vars[ev.Name] = v
		}
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, vars, nil
}

// putEnv sets k unless it cannot be an environment variable name (relaxed validation, as
// in current Kubernetes: any printable name without "=").
func putEnv(vars map[string]string, k, v string) {
	if k != "" && !strings.ContainsAny(k, "=\x00") {
		vars[k] = v
	}
}

func optional(b *bool) bool { return b != nil && *b }

func (e *envContext) valueFrom(c *corev1.Container, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := e.fieldValue(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := e.resourceValue(c, src.ResourceFieldRef)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := e.configMap(e.pod.Namespace, ref.Name)
		if err != nil {
			if optional(ref.Optional) {
				return "", false, nil
			}
			return "", false, configErrorf("configmap %q not found", ref.Name)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, e.pod.Namespace, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := e.secret(e.pod.Namespace, ref.Name)
		if err != nil {
			if optional(ref.Optional) {
				return "", false, nil
			}
			return "", false, configErrorf("secret %q not found", ref.Name)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, e.pod.Namespace, ref.Name)
	}
	return "", false, nil
}

// fieldValue resolves a downward-API field path.
func (e *envContext) fieldValue(path string) (string, error) {
	p := e.pod
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return e.hostIP, nil
	case "status.podIP", "status.podIPs":
		return e.podIP, nil
	case "metadata.labels":
		return formatMap(p.Labels), nil
	case "metadata.annotations":
		return formatMap(p.Annotations), nil
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels", p.Labels}, {"metadata.annotations", p.Annotations}} {
		if rest, ok := strings.CutPrefix(path, m.prefix+"['"); ok && strings.HasSuffix(rest, "']") {
			return m.values[strings.TrimSuffix(rest, "']")], nil
		}
	}
	return "", configErrorf("unsupported fieldPath %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, strconv.Quote(m[k]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue resolves a resourceFieldRef; an unset limit is the node's allocatable.
func (e *envContext) resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" {
		c = findContainer(e.pod, ref.ContainerName)
		if c == nil {
			return "", configErrorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var q resource.Quantity
	var found bool
	name, kind, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", configErrorf("unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if name == "requests" {
		list = c.Resources.Requests
	}
	q, found = list[corev1.ResourceName(kind)]
	if !found {
		switch {
		case kind == "cpu" && name == "limits":
			q = e.allocCPU
		case kind == "memory" && name == "limits":
			q = e.allocMem
		case kind == "ephemeral-storage" && name == "limits":
			q = resource.MustParse("100Gi")
		default:
			q = resource.Quantity{}
		}
	}
	if kind == "cpu" {
		v := int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))
		if name == "requests" && !found {
			v = 0
		}
		return strconv.FormatInt(v, 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// serviceEnv returns the Service variables a kubelet gives every container of a pod in ns:
// those of the "kubernetes" Service of the default namespace always, and with service links
// enabled (the default) those of every Service of ns that has a ClusterIP, with the
// Docker-link forms. services are the candidates, in any order.
func serviceEnv(services []*corev1.Service, ns string, enableLinks bool) map[string]string {
	byName := map[string]*corev1.Service{}
	for _, svc := range services {
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
			continue
		}
		switch {
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes":
			if _, ok := byName[svc.Name]; !ok {
				byName[svc.Name] = svc
			}
		case svc.Namespace == ns && enableLinks:
			byName[svc.Name] = svc
		}
	}
	vars := map[string]string{}
	for _, svc := range byName {
		prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
		ip := svc.Spec.ClusterIP
		vars[prefix+"_SERVICE_HOST"] = ip
		vars[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
		for i, sp := range svc.Spec.Ports {
			port := strconv.Itoa(int(sp.Port))
			if sp.Name != "" {
				vars[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_"))] = port
			}
			proto := string(sp.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP)
			}
			url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
			if i == 0 {
				vars[prefix+"_PORT"] = url
			}
			p := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
			vars[p] = url
			vars[p+"_PROTO"] = strings.ToLower(proto)
			vars[p+"_PORT"] = port
			vars[p+"_ADDR"] = ip
		}
	}
	return vars
}
