// Package daemon is the long-running sandbox process: it owns the slot, the cgroup, the
// bridge, the control plane, the virtual nodes and the volume provisioner, serves status and
// fault injection on a unix socket, and takes everything down again on SIGTERM.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rediskube/redis-operator/test/sandbox/controlplane"
	"github.com/rediskube/redis-operator/test/sandbox/dns"
	"github.com/rediskube/redis-operator/test/sandbox/fault"
	"github.com/rediskube/redis-operator/test/sandbox/images"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/kubelet"
	"github.com/rediskube/redis-operator/test/sandbox/network"
	"github.com/rediskube/redis-operator/test/sandbox/proc"
	"github.com/rediskube/redis-operator/test/sandbox/proxy"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
	"github.com/rediskube/redis-operator/test/sandbox/storage"
)

// Options configure a sandbox daemon.
type Options struct {
	Dir string
	// Slot is the slot to use; AutoSlot picks the first free one from 1 (slot 0 is left to
	// `make sandbox`).
	Slot  int
	Nodes int
	// Bin holds the control-plane binaries and the operator binary.
	Bin string
	// ExitWithPid makes the sandbox stop itself when that process is gone (a test binary
	// that crashed before it could tear the sandbox down).
	ExitWithPid int
	// VolumeRefresh is the kubelets' period of re-rendering Secret and ConfigMap volumes
	// (zero: a kubelet's default, a minute).
	VolumeRefresh time.Duration
	// Registry runs an OCI registry (instance.RegistryAddr) whose images the nodes pull and
	// run from their layers.
	Registry bool
	Log      *slog.Logger
}

// AutoSlot asks for any free slot.
const AutoSlot = -1

type daemon struct {
	opts    Options
	inst    instance.Instance
	log     *slog.Logger
	client  kubernetes.Interface
	cp      *controlplane.ControlPlane
	proxies []*proxy.Proxy
	net     *network.Manager
	cluster *kubelet.Cluster
	reg     *registry.Registry
	started time.Time

	mu       sync.Mutex
	ready    bool
	failure  string
	startSec float64
	stop     context.CancelFunc
}

