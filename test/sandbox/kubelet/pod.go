package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/network"
)

// podSandbox is one pod on a node: its network namespace, volumes and containers, driven
// through the kubelet's phases by run() and stopped by terminate() or kill().
type podSandbox struct {
	p    *Provider
	uid  types.UID
	key  string
	seq  int
	dir  string
	log  *slog.Logger
	prev []*podSandbox
	vols *volumeSet

	ctx    context.Context // cancelled when the pod stops for good
	cancel context.CancelFunc
	done   chan struct{} // closed after teardown
	dirty  chan struct{}

	notifyMu sync.Mutex

	mu          sync.Mutex
	pod         *corev1.Pod
	net         network.Pod
	hasNet      bool
	hostNet     bool
	startTime   *metav1.Time
	initialized bool
	initFailed  bool
	terminating bool
	deleted     bool // terminating because the pod was deleted in the API
	killed      bool
	initCs      []*container
	cs          []*container
	conds       map[corev1.PodConditionType]condState
}

type condState struct {
	status corev1.ConditionStatus
	since  metav1.Time
}

func newPodSandbox(p *Provider, pod *corev1.Pod, prev []*podSandbox, seq int) *podSandbox {
	ctx, cancel := context.WithCancel(p.c.ctx)
	sb := &podSandbox{
		p:      p,
		uid:    pod.UID,
		key:    pod.Namespace + "/" + pod.Name,
		seq:    seq,
		dir:    filepath.Join(p.c.cfg.Inst.PodsDir(), instance.SanitizeName(fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))),
		log:    p.c.cfg.Log.With("pod", pod.Namespace+"/"+pod.Name, "node", p.nodeName),
		prev:   prev,
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
		dirty:  make(chan struct{}, 1),
		pod:    pod,
		conds:  map[corev1.PodConditionType]condState{},
	}
	sb.vols = newVolumeSet(sb)
	prior := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		prior[s.Name] = s
	}
	for _, c := range pod.Spec.InitContainers {
		kind := initContainer
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = sidecarContainer
		}
		sb.initCs = append(sb.initCs, newContainer(sb, c, kind, prior))
	}
	for _, c := range pod.Spec.Containers {
		sb.cs = append(sb.cs, newContainer(sb, c, appContainer, prior))
	}
	return sb
}

func (sb *podSandbox) currentPod() *corev1.Pod {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.pod
}

func (sb *podSandbox) isTerminating() bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.terminating
}

func (sb *podSandbox) network() (network.Pod, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.net, sb.hasNet && !sb.hostNet
}

func (sb *podSandbox) podIP() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.hasNet {
		return ""
	}
	return sb.net.IP.String()
}

