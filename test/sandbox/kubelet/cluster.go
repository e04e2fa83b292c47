// Package kubelet runs the sandbox's virtual nodes: virtual-kubelet node and pod controllers
// (registration, leases, pod status sync, the kubelet API for logs and exec) with a provider
// whose pods are local processes in their own network and mount namespaces.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/rediskube/redis-operator/test/sandbox/images"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/network"
)

// Config is what the virtual nodes share.
type Config struct {
	Inst   instance.Instance
	Images images.Table
	// Self is the sandbox executable, re-executed as `container-init` for every container.
	Self   string
	Net    *network.Manager
	Client kubernetes.Interface
	Log    *slog.Logger
	// DNS is the cluster DNS server pods use (zero: none, pods get the host's resolv.conf).
	DNS netip.Addr
	// NodeCPU and NodeMemory are each node's capacity (virtual: pods share the machine).
	NodeCPU    resource.Quantity
	NodeMemory resource.Quantity
	// VolumeRefresh is how often a pod's configMap, secret, projected and downward-API
	// volumes are re-rendered (zero: DefaultVolumeRefresh). A kubelet does it on each pod
	// sync, every minute by default, so a Secret edit reaches pods up to a minute apart.
	VolumeRefresh time.Duration
}

// DefaultVolumeRefresh is a kubelet's default sync period, when a pod's volumes whose
// content comes from API objects are brought up to date.
const DefaultVolumeRefresh = time.Minute

// EffectiveVolumeRefresh is VolumeRefresh, or its default when unset.
func (c Config) EffectiveVolumeRefresh() time.Duration {
	if c.VolumeRefresh <= 0 {
		return DefaultVolumeRefresh
	}
	return c.VolumeRefresh
}

// Cluster is the set of virtual nodes of a sandbox.
type Cluster struct {
	cfg Config
	ctx context.Context

	factory    informers.SharedInformerFactory
	configMaps corev1listers.ConfigMapLister
	secrets    corev1listers.SecretLister
	services   corev1listers.ServiceLister

	mu    sync.Mutex
	nodes []*Node
}

// Start registers cfg.Inst.Nodes virtual nodes and waits until they are ready.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.NodeCPU.IsZero() {
		cfg.NodeCPU = resource.MustParse("16")
	}
	if cfg.NodeMemory.IsZero() {
		cfg.NodeMemory = resource.MustParse("64Gi")
	}
	vklog.L = vkslog.FromSlog(slog.New(quietHandler{Handler: cfg.Log.Handler()}).With("component", "virtual-kubelet"))
	c := &Cluster{cfg: cfg, ctx: ctx}
	c.factory = informers.NewSharedInformerFactory(cfg.Client, 10*time.Minute)
	c.configMaps = c.factory.Core().V1().ConfigMaps().Lister()
	c.secrets = c.factory.Core().V1().Secrets().Lister()
	c.services = c.factory.Core().V1().Services().Lister()
	c.factory.Start(ctx.Done())
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("sync informer for %v", typ)
		}
	}
	if err := os.MkdirAll(cfg.Inst.PodsDir(), 0o755); err != nil {
		return nil, err
	}
	c.nodes = make([]*Node, cfg.Inst.Nodes)
	errs := make(chan error, cfg.Inst.Nodes)
	for i := 0; i < cfg.Inst.Nodes; i++ {
		go func() {
			n, err := c.startNode(i)
			c.mu.Lock()
			c.nodes[i] = n
			c.mu.Unlock()
			errs <- err
		}()
	}
	var all []error
	for i := 0; i < cfg.Inst.Nodes; i++ {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// serviceEnv is the Service environment of pod's containers, computed when a container
// starts, as a kubelet does. The "kubernetes" Service's variables are there even before the
// informer has seen it: in-cluster clients depend on them.
func (c *Cluster) serviceEnv(pod *corev1.Pod) map[string]string {
	var candidates []*corev1.Service
	if list, err := c.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		candidates = append(candidates, list...)
	}
	if k, err := c.services.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
		candidates = append(candidates, k)
	} else {
		candidates = append(candidates, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubernetes"},
			Spec: corev1.ServiceSpec{ClusterIP: c.cfg.Inst.KubernetesServiceIP().String(),
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
		})
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return serviceEnv(candidates, pod.Namespace, links)
}

// Stop stops every node and kills every pod process.
func (c *Cluster) Stop() {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.stop() }()
		}
	}
	wg.Wait()
}