// Run runs the sandbox until SIGTERM/SIGINT, a shutdown request, the death of ExitWithPid
// or of a control-plane process.
func Run(opts Options) error {
	d := &daemon{opts: opts, log: opts.Log, started: time.Now()}
	lock, err := d.claimSlot()
	if err != nil {
		return err
	}
	defer lock.Release()
	if opts.Registry {
		d.inst.Registry = d.inst.RegistryAddr()
	}
	inst := d.inst
	d.log = d.log.With("slot", inst.Slot)
	if err := inst.Save(); err != nil {
		return err
	}
	group := proc.Find(inst.CgroupName())
	if err := group.KillAll(10*time.Second, false); err != nil {
		return fmt.Errorf("clean up processes of an earlier sandbox in slot %d: %w", inst.Slot, err)
	}
	if err := group.Join(); err != nil {
		d.log.Warn("cannot track processes in a cgroup; `down` falls back to network namespaces and pid files", "err", err)
	}
	if err := os.WriteFile(inst.PidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case s := <-sigs:
			d.log.Info("stopping on signal", "signal", s.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	if opts.ExitWithPid > 0 {
		go d.watchPid(ctx, opts.ExitWithPid)
	}

	srv, err := d.serve()
	if err != nil {
		return err
	}
	defer func() {
		_ = srv.Close()
		_ = os.Remove(inst.ControlSocket())
	}()

	startErr := d.start(ctx)
	if startErr != nil {
		d.mu.Lock()
		d.failure = startErr.Error()
		d.mu.Unlock()
		d.log.Error("start failed", "err", startErr)
	} else {
		d.mu.Lock()
		d.ready = true
		d.startSec = time.Since(d.started).Seconds()
		d.mu.Unlock()
		d.log.Info("sandbox ready", "seconds", fmt.Sprintf("%.1f", d.startSec))
		exited := d.cp.Exited()
		select {
		case <-ctx.Done():
		case p := <-exited:
			startErr = fmt.Errorf("%s exited unexpectedly (%w); see %s", p.Name, p.Err(), filepath.Join(inst.LogDir(), p.Name+".log"))
			d.log.Error("control plane failed, stopping the sandbox", "err", startErr)
		}
	}
	d.shutdown()
	_ = os.Remove(inst.PidFile())
	// Leave the cgroup so it can be removed with whatever is still in it.
	group.Leave()
	if err := group.KillAll(10*time.Second, true); err != nil {
		d.log.Warn("kill leftover processes", "err", err)
	}
	return startErr
}

func (d *daemon) claimSlot() (*instance.Lock, error) {
	slots := []int{d.opts.Slot}
	if d.opts.Slot == AutoSlot {
		slots = nil
		for s := 1; s < instance.MaxSlots; s++ {
			slots = append(slots, s)
		}
	}
	var lastErr error
	for _, s := range slots {
		inst, err := instance.New(s, d.opts.Dir, d.opts.Nodes)
		if err != nil {
			return nil, err
		}
		lock, err := inst.AcquireLock()
		if err == nil {
			d.inst = inst
			return lock, nil
		}
		lastErr = err
		if !errors.Is(err, instance.ErrSlotBusy) {
			return nil, err
		}
	}
	return nil, lastErr
}

func (d *daemon) start(ctx context.Context) error {
	inst, opts := d.inst, d.opts
	if err := controlplane.CheckBinaries(opts.Bin); err != nil {
		return err
	}
	for _, p := range inst.Ports() {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("port %d of slot %d is taken (another program or sandbox?): %w", p, inst.Slot, err)
		}
		_ = l.Close()
	}
	// Leftovers of a crashed sandbox of this slot would collide with ours.
	if err := network.Teardown(inst); err != nil {
		d.log.Warn("clean up network of an earlier sandbox", "err", err)
	}
	d.net = network.New(inst)
	if err := d.net.Setup(); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	// After the bridge exists, so that a sandbox stopping meanwhile sees ours and leaves the
	// limits raised.
	if err := network.RaiseNeighLimits(); err != nil {
		d.log.Warn("neighbour table limits stay as they are: past about 160 pods connections may time out", "err", err)
	}
	if err := controlplane.Prepare(inst); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	cp, err := controlplane.Start(ctx, inst, opts.Bin)
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	d.cp = cp
	cfg, err := controlplane.RESTConfig(inst)
	if err != nil {
		return err
	}
	d.client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := storage.Run(ctx, d.client, inst.VolumesDir(), d.log); err != nil {
		return fmt.Errorf("volume provisioner: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The DNS server listens on the gateway; pods ask the kube-dns Service, which kube-proxy
	// maps to it.
	clusterDNS := inst.KubeDNSServiceIP()
	if err := dns.Serve(ctx, d.client, net.JoinHostPort(inst.Gateway().String(), "53"), d.log); err != nil {
		d.log.Warn("no cluster DNS: pods keep the host's resolv.conf", "err", err)
		clusterDNS = netip.Addr{}
	} else if err := dns.PublishService(ctx, d.client, clusterDNS, inst.Gateway()); err != nil {
		return err
	}
	if err := d.startRegistry(ctx); err != nil {
		return err
	}
	d.cluster, err = kubelet.Start(ctx, kubelet.Config{
		DNS:    clusterDNS,
		Inst:   inst,
		Images: images.Table{BinDir: opts.Bin, Registry: inst.Registry, Pulled: inst.PulledDir()},
		Self:   self,
		Net:    d.net,
		Client: d.client,
		Log:    d.log,

		VolumeRefresh: opts.VolumeRefresh,
	})
	if err != nil {
		return fmt.Errorf("virtual nodes: %w", err)
	}
	if err := controlplane.PublishAPIServerEndpoints(ctx, d.client, inst); err != nil {
		return err
	}
	// After the nodes: kube-proxy reads its node's addresses at start.
	d.proxies, err = proxy.Start(ctx, inst, opts.Bin, d.log)
	if err != nil {
		return fmt.Errorf("service routing: %w", err)
	}
	return d.waitDefaultServiceAccount(ctx)
}

// startRegistry starts the sandbox's registry when it has one, its images kept in the state
// directory and its log beside the control plane's.
func (d *daemon) startRegistry(ctx context.Context) error {
	if d.inst.Registry == "" {
		return nil
	}
	logFile, err := os.OpenFile(filepath.Join(d.inst.LogDir(), "registry.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("registry log: %w", err)
	}
	// The file stays open for the registry's life: the daemon's exit closes it.
	d.reg, err = registry.Start(ctx, registry.Options{Addr: d.inst.Registry, Dir: d.inst.RegistryDir(), Log: logFile})
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("registry: %w", err)
	}
	d.log.Info("registry ready", "addr", d.reg.Addr)
	return nil
}

// waitDefaultServiceAccount waits until pods can be created in "default": the service
// account admission plugin rejects pods before the "default" ServiceAccount exists.
func (d *daemon) waitDefaultServiceAccount(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := d.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("default service account not created: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *daemon) shutdown() {
	d.mu.Lock()
	d.ready = false
	d.mu.Unlock()
	if d.cluster != nil {
		d.cluster.Stop()
	}
	for _, p := range d.proxies {
		p.Stop()
	}
	if d.cp != nil {
		d.cp.Stop()
	}
	if d.reg != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.reg.Stop(stopCtx); err != nil {
			d.log.Warn("stop the registry", "err", err)
		}
		cancel()
	}
	if err := network.Teardown(d.inst); err != nil {
		d.log.Warn("network teardown", "err", err)
	}
	if err := network.RestoreNeighLimits(d.inst.Slot); err != nil {
		d.log.Warn("put back the neighbour table limits", "err", err)
	}
	d.log.Info("sandbox stopped")
}

func (d *daemon) watchPid(ctx context.Context, pid int) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				d.log.Warn("the process the sandbox serves is gone; stopping", "pid", pid)
				d.stop()
				return
			}
		}
	}
}