// container finds a container by name; "" is the first app container.
func (sb *podSandbox) container(name string) (*container, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if name == "" && len(sb.cs) > 0 {
		return sb.cs[0], nil
	}
	for _, c := range append(append([]*container(nil), sb.cs...), sb.initCs...) {
		if c.name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("container %q is not in pod %s", name, sb.key)
}

func (sb *podSandbox) event(typ, reason, format string, a ...any) {
	sb.p.recorder.Eventf(sb.currentPod(), typ, reason, format, a...)
}

// changed schedules a status report.
func (sb *podSandbox) changed() {
	select {
	case sb.dirty <- struct{}{}:
	default:
	}
}

func (sb *podSandbox) notifyLoop() {
	for {
		select {
		case <-sb.dirty:
			sb.report()
		case <-sb.done:
			return
		}
	}
}

// report hands the current status to virtual-kubelet, which writes it to the API.
func (sb *podSandbox) report() {
	sb.notifyMu.Lock()
	defer sb.notifyMu.Unlock()
	if f := sb.p.notifier(); f != nil {
		f(sb.podWithStatus())
	}
}

func (sb *podSandbox) podWithStatus() *corev1.Pod {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	pod := sb.pod.DeepCopy()
	pod.Status = sb.statusLocked()
	return pod
}

// sleep waits d unless the pod stops first; it reports whether the pod is still running.
func (sb *podSandbox) sleep(d time.Duration) bool {
	select {
	case <-sb.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// run drives the pod through the kubelet's phases: sandbox (network), volumes, init
// containers in order, then the app containers under their restart policy.
func (sb *podSandbox) run() {
	go sb.notifyLoop()
	defer sb.teardown()
	for _, pr := range sb.prev {
		select {
		case <-pr.done:
		case <-sb.ctx.Done():
			return
		}
	}
	sb.mu.Lock()
	now := metav1.Now()
	sb.startTime = &now
	sb.mu.Unlock()
	sb.changed()
	if err := os.MkdirAll(sb.dir, 0o755); err != nil {
		sb.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", "create pod directory: %v", err)
		return
	}
	if !sb.setupNetwork() || !sb.setupVolumes() {
		return
	}
	go sb.refreshLoop()
	for _, c := range sb.initCs {
		if !sb.runInit(c) {
			return
		}
	}
	sb.mu.Lock()
	sb.initialized = true
	sb.mu.Unlock()
	sb.changed()
	var wg sync.WaitGroup
	for _, c := range sb.cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.supervise() }()
	}
	wg.Wait()
	if sb.ctx.Err() == nil && !sb.isTerminating() {
		// Every app container is done for good (restartPolicy Never/OnFailure): stop the
		// sidecars; the pod is Succeeded or Failed and stays until deleted.
		sb.stopContainers(sb.sidecars(), time.Now().Add(sb.gracePeriod()), "pod completed")
		sb.changed()
	}
	<-sb.ctx.Done()
}

func (sb *podSandbox) setupNetwork() bool {
	pod := sb.currentPod()
	if pod.Spec.HostNetwork {
		sb.mu.Lock()
		sb.net, sb.hasNet, sb.hostNet = network.Pod{IP: netip.MustParseAddr("127.0.0.1")}, true, true
		sb.mu.Unlock()
		sb.changed()
		return sb.writeEtcFiles() == nil
	}
	for {
		n, err := sb.p.c.cfg.Net.Attach(pod.Namespace+"-"+pod.Name, sb.p.nodeIdx)
		if err == nil {
			sb.mu.Lock()
			sb.net, sb.hasNet = n, true
			sb.mu.Unlock()
			sb.changed()
			break
		}
		sb.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		if !sb.sleep(2 * time.Second) {
			return false
		}
	}
	if err := sb.writeEtcFiles(); err != nil {
		sb.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", "write /etc/hosts: %v", err)
		return false
	}
	return true
}

func (sb *podSandbox) setupVolumes() bool {
	var lastEvent time.Time
	for {
		err := sb.vols.setup(sb.ctx)
		if err == nil {
			return true
		}
		if time.Since(lastEvent) > 10*time.Second {
			sb.event(corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed: %v", err)
			lastEvent = time.Now()
		}
		if !sb.sleep(time.Second) {
			return false
		}
	}
}

// refreshLoop keeps configMap, secret, projected and downward-API volumes up to date, every
// VolumeRefresh from a random phase: like kubelets, pods of one Secret see its edit at
// different moments.
func (sb *podSandbox) refreshLoop() {
	period := sb.p.c.cfg.EffectiveVolumeRefresh()
	if !sb.sleep(time.Duration(rand.Int64N(int64(period)))) {
		return
	}
	sb.vols.refresh(sb.ctx)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-sb.ctx.Done():
			return
		case <-t.C:
			sb.vols.refresh(sb.ctx)
		}
	}
}

