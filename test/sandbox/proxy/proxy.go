// Package proxy runs a kube-proxy per node, built with the control plane from
// k8s.io/kubernetes, in nftables mode inside the node's network namespace. There its rules
// translate the ClusterIPs (which the node's pods route to it) and the NodePorts on the node's
// address to ready endpoints, with the node's view of traffic policies and topology, as on a
// real node. It masquerades all Service traffic: clients and endpoints share the bridge, so
// without it an endpoint would answer a client directly and the client would drop the
// reply. Its tables live and die with the namespace, so two sandboxes never touch each
// other's rules and `sandbox down` needs no firewall cleanup.
package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rediskube/redis-operator/test/sandbox/controlplane"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/pki"
	"github.com/rediskube/redis-operator/test/sandbox/proc"
)

// HealthzPort is where kube-proxy reports its health, on its node's address.
const HealthzPort = 10256

// Proxy is the supervised kube-proxy of one node.
type Proxy struct {
	inst   instance.Instance
	node   int
	name   string
	args   []string
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	cur      *proc.Process
	restarts int
}

// Config returns the configuration file of node's kube-proxy.
func Config(inst instance.Instance, node int, kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
  qps: 50
  burst: 100
hostnameOverride: %s
mode: nftables
clusterCIDR: %s
detectLocalMode: ClusterCIDR
nftables:
  masqueradeAll: true
  minSyncPeriod: 250ms
  syncPeriod: 30s
nodePortAddresses:
- %s/32
# Global conntrack settings belong to the machine: leave them as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
healthzBindAddress: %s
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
`, kubeconfig, inst.NodeName(node), inst.PodCIDR(), inst.NodeIP(node), healthzAddr(inst, node))
}

func healthzAddr(inst instance.Instance, node int) string {
	return net.JoinHostPort(inst.NodeIP(node).String(), strconv.Itoa(HealthzPort))
}

// Start writes kube-proxy's kubeconfig and configurations, starts the kube-proxy of every
// node in its namespace and waits until all have programmed their rules. Each is restarted
// should it exit.
func Start(ctx context.Context, inst instance.Instance, bin string, log *slog.Logger) ([]*Proxy, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("kube-proxy needs the nft tool (Debian package nftables; run hack/install-packages.sh): %w", err)
	}
	kubeconfig := inst.Path("kube-proxy.kubeconfig")
	server := "https://" + net.JoinHostPort(inst.Gateway().String(), strconv.Itoa(inst.APIServerPort()))
	if err := controlplane.WriteKubeconfigFor(inst, pki.KubeProxy, kubeconfig, server); err != nil {
		return nil, fmt.Errorf("kube-proxy kubeconfig: %w", err)
	}
	var proxies []*Proxy
	stopAll := func() {
		for _, p := range proxies {
			p.Stop()
		}
	}
	for n := 0; n < inst.Nodes; n++ {
		p, err := startNode(ctx, inst, n, bin, kubeconfig, log)
		if err != nil {
			stopAll()
			return nil, err
		}
		proxies = append(proxies, p)
	}
	for _, p := range proxies {
		if err := p.waitHealthy(ctx, 60*time.Second); err != nil {
			stopAll()
			return nil, err
		}
	}
	return proxies, nil
}

func startNode(ctx context.Context, inst instance.Instance, node int, bin, kubeconfig string, log *slog.Logger) (*Proxy, error) {
	name := "kube-proxy-" + inst.NodeName(node)
	config := inst.Path(name + ".yaml")
	if err := os.WriteFile(config, []byte(Config(inst, node, kubeconfig)), 0o644); err != nil {
		return nil, fmt.Errorf("kube-proxy configuration: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Proxy{
		inst:   inst,
		node:   node,
		name:   name,
		args:   []string{"netns", "exec", inst.NodeNetNS(node), filepath.Join(bin, "kube-proxy"), "--config=" + config},
		log:    log.With("component", name),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	first, err := p.start()
	if err != nil {
		cancel()
		return nil, err
	}
	go p.supervise(ctx, first)
	return p, nil
}

// Name is the process name, kube-proxy-<node>; its log is <name>.log in the log directory.
func (p *Proxy) Name() string { return p.name }

func (p *Proxy) logPath() string { return filepath.Join(p.inst.LogDir(), p.name+".log") }

func (p *Proxy) start() (*proc.Process, error) {
	pr, err := proc.Start(p.name, p.inst.LogDir(), "ip", p.args...)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.cur = pr
	p.mu.Unlock()
	return pr, nil
}

// supervise restarts kube-proxy after it exits, as a kubelet restarts a static pod.
func (p *Proxy) supervise(ctx context.Context, cur *proc.Process) {
	defer close(p.done)
	for {
		select {
		case <-ctx.Done():
			cur.Stop(5 * time.Second)
			return
		case <-cur.Done():
		}
		p.log.Error("kube-proxy exited; restarting it", "err", cur.Err(), "log", p.logPath())
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		next, err := p.start()
		if err != nil {
			p.log.Error("restart kube-proxy", "err", err)
			continue
		}
		cur = next
	}
}

// waitHealthy polls kube-proxy's /healthz, which answers 200 once the rules are in place.
func (p *Proxy) waitHealthy(ctx context.Context, timeout time.Duration) error {
	url := "http://" + healthzAddr(p.inst, p.node) + "/healthz"
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		p.mu.Lock()
		exited := p.restarts > 0
		p.mu.Unlock()
		if exited {
			return fmt.Errorf("%s exited while starting; see %s", p.name, p.logPath())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not healthy after %s: %s; see %s", p.name, timeout, last, p.logPath())
}

// Pid is the current kube-proxy process id.
func (p *Proxy) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur.Pid()
}

// Stop stops kube-proxy. Its rules stay until the node namespace is deleted.
func (p *Proxy) Stop() {
	p.cancel()
	<-p.done
}
