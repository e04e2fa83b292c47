package builder

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Object is what every built object is: assignable to controller-runtime's client.Object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Objects is the desired state of one custom resource. Objects not wanted by the spec (the
// metrics Service with the exporter off, a disabled headless or additional Service, a PDB not
// enabled, the auth Secret without a password) are absent; a controller deletes what it owns
// (label LabelInstance) and is absent. A cluster with zero followers keeps its follower
// StatefulSet, with 0 replicas.
type Objects struct {
	Secrets              []*corev1.Secret
	ConfigMaps           []*corev1.ConfigMap
	Services             []*corev1.Service
	StatefulSets         []*appsv1.StatefulSet
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// Retained names, as "Kind/name", objects the resource still needs but no longer builds,
	// which must not be pruned: the sentinels of an earlier version while their successors
	// take over.
	Retained []string
}

// All lists every object in a workable apply order: what pods mount first, then Services,
// StatefulSets and budgets.
func (o *Objects) All() []Object {
	var out []Object
	for _, x := range o.Secrets {
		out = append(out, x)
	}
	for _, x := range o.ConfigMaps {
		out = append(out, x)
	}
	for _, x := range o.Services {
		out = append(out, x)
	}
	for _, x := range o.StatefulSets {
		out = append(out, x)
	}
	for _, x := range o.PodDisruptionBudgets {
		out = append(out, x)
	}
	return out
}

// StatefulSet returns the StatefulSet with the given name, or nil.
func (o *Objects) StatefulSet(name string) *appsv1.StatefulSet { return find(o.StatefulSets, name) }

// Service returns the Service with the given name, or nil.
func (o *Objects) Service(name string) *corev1.Service { return find(o.Services, name) }

// ConfigMap returns the ConfigMap with the given name, or nil.
func (o *Objects) ConfigMap(name string) *corev1.ConfigMap { return find(o.ConfigMaps, name) }

// Secret returns the Secret with the given name, or nil.
func (o *Objects) Secret(name string) *corev1.Secret { return find(o.Secrets, name) }

// PodDisruptionBudget returns the budget with the given name, or nil.
func (o *Objects) PodDisruptionBudget(name string) *policyv1.PodDisruptionBudget {
	return find(o.PodDisruptionBudgets, name)
}

func find[T metav1.Object](list []T, name string) T {
	for _, x := range list {
		if x.GetName() == name {
			return x
		}
	}
	var zero T
	return zero
}

// add appends the workload's StatefulSet, Services and budget.
func (o *Objects) add(w *workload) {
	o.StatefulSets = append(o.StatefulSets, w.statefulSet())
	o.Services = append(o.Services, w.serviceObjects()...)
	if p := w.podDisruptionBudget(); p != nil {
		o.PodDisruptionBudgets = append(o.PodDisruptionBudgets, p)
	}
}

// serviceObjects builds the client, headless, additional and metrics Services of a workload.
// The client Service also exposes the exporter, when there is one.
func (w *workload) serviceObjects() []*corev1.Service {
	s := w.services
	// The replaced operator lists the client port, then the exporter's; the bus port, which
	// none of its client Services carries, comes after them, so that diffs and asserts
	// written against its ports by position still match.
	clientPorts := w.serverPorts(false)
	if w.exporter != nil {
		clientPorts = append(clientPorts, servicePort(exporterPortName, exporterPort(w.exporter)))
	}
	clientPorts = append(clientPorts, w.busPorts(s.clientBusPort)...)
	client := w.service(w.name, s.clientType, s.clientAnnotations, clientPorts, w.selectorLabels())
	out := []*corev1.Service{client}
	if s.headless.enabled {
		// Headless Services are always ClusterIP "None": the type option does not apply. Only
		// their own annotations go on them, because LoadBalancer and external-dns annotations
		// would act on every pod address.
		h := w.service(w.headlessServiceName(), corev1.ServiceTypeClusterIP, s.headless.annotations,
			w.serverPorts(s.headless.includeBusPort), w.selectorLabels())
		h.Spec.ClusterIP = corev1.ClusterIPNone
		// Pods must find each other by name before they are ready (cluster meet, replication).
		h.Spec.PublishNotReadyAddresses = true
		out = append(out, h)
	}
	if s.additional.enabled {
		ann := maps.Clone(s.clientAnnotations)
		if ann == nil {
			ann = map[string]string{}
		}
		maps.Copy(ann, s.additional.annotations)
		out = append(out, w.service(AdditionalServiceName(w.name), s.additional.serviceType, ann,
			w.serverPorts(s.additional.includeBusPort), w.selectorLabels()))
	}
	if w.exporter != nil {
		port := exporterPort(w.exporter)
		m := w.service(MetricsServiceName(w.name), corev1.ServiceTypeClusterIP, nil,
			[]corev1.ServicePort{servicePort(exporterPortName, port)}, w.selectorLabels())
		m.Labels[LabelComponent] = ComponentMetrics
		out = append(out, m)
	}
	return out
}

