// Package proxy runs kube-proxy, built with the control plane from k8s.io/kubernetes, in
// nftables mode inside the slot's node network namespace. There its rules translate the
// ClusterIPs (which the host and every pod route to the node namespace) and the NodePorts
// on the node addresses to ready endpoints, as on a real node. It masquerades all Service
// traffic: clients and endpoints share the bridge, so without it an endpoint would answer a
// client directly and the client would drop the reply. Its tables live and die with the
// namespace, so two sandboxes never touch each other's rules and `sandbox down` needs no
// firewall cleanup.
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

	"github.com/rediskube/redis-operator/internal/sandbox/controlplane"
	"github.com/rediskube/redis-operator/internal/sandbox/instance"
	"github.com/rediskube/redis-operator/internal/sandbox/pki"
	"github.com/rediskube/redis-operator/internal/sandbox/proc"
)

// HealthzPort is where kube-proxy reports its health, on the first node address.
const HealthzPort = 10256

// Proxy is a supervised kube-proxy.
type Proxy struct {
	inst   instance.Instance
	args   []string
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	cur *proc.Process
}

// Config returns kube-proxy's configuration file for inst.
func Config(inst instance.Instance, kubeconfig string) string {
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
- %s
# Global conntrack settings belong to the machine: leave them as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
healthzBindAddress: %s
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
`, kubeconfig, inst.NodeName(0), inst.PodCIDR(), inst.PodCIDR(),
		net.JoinHostPort(inst.NodeIP(0).String(), strconv.Itoa(HealthzPort)))
}

// Start writes kube-proxy's kubeconfig and configuration, starts it in the node namespace
// and waits until it has programmed its rules. It restarts kube-proxy should it exit.
func Start(ctx context.Context, inst instance.Instance, bin string, log *slog.Logger) (*Proxy, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("kube-proxy needs the nft tool (Debian package nftables; run hack/install-packages.sh): %w", err)
	}
	kubeconfig := inst.Path("kube-proxy.kubeconfig")
	server := "https://" + net.JoinHostPort(inst.Gateway().String(), strconv.Itoa(inst.APIServerPort()))
	if err := controlplane.WriteKubeconfigFor(inst, pki.KubeProxy, kubeconfig, server); err != nil {
		return nil, fmt.Errorf("kube-proxy kubeconfig: %w", err)
	}
	config := inst.Path("kube-proxy.yaml")
	if err := os.WriteFile(config, []byte(Config(inst, kubeconfig)), 0o644); err != nil {
		return nil, fmt.Errorf("kube-proxy configuration: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Proxy{
		inst:   inst,
		args:   []string{"netns", "exec", inst.NodeNetNS(), filepath.Join(bin, "kube-proxy"), "--config=" + config},
		log:    log.With("component", "kube-proxy"),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	first, err := p.start()
	if err != nil {
		cancel()
		return nil, err
	}
	go p.supervise(ctx, first)
	if err := p.waitHealthy(ctx, first, 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Proxy) start() (*proc.Process, error) {
	pr, err := proc.Start("kube-proxy", p.inst.LogDir(), "ip", p.args...)
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
		p.log.Error("kube-proxy exited; restarting it", "err", cur.Err(), "log", filepath.Join(p.inst.LogDir(), "kube-proxy.log"))
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
func (p *Proxy) waitHealthy(ctx context.Context, pr *proc.Process, timeout time.Duration) error {
	url := fmt.Sprintf("http://%s/healthz", net.JoinHostPort(p.inst.NodeIP(0).String(), strconv.Itoa(HealthzPort)))
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-pr.Done():
			return fmt.Errorf("kube-proxy exited (%w); see %s", pr.Err(), filepath.Join(p.inst.LogDir(), "kube-proxy.log"))
		default:
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
	return fmt.Errorf("kube-proxy not healthy after %s: %s; see %s", timeout, last, filepath.Join(p.inst.LogDir(), "kube-proxy.log"))
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
