//go:build integration

package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// apiLog records, in the API server's order (resource versions), every version of the
// Services, ConfigMaps and StatefulSets of a namespace.
type apiLog struct {
	mu      sync.Mutex
	entries []apiEntry
}

type apiEntry struct {
	rv   int64
	kind string
	verb watch.EventType
	obj  any
}

func recordAPI(t *testing.T, ns string) *apiLog {
	t.Helper()
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &apiLog{}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for kind, start := range map[string]func() (watch.Interface, error){
		"Service":   func() (watch.Interface, error) { return kube.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{}) },
		"ConfigMap": func() (watch.Interface, error) { return kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{}) },
		"StatefulSet": func() (watch.Interface, error) {
			return kube.AppsV1().StatefulSets(ns).Watch(ctx, metav1.ListOptions{})
		},
	} {
		w, err := start()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(metav1.Object)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
				l.mu.Lock()
				l.entries = append(l.entries, apiEntry{rv: rv, kind: kind, verb: ev.Type, obj: ev.Object})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// first returns the resource version of the first entry that matches, 0 if none does.
func (l *apiLog) first(match func(apiEntry) bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := slices.Clone(l.entries)
	slices.SortFunc(entries, func(a, b apiEntry) int { return int(a.rv - b.rv) })
	for _, e := range entries {
		if match(e) {
			return e.rv
		}
	}
	return 0
}

func (l *apiLog) added(kind, name string) int64 {
	return l.first(func(e apiEntry) bool {
		return e.kind == kind && e.verb == watch.Added && e.obj.(metav1.Object).GetName() == name
	})
}

// stsWithReplicas is the first version of StatefulSet name with the given replicas.
func (l *apiLog) stsWithReplicas(name string, replicas int32) int64 {
	return l.first(func(e apiEntry) bool {
		sts, ok := e.obj.(*appsv1.StatefulSet)
		return ok && sts.Name == name && sts.Spec.Replicas != nil && *sts.Spec.Replicas == replicas
	})
}

// nodePortFile is the first version of the ConfigMap holding pod's file with these node ports.
func (l *apiLog) nodePortFile(cm, pod string, ports builder.NodePorts) int64 {
	want := fmt.Sprintf("cluster-announce-port %d\ncluster-announce-bus-port %d\n", ports.Client, ports.Bus)
	return l.first(func(e apiEntry) bool {
		m, ok := e.obj.(*corev1.ConfigMap)
		return ok && m.Name == cm && m.Data[pod+".conf"] == want
	})
}

func nodePortsOfService(t *testing.T, c client.Client, ns, name string) builder.NodePorts {
	t.Helper()
	var np builder.NodePorts
	waitUntil(t, 30*time.Second, "Service "+name+" with node ports", func() error {
		svc := &corev1.Service{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			return err
		}
		var ok bool
		if np, ok = builder.NodePortsOf(svc); !ok {
			return fmt.Errorf("ports %+v", svc.Spec.Ports)
		}
		return nil
	})
	return np
}

// A NodePort cluster's per-pod Services come before the pods: each pod's Service is created,
// and the node ports the API server gave it are in its pod's file, before the StatefulSet
// asks for that pod, at creation and at a scale-out. A Service recreated with other node
// ports has its pod's file follow. Back to ClusterIP, the Services and files go.
func TestNodePortServicesComeBeforeTheirPods(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	log := recordAPI(t, ns)
	size, followers := int32(3), int32(3)
	cr := &v1beta2.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: ns},
		Spec: v1beta2.RedisClusterSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
			Service: &v1beta2.ServiceConfig{ServiceType: "NodePort"}}},
	}
	cr.Spec.RedisFollower.Replicas = &followers
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	checkBefore := func(replicas int32) {
		t.Helper()
		for _, role := range []string{"leader", "follower"} {
			sts := "np-" + role
			waitUntil(t, 30*time.Second, fmt.Sprintf("StatefulSet %s with %d replicas", sts, replicas), func() error {
				if log.stsWithReplicas(sts, replicas) == 0 {
					return fmt.Errorf("not yet")
				}
				return nil
			})
			grown := log.stsWithReplicas(sts, replicas)
			for i := range replicas {
				pod := builder.PodName(sts, i)
				ports := nodePortsOfService(t, c, ns, pod)
				if svc := log.added("Service", pod); svc == 0 || svc > grown {
					t.Errorf("Service %s added at version %d, the StatefulSet asked for its pod at %d", pod, svc, grown)
				}
				if file := log.nodePortFile(builder.NodePortsConfigMapName(sts), pod, ports); file == 0 || file > grown {
					t.Errorf("the file of %s with node ports %+v written at version %d, the StatefulSet asked for its pod at %d", pod, ports, file, grown)
				}
			}
		}
	}
	checkBefore(3)

	size = 4
	cr = &v1beta2.RedisCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "np"}, cr); err != nil {
		t.Fatal(err)
	}
	cr.Spec.Size = &size
	cr.Spec.RedisFollower.Replicas = &size
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	checkBefore(4)

	// A Service deleted by someone is recreated, and its pod's file follows its new node ports.
	old := nodePortsOfService(t, c, ns, "np-leader-1")
	if err := c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np-leader-1"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "np-leader-1's file follows its recreated Service", func() error {
		now := nodePortsOfService(t, c, ns, "np-leader-1")
		if now == old {
			return fmt.Errorf("the Service still has %+v", old)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "np-leader-nodeports"}, cm); err != nil {
			return err
		}
		if got := cm.Data["np-leader-1.conf"]; !strings.Contains(got, fmt.Sprintf("cluster-announce-port %d\n", now.Client)) {
			return fmt.Errorf("file %q, Service %+v", got, now)
		}
		return nil
	})

	// Back to in-cluster addresses: no per-pod Service, no file.
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "np"}, cr); err != nil {
		t.Fatal(err)
	}
	cr.Spec.KubernetesConfig.Service = nil
	if err := c.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "per-pod Services and node port files removed", func() error {
		for _, name := range []string{"np-leader-0", "np-follower-3"} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Service %s: %w", name, err)
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "np-leader-nodeports"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap np-leader-nodeports: %w", err)
		}
		return nil
	})
}