func (d *daemon) status() fault.Status {
	d.mu.Lock()
	ready, failure, startSec := d.ready, d.failure, d.startSec
	d.mu.Unlock()
	inst := d.inst
	s := fault.Status{
		Ready:        ready,
		Error:        failure,
		Slot:         inst.Slot,
		Dir:          inst.Dir,
		Kubeconfig:   inst.Kubeconfig(),
		APIServer:    fmt.Sprintf("https://127.0.0.1:%d", inst.APIServerPort()),
		PodCIDR:      inst.PodCIDR().String(),
		ServiceCIDR:  inst.ServiceCIDR().String(),
		Gateway:      inst.Gateway().String(),
		Bridge:       inst.Bridge(),
		Pid:          os.Getpid(),
		StartSeconds: startSec,
		Registry:     inst.Registry,

		VolumeRefreshSeconds: kubelet.Config{VolumeRefresh: d.opts.VolumeRefresh}.EffectiveVolumeRefresh().Seconds(),
	}
	if ready {
		s.Processes = d.cp.Pids()
		for _, p := range d.proxies {
			s.Processes[p.Name()] = p.Pid()
		}
		for i, name := range d.cluster.NodeNames() {
			s.Nodes = append(s.Nodes, fault.Node{Name: name, Zone: inst.NodeZone(i), Running: d.cluster.NodeRunning(name)})
		}
		for _, p := range d.cluster.Pods() {
			s.Pods = append(s.Pods, fault.Pod(p))
		}
	}
	return s
}

// serve answers the control socket.
func (d *daemon) serve() (*http.Server, error) {
	path := d.inst.ControlSocket()
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { reply(w, d.status(), nil) })
	mux.HandleFunc("POST /shutdown", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, "stopping", nil)
		go d.stop()
	})
	pod := func(f func(fault.PodRef) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var ref fault.PodRef
			if err := json.NewDecoder(r.Body).Decode(&ref); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if !d.isReady() {
				http.Error(w, "sandbox is not ready", http.StatusServiceUnavailable)
				return
			}
			reply(w, "ok", f(ref))
		}
	}
	node := func(f func(string) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var n fault.Node
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if !d.isReady() {
				http.Error(w, "sandbox is not ready", http.StatusServiceUnavailable)
				return
			}
			reply(w, "ok", f(n.Name))
		}
	}
	mux.HandleFunc("POST /crash-container", pod(func(r fault.PodRef) error {
		d.log.Info("fault: crash container", "pod", r.Namespace+"/"+r.Name, "container", r.Container)
		return d.cluster.CrashContainer(r.Namespace, r.Name, r.Container)
	}))
	mux.HandleFunc("POST /cut", pod(func(r fault.PodRef) error {
		d.log.Info("fault: cut", "pod", r.Namespace+"/"+r.Name)
		return d.cluster.Cut(r.Namespace, r.Name)
	}))
	mux.HandleFunc("POST /heal", pod(func(r fault.PodRef) error {
		d.log.Info("fault: heal", "pod", r.Namespace+"/"+r.Name)
		return d.cluster.Heal(r.Namespace, r.Name)
	}))
	mux.HandleFunc("POST /stop-node", node(func(n string) error {
		d.log.Info("fault: stop node", "node", n)
		return d.cluster.StopNode(n)
	}))
	mux.HandleFunc("POST /start-node", node(func(n string) error {
		d.log.Info("fault: start node", "node", n)
		return d.cluster.StartNode(n)
	}))
	mux.HandleFunc("POST /restart-workload", func(w http.ResponseWriter, r *http.Request) {
		var ref fault.WorkloadRef
		if err := json.NewDecoder(r.Body).Decode(&ref); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !d.isReady() {
			http.Error(w, "sandbox is not ready", http.StatusServiceUnavailable)
			return
		}
		d.log.Info("fault: restart workload", "workload", ref.Kind+"/"+ref.Namespace+"/"+ref.Name)
		pods, err := restartWorkload(r.Context(), d.client, ref)
		reply(w, pods, err)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

func (d *daemon) isReady() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ready
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