// runInit runs an init container to completion (or, for a sidecar, until it started); it
// reports false when the pod stops or fails.
func (sb *podSandbox) runInit(c *container) bool {
	if c.kind == sidecarContainer {
		go c.supervise()
		select {
		case <-c.startedCh:
			return true
		case <-sb.ctx.Done():
			return false
		}
	}
	for {
		res := c.runOnce()
		if sb.ctx.Err() != nil || sb.isTerminating() {
			return false
		}
		if res.started && res.exitCode == 0 {
			return true
		}
		if !res.started && res.retryAfter > 0 {
			if !sb.sleep(res.retryAfter) {
				return false
			}
			continue
		}
		if sb.currentPod().Spec.RestartPolicy == corev1.RestartPolicyNever {
			sb.mu.Lock()
			sb.initFailed = true
			sb.mu.Unlock()
			sb.changed()
			<-sb.ctx.Done()
			return false
		}
		if !c.backOff() {
			return false
		}
	}
}

func (sb *podSandbox) sidecars() []*container {
	var out []*container
	for i := len(sb.initCs) - 1; i >= 0; i-- {
		if sb.initCs[i].kind == sidecarContainer {
			out = append(out, sb.initCs[i])
		}
	}
	return out
}

func (sb *podSandbox) gracePeriod() time.Duration {
	pod := sb.currentPod()
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

func (sb *podSandbox) stopContainers(cs []*container, deadline time.Time, reason string) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(deadline, reason) }()
	}
	wg.Wait()
}

// terminate stops the pod as a kubelet does on deletion: app containers (and a running init
// container) get their preStop hook and SIGTERM, SIGKILL when the grace period is over; then
// sidecars in reverse order.
func (sb *podSandbox) terminate(grace time.Duration) {
	sb.mu.Lock()
	if sb.terminating {
		sb.mu.Unlock()
		return
	}
	sb.terminating = true
	sb.deleted = true
	sb.mu.Unlock()
	go func() {
		// virtual-kubelet removes the pod from the API when the grace period is over; end
		// the containers a moment earlier so their final state is recorded first.
		deadline := time.Now().Add(grace - min(grace/4, time.Second))
		var main []*container
		main = append(main, sb.cs...)
		for _, c := range sb.initCs {
			if c.kind == initContainer {
				main = append(main, c)
			}
		}
		sb.stopContainers(main, deadline, "Stopping container")
		for _, c := range sb.sidecars() {
			c.stop(deadline, "Stopping container")
		}
		sb.cancel()
	}()
}

// kill stops the pod without grace and without reporting, as when its node dies.
func (sb *podSandbox) kill() {
	sb.mu.Lock()
	sb.terminating = true
	sb.killed = true
	sb.mu.Unlock()
	for _, c := range append(append([]*container(nil), sb.cs...), sb.initCs...) {
		_ = c.signal(syscall.SIGKILL)
	}
	sb.cancel()
	<-sb.done
}

// teardown runs when run returns: it kills whatever is left in the pod's network namespace,
// removes the namespace and the pod directory, and reports the final status.
func (sb *podSandbox) teardown() {
	sb.cancel()
	for _, c := range append(append([]*container(nil), sb.cs...), sb.initCs...) {
		c.waitStopped(10 * time.Second)
	}
	sb.mu.Lock()
	n, hasNet, hostNet := sb.net, sb.hasNet, sb.hostNet
	killed, deleted := sb.killed, sb.deleted
	sb.mu.Unlock()
	// Report the final state first: a replacement pod of the same name only starts once
	// this one is fully torn down (it waits for done), but observers see the end at once.
	if !killed {
		sb.report()
	}
	if deleted && !killed {
		sb.finishDeletion()
	}
	if hasNet && !hostNet {
		for _, pid := range network.PidsIn(n.NetNS) {
			var p int
			if _, err := fmt.Sscan(pid, &p); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		sb.p.c.cfg.Net.Detach(n)
	}
	if err := os.RemoveAll(sb.dir); err != nil {
		sb.log.Warn("remove pod directory", "err", err)
	}
	close(sb.done)
	sb.p.forget(sb)
}

// finishDeletion does what the kubelet does once a deleted pod's containers are gone: it
// records their final state in the pod's status, then removes the pod from the API at once
// instead of when the grace period ends.
func (sb *podSandbox) finishDeletion() {
	client := sb.p.c.cfg.Client.CoreV1()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := sb.currentPod()
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != pod.UID {
			return
		}
		cur.Status = sb.podWithStatus().Status
		_, err = client.Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
	zero := int64(0)
	err := client.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		sb.log.Warn("delete terminated pod", "err", err)
	}
}