func (c *Cluster) node(name string) (int, *Node, error) {
	idx := c.cfg.Inst.NodeIndex(name)
	if idx < 0 {
		return -1, nil, fmt.Errorf("no node %q (nodes: %v)", name, c.NodeNames())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return idx, c.nodes[idx], nil
}

// NodeNames lists the nodes.
func (c *Cluster) NodeNames() []string {
	var out []string
	for i := 0; i < c.cfg.Inst.Nodes; i++ {
		out = append(out, c.cfg.Inst.NodeName(i))
	}
	return out
}

// StopNode kills every process of the node's pods and stops its kubelet: heartbeats stop
// and the control plane marks the node NotReady after the node-monitor grace period.
func (c *Cluster) StopNode(name string) error {
	idx, n, err := c.node(name)
	if err != nil {
		return err
	}
	if n == nil {
		return fmt.Errorf("node %q is already stopped", name)
	}
	n.stop()
	c.mu.Lock()
	c.nodes[idx] = nil
	c.mu.Unlock()
	return nil
}

// StartNode starts a stopped node's kubelet again; the node's pods are started anew, each
// with a new sandbox and IP, as after a reboot.
func (c *Cluster) StartNode(name string) error {
	idx, n, err := c.node(name)
	if err != nil {
		return err
	}
	if n != nil {
		return fmt.Errorf("node %q is running", name)
	}
	n, err = c.startNode(idx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[idx] = n
	c.mu.Unlock()
	return nil
}

// NodeRunning reports whether the node's kubelet runs.
func (c *Cluster) NodeRunning(name string) bool {
	_, n, err := c.node(name)
	return err == nil && n != nil
}

// findPod returns the live sandbox of pod namespace/name on any node.
func (c *Cluster) findPod(namespace, name string) (*podSandbox, error) {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if sb := n.provider.current(namespace, name); sb != nil {
			return sb, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s is not running on any running node", namespace, name)
}

// CrashContainer kills a container's processes with SIGKILL; its restart policy then acts.
// An empty container name means the pod's first container.
func (c *Cluster) CrashContainer(namespace, pod, container string) error {
	sb, err := c.findPod(namespace, pod)
	if err != nil {
		return err
	}
	ct, err := sb.container(container)
	if err != nil {
		return err
	}
	return ct.signal(sigKill)
}

// Cut disconnects a pod from the network; Heal reconnects it.
func (c *Cluster) Cut(namespace, pod string) error {
	sb, err := c.findPod(namespace, pod)
	if err != nil {
		return err
	}
	n, ok := sb.network()
	if !ok {
		return fmt.Errorf("pod %s/%s has no network yet", namespace, pod)
	}
	return c.cfg.Net.Cut(n)
}

// Heal reconnects a pod cut off by Cut.
func (c *Cluster) Heal(namespace, pod string) error {
	sb, err := c.findPod(namespace, pod)
	if err != nil {
		return err
	}
	n, ok := sb.network()
	if !ok {
		return fmt.Errorf("pod %s/%s has no network yet", namespace, pod)
	}
	return c.cfg.Net.Heal(n)
}

// PodInfo describes a running pod sandbox.
type PodInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	IP        string `json:"ip"`
	NetNS     string `json:"netns"`
	Cut       bool   `json:"cut"`
}

// Pods lists the pod sandboxes of all running nodes.
func (c *Cluster) Pods() []PodInfo {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	var out []PodInfo
	for _, n := range nodes {
		if n == nil {
			continue
		}
		for _, sb := range n.provider.all() {
			pod := sb.currentPod()
			info := PodInfo{Namespace: pod.Namespace, Name: pod.Name, Node: n.name}
			if net, ok := sb.network(); ok {
				info.IP, info.NetNS, info.Cut = net.IP.String(), net.NetNS, network.IsCut(net)
			}
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (c *Cluster) configMap(ns, name string) (*corev1.ConfigMap, error) {
	cm, err := c.configMaps.ConfigMaps(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The informer may lag behind an object created just before the pod.
		return c.cfg.Client.CoreV1().ConfigMaps(ns).Get(c.ctx, name, getOpts)
	}
	return cm, err
}

func (c *Cluster) secret(ns, name string) (*corev1.Secret, error) {
	s, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.cfg.Client.CoreV1().Secrets(ns).Get(c.ctx, name, getOpts)
	}
	return s, err
}

// claimPath returns the host directory backing a bound PersistentVolumeClaim.
func (c *Cluster) claimPath(ns, name string) (string, error) {
	pvc, err := c.cfg.Client.CoreV1().PersistentVolumeClaims(ns).Get(c.ctx, name, getOpts)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", name, err)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound", name)
	}
	pv, err := c.cfg.Client.CoreV1().PersistentVolumes().Get(c.ctx, pvc.Spec.VolumeName, getOpts)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pvc.Spec.VolumeName, err)
	}
	var p string
	switch {
	case pv.Spec.HostPath != nil:
		p = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		p = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("persistentvolume %q is neither hostPath nor local", pv.Name)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
	}
	return filepath.Clean(p), nil
}