// serverPorts are the ports of a client-facing Service; the bus port only on clusters that
// ask for it.
func (w *workload) serverPorts(bus bool) []corev1.ServicePort {
	if w.server == sentinelServer {
		return []corev1.ServicePort{servicePort(sentinelPortName, w.port)}
	}
	return append([]corev1.ServicePort{servicePort(redisPortName, w.port)}, w.busPorts(bus)...)
}

// busPorts is the cluster bus port when the Service asks for it and the workload has one.
func (w *workload) busPorts(bus bool) []corev1.ServicePort {
	if !bus || w.server == sentinelServer || w.busPort == 0 {
		return nil
	}
	return []corev1.ServicePort{servicePort(busPortName, w.busPort)}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}
}

// service builds a Service of the workload; annotations are the user's, added to ours.
func (w *workload) service(name string, typ corev1.ServiceType, annotations map[string]string, ports []corev1.ServicePort, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: w.meta(name, w.labels(), w.serviceAnnotations(annotations)),
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Ports:    ports,
			Selector: selector,
		},
	}
}

// roleService selects the pods of the workload's CR whose redis-role label has the given value,
// and carries that label itself too, so that it can be found by the role it serves.
func roleService(w *workload, name, redisRole string, selector map[string]string, labels map[string]string) *corev1.Service {
	sel := maps.Clone(selector)
	sel[LabelRedisRole] = redisRole
	svc := w.service(name, corev1.ServiceTypeClusterIP, nil, w.serverPorts(false), sel)
	svc.Labels = maps.Clone(labels)
	svc.Labels[LabelRedisRole] = redisRole
	return svc
}

func (w *workload) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	minAvailable, maxUnavailable, wanted := pdbBounds(w.pdb)
	if !wanted {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: w.meta(w.name, w.labels(), nil),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:   minAvailable,
			MaxUnavailable: maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: w.selectorLabels()},
		},
	}
}

func (w *workload) configMap(key, content string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: w.meta(w.configMapName, w.labels(), nil),
		Data:       map[string]string{key: content},
	}
}

// redisAuthData is the content of a Redis auth Secret: the directives redis.conf includes and
// the bare password and user the preStop hook gives redis-cli. With operatorUser, replicas
// and the hook log in as the operator's ACL user, the default one being off.
func redisAuthData(password string, operatorUser bool) map[string]string {
	user := redis.DefaultUser
	if operatorUser {
		user = redis.OperatorUser
	}
	return map[string]string{RedisAuthKey: redisAuthFile(password, operatorUser), RedisPasswordKey: password, RedisUserKey: user}
}

// authSecret holds password directives; it is labelled for the CR, not for one workload,
// because a cluster's roles share it.
func authSecret(owner metav1.OwnerReference, namespace, instance, setupType, name string, content map[string]string) *corev1.Secret {
	labels := map[string]string{
		LabelSetupType: setupType,
		LabelInstance:  instance,
		LabelManagedBy: ManagedByValue,
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(owner, namespace, name, labels, nil),
		Type:       corev1.SecretTypeOpaque,
		Data:       secretData(content),
	}
}

func secretData(content map[string]string) map[string][]byte {
	data := make(map[string][]byte, len(content))
	for k, v := range content {
		data[k] = []byte(v)
	}
	return data
}