// update applies a changed pod spec: a container whose image changed is restarted.
func (sb *podSandbox) update(pod *corev1.Pod) {
	var restart []*container
	sb.mu.Lock()
	sb.pod = pod.DeepCopy()
	for _, spec := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, c := range append(append([]*container(nil), sb.initCs...), sb.cs...) {
			if c.name == spec.Name {
				if c.spec.Image != spec.Image && c.kind != initContainer {
					restart = append(restart, c)
				}
				c.spec = spec
			}
		}
	}
	sb.mu.Unlock()
	sb.changed()
	for _, c := range restart {
		sb.event(corev1.EventTypeNormal, "Killing", "Container %s definition changed, will be restarted", c.name)
		go c.stop(time.Now().Add(sb.gracePeriod()), "image changed")
	}
}

func (sb *podSandbox) hostname() (string, string) {
	pod := sb.currentPod()
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	fqdn := h
	if pod.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.cluster.local", h, pod.Spec.Subdomain, pod.Namespace)
	}
	return h, fqdn
}

// writeEtcFiles writes the kubelet-managed /etc/hosts and the container runtime's
// /etc/hostname of the pod.
func (sb *podSandbox) writeEtcFiles() error {
	pod := sb.currentPod()
	h, fqdn := sb.hostname()
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if ip := sb.podIP(); ip != "" && !pod.Spec.HostNetwork {
		if fqdn != h {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", ip, fqdn, h)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, h)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	if err := os.WriteFile(filepath.Join(sb.dir, "etc-hosts"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if conf, ok := resolvConf(pod, sb.p.c.cfg.DNS); ok {
		if err := os.WriteFile(filepath.Join(sb.dir, "etc-resolv.conf"), []byte(conf), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(sb.dir, "etc-hostname"), []byte(h+"\n"), 0o644)
}

// resolvConf returns the pod's /etc/resolv.conf following its dnsPolicy and dnsConfig, as
// the kubelet does; false means the pod keeps the host's file (dnsPolicy Default, host
// network, or no cluster DNS).
func resolvConf(pod *corev1.Pod, clusterDNS netip.Addr) (string, bool) {
	var servers, searches []string
	options := map[string]string{}
	var optionOrder []string
	setOption := func(name, value string) {
		if _, ok := options[name]; !ok {
			optionOrder = append(optionOrder, name)
		}
		options[name] = value
	}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	cluster := policy == corev1.DNSClusterFirstWithHostNet || (policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork)
	switch {
	case cluster && clusterDNS.IsValid():
		servers = []string{clusterDNS.String()}
		searches = []string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
		setOption("ndots", "5")
	case policy == corev1.DNSNone:
	default:
		return "", false
	}
	if c := pod.Spec.DNSConfig; c != nil {
		servers = append(servers, c.Nameservers...)
		searches = append(searches, c.Searches...)
		for _, o := range c.Options {
			v := ""
			if o.Value != nil {
				v = *o.Value
			}
			setOption(o.Name, v)
		}
	}
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(optionOrder) > 0 {
		var opts []string
		for _, name := range optionOrder {
			if v := options[name]; v != "" {
				opts = append(opts, name+":"+v)
			} else {
				opts = append(opts, name)
			}
		}
		fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
	}
	return b.String(), true
}

const clusterDomain = "cluster.local"

// envContext is the environment-resolution context of the pod as it is now.
func (sb *podSandbox) envContext(pod *corev1.Pod) *envContext {
	c := sb.p.c
	return &envContext{
		pod:        pod,
		podIP:      sb.podIP(),
		hostIP:     sb.p.hostIP(),
		configMap:  c.configMap,
		secret:     c.secret,
		serviceEnv: c.serviceEnv(pod),
		allocCPU:   c.cfg.NodeCPU,
		allocMem:   c.cfg.NodeMemory,
	}
}
