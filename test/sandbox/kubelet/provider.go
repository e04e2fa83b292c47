package kubelet

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Provider is the virtual-kubelet provider of one node. It keys pod sandboxes by UID, so a
// pod recreated under the same name (StatefulSet) starts only after its predecessor's
// processes are gone.
type Provider struct {
	c        *Cluster
	nodeName string
	nodeIdx  int
	recorder record.EventRecorder

	mu      sync.Mutex
	pods    map[types.UID]*podSandbox
	notify  func(*corev1.Pod)
	halted  bool
	counter int
}

func newProvider(c *Cluster, nodeName string, idx int, recorder record.EventRecorder) *Provider {
	return &Provider{c: c, nodeName: nodeName, nodeIdx: idx, recorder: recorder, pods: map[types.UID]*podSandbox{}}
}

// hostIP is the node's address, which pods see as status.hostIP.
func (p *Provider) hostIP() string { return p.c.cfg.Inst.NodeIP(p.nodeIdx).String() }

// CreatePod starts a pod sandbox; the work happens in the background and is reported
// through NotifyPods.
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.sync(pod)
	return nil
}

// UpdatePod applies changes of a running pod (images, labels, annotations).
func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.sync(pod)
	return nil
}

func (p *Provider) sync(pod *corev1.Pod) {
	p.mu.Lock()
	if p.halted {
		p.mu.Unlock()
		return
	}
	if sb := p.pods[pod.UID]; sb != nil {
		p.mu.Unlock()
		sb.update(pod)
		return
	}
	var prev []*podSandbox
	for _, sb := range p.pods {
		if sb.key == pod.Namespace+"/"+pod.Name {
			prev = append(prev, sb)
		}
	}
	p.counter++
	sb := newPodSandbox(p, pod.DeepCopy(), prev, p.counter)
	p.pods[pod.UID] = sb
	p.mu.Unlock()
	go sb.run()
}

// DeletePod stops the pod's containers (preStop hooks, SIGTERM, SIGKILL after the grace
// period) in the background; once they are stopped the final status is reported and
// virtual-kubelet removes the pod from the API.
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	sb := p.pods[pod.UID]
	if sb == nil {
		for _, s := range p.pods {
			if s.key == pod.Namespace+"/"+pod.Name && !s.isTerminating() {
				sb = s
			}
		}
	}
	p.mu.Unlock()
	if sb == nil {
		return errdefs.NotFoundf("pod %s/%s is not known to node %s", pod.Namespace, pod.Name, p.nodeName)
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		grace = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	sb.terminate(time.Duration(grace) * time.Second)
	return nil
}

// current returns the live (not terminating) sandbox of namespace/name.
func (p *Provider) current(namespace, name string) *podSandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	var found *podSandbox
	for _, sb := range p.pods {
		if sb.key == namespace+"/"+name && !sb.isTerminating() && (found == nil || sb.seq > found.seq) {
			found = sb
		}
	}
	return found
}

// any returns the newest sandbox of namespace/name, terminating or not (for logs).
func (p *Provider) any(namespace, name string) *podSandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	var found *podSandbox
	for _, sb := range p.pods {
		if sb.key == namespace+"/"+name && (found == nil || sb.seq > found.seq) {
			found = sb
		}
	}
	return found
}

func (p *Provider) all() []*podSandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*podSandbox, 0, len(p.pods))
	for _, sb := range p.pods {
		out = append(out, sb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (p *Provider) forget(sb *podSandbox) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods[sb.uid] == sb {
		delete(p.pods, sb.uid)
	}
}

// GetPod returns the live pod called namespace/name. A pod that is terminating is not
// returned: virtual-kubelet must see a recreated pod of the same name as new.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	sb := p.current(namespace, name)
	if sb == nil {
		return nil, errdefs.NotFoundf("pod %s/%s not found", namespace, name)
	}
	return sb.podWithStatus(), nil
}

// GetPodStatus returns the status of the live pod namespace/name.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists the live pods.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, sb := range p.all() {
		if !sb.isTerminating() {
			out = append(out, sb.podWithStatus())
		}
	}
	return out, nil
}

// NotifyPods registers virtual-kubelet's status callback.
func (p *Provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = f
}

func (p *Provider) notifier() func(*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.halted {
		return nil
	}
	return p.notify
}

// halt stops status reporting: the node is going down like a crashed kubelet.
func (p *Provider) halt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.halted = true
}

// killAll kills every pod process of the node at once and removes the pod sandboxes.
func (p *Provider) killAll() {
	var wg sync.WaitGroup
	for _, sb := range p.all() {
		wg.Add(1)
		go func() { defer wg.Done(); sb.kill() }()
	}
	wg.Wait()
}

// GetContainerLogs serves `kubectl logs`.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	sb := p.current(namespace, podName)
	if sb == nil {
		sb = p.any(namespace, podName)
	}
	if sb == nil {
		return nil, errdefs.NotFoundf("pod %s/%s not found on node %s", namespace, podName, p.nodeName)
	}
	c, err := sb.container(containerName)
	if err != nil {
		return nil, errdefs.AsNotFound(err)
	}
	return c.logs(ctx, opts)
}

// RunInContainer serves `kubectl exec`.
func (p *Provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	sb := p.current(namespace, podName)
	if sb == nil {
		return errdefs.NotFoundf("pod %s/%s not found on node %s", namespace, podName, p.nodeName)
	}
	c, err := sb.container(containerName)
	if err != nil {
		return errdefs.AsNotFound(err)
	}
	return c.exec(ctx, cmd, attach)
}

// AttachToContainer is not supported: containers' stdin is not kept open.
func (p *Provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by the sandbox; use kubectl logs -f or kubectl exec")
}

// PortForward serves `kubectl port-forward` by connecting to the pod's IP from the host.
func (p *Provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	defer func() { _ = stream.Close() }()
	sb := p.current(namespace, podName)
	if sb == nil {
		return errdefs.NotFoundf("pod %s/%s not found on node %s", namespace, podName, p.nodeName)
	}
	n, ok := sb.network()
	if !ok {
		return fmt.Errorf("pod %s/%s has no network yet", namespace, podName)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(n.IP.String(), strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// GetStatsSummary reports the node without usage figures (none are measured).
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	now := metav1.Now()
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.nodeName, StartTime: now}}
	for _, sb := range p.all() {
		pod := sb.currentPod()
		s.Pods = append(s.Pods, statsv1alpha1.PodStats{
			PodRef:    statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			StartTime: now,
		})
	}
	return s, nil
}

// GetMetricsResource reports no metrics.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}
