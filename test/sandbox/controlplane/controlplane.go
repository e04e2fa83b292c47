// Package controlplane runs the real Kubernetes control plane of a sandbox as child
// processes: etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built from
// their Go modules into bin/ by hack/build-control-plane.sh.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/pki"
	"github.com/rediskube/redis-operator/test/sandbox/proc"
)

// Binaries are the control-plane executables a sandbox needs in its bin directory.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubectl"}

// ControlPlane is a running control plane.
type ControlPlane struct {
	inst  instance.Instance
	bin   string
	pki   pki.Files
	procs []*proc.Process
	proxy net.Listener
	wg    sync.WaitGroup
}

// PKI returns where the sandbox keeps its certificates.
func PKI(inst instance.Instance) pki.Files { return pki.Files{Dir: inst.Path("pki")} }

// CheckBinaries fails with a hint when a control-plane binary is missing.
func CheckBinaries(bin string) error {
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s in %s: run `make control-plane` (hack/build-control-plane.sh) first", strings.Join(missing, ", "), bin)
	}
	return nil
}

// Prepare creates the certificates and the admin kubeconfig.
func Prepare(inst instance.Instance) error {
	files := PKI(inst)
	kubeletIPs := []net.IP{net.IPv4(127, 0, 0, 1)}
	for n := 0; n < inst.Nodes; n++ {
		kubeletIPs = append(kubeletIPs, inst.NodeIP(n).AsSlice())
	}
	err := pki.Generate(files, pki.Options{
		APIServerIPs: []net.IP{net.IPv4(127, 0, 0, 1), inst.Gateway().AsSlice(), inst.KubernetesServiceIP().AsSlice()},
		APIServerNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		KubeletIPs:   kubeletIPs,
		KubeletNames: []string{"localhost"},
	})
	if err != nil {
		return err
	}
	return WriteKubeconfig(inst, inst.Kubeconfig(), fmt.Sprintf("https://127.0.0.1:%d", inst.APIServerPort()))
}

// WriteKubeconfig writes an admin kubeconfig for server, with the credentials embedded so
// the file can be copied elsewhere.
func WriteKubeconfig(inst instance.Instance, path, server string) error {
	return WriteKubeconfigFor(inst, pki.Admin, path, server)
}

// WriteKubeconfigFor writes a kubeconfig for server with the client certificate user (one
// of the pki names).
func WriteKubeconfigFor(inst instance.Instance, user, path, server string) error {
	files := PKI(inst)
	ca, err := os.ReadFile(files.CACert())
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(files.Cert(user))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(files.Key(user))
	if err != nil {
		return err
	}
	name := fmt.Sprintf("rediskube-sandbox-%d", inst.Slot)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig loads the admin kubeconfig of inst.
func RESTConfig(inst instance.Instance) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", inst.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS = 200
	cfg.Burst = 400
	return cfg, nil
}

// Start runs etcd and kube-apiserver, waits for the API server to be ready, then starts
// kube-controller-manager and kube-scheduler.
func Start(ctx context.Context, inst instance.Instance, bin string) (*ControlPlane, error) {
	cp := &ControlPlane{inst: inst, bin: bin, pki: PKI(inst)}
	if err := cp.start(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) run(name string, args ...string) (*proc.Process, error) {
	p, err := proc.Start(name, cp.inst.LogDir(), filepath.Join(cp.bin, name), args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

func (cp *ControlPlane) start(ctx context.Context) error {
	inst, f := cp.inst, cp.pki
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", inst.EtcdClientPort())
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", inst.EtcdPeerPort())
	etcd, err := cp.run("etcd",
		"--name=sandbox",
		"--data-dir="+inst.Path("etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=sandbox="+peerURL,
		"--heartbeat-interval=10",
		"--election-timeout=100",
		"--unsafe-no-fsync",
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	api, err := cp.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(inst.APIServerPort()),
		"--tls-cert-file="+f.Cert(pki.APIServer),
		"--tls-private-key-file="+f.Key(pki.APIServer),
		"--client-ca-file="+f.CACert(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+f.ServiceAccountPub(),
		"--service-account-signing-key-file="+f.ServiceAccountKey(),
		"--service-cluster-ip-range="+inst.ServiceCIDR().String(),
		"--authorization-mode=RBAC",
		"--kubelet-certificate-authority="+f.CACert(),
		"--kubelet-client-certificate="+f.Cert(pki.APIServerKubeletCli),
		"--kubelet-client-key="+f.Key(pki.APIServerKubeletCli),
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		// Reach webhook and aggregated-API services through their endpoints (pod IPs),
		// which the host reaches over the bridge, without depending on kube-proxy.
		"--enable-aggregator-routing=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--event-ttl=2h",
		"--v=0",
	)
	if err != nil {
		return err
	}
	if err := cp.listenForPods(); err != nil {
		return err
	}
	if err := cp.waitReady(ctx, 60*time.Second, etcd, api); err != nil {
		return err
	}
	kubeconfig := inst.Kubeconfig()
	if _, err := cp.run("kube-controller-manager",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(inst.ControllerManagerPort()),
		"--leader-elect=false",
		"--controllers="+strings.Join(controllers, ","),
		"--service-account-private-key-file="+f.ServiceAccountKey(),
		"--root-ca-file="+f.CACert(),
		"--cluster-signing-cert-file="+f.CACert(),
		"--cluster-signing-key-file="+f.CAKey(),
		"--node-monitor-period=2s",
		"--node-monitor-grace-period="+NodeMonitorGracePeriod.String(),
		"--node-startup-grace-period=30s",
		"--pvclaimbinder-sync-period=2s",
		"--profiling=false",
		"--v=0",
	); err != nil {
		return err
	}
	if _, err := cp.run("kube-scheduler",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(inst.SchedulerPort()),
		"--leader-elect=false",
		"--profiling=false",
		"--v=0",
	); err != nil {
		return err
	}
	return nil
}

// NodeMonitorGracePeriod is how long a node may miss heartbeats before it is NotReady; the
// virtual kubelets renew their leases four times per period.
const NodeMonitorGracePeriod = 12 * time.Second

var controllers = []string{
	"clusterrole-aggregation-controller",
	"cronjob-controller",
	"daemonset-controller",
	"deployment-controller",
	"disruption-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"endpointslice-mirroring-controller",
	"garbage-collector-controller",
	"job-controller",
	"namespace-controller",
	"node-lifecycle-controller",
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller",
	"replicaset-controller",
	"root-ca-certificate-publisher-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"statefulset-controller",
	"taint-eviction-controller",
	"ttl-after-finished-controller",
}

// waitReady polls the API server's /readyz; it fails early when etcd or the API server exits.
func (cp *ControlPlane) waitReady(ctx context.Context, timeout time.Duration, procs ...*proc.Process) error {
	client, err := cp.adminHTTPClient()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", cp.inst.APIServerPort())
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		for _, p := range procs {
			select {
			case <-p.Done():
				return fmt.Errorf("%s exited (%w); see %s", p.Name, p.Err(), filepath.Join(cp.inst.LogDir(), p.Name+".log"))
			default:
			}
		}
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after %s: %s", timeout, last)
}

func (cp *ControlPlane) adminHTTPClient() (*http.Client, error) {
	ca, err := os.ReadFile(cp.pki.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(cp.pki.Cert(pki.Admin), cp.pki.Key(pki.Admin))
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

// listenForPods forwards gateway:apiserver-port to the API server on loopback: pods live in
// their own network namespaces and reach the API server (in-cluster config) through the
// bridge, as through the "kubernetes" Service on a real cluster.
func (cp *ControlPlane) listenForPods() error {
	port := strconv.Itoa(cp.inst.APIServerPort())
	l, err := net.Listen("tcp", net.JoinHostPort(cp.inst.Gateway().String(), port))
	if err != nil {
		return fmt.Errorf("listen on the bridge for pods: %w", err)
	}
	cp.proxy = l
	cp.wg.Add(1)
	go func() {
		defer cp.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go forward(c, net.JoinHostPort("127.0.0.1", port))
		}
	}()
	return nil
}

func forward(c net.Conn, to string) {
	defer func() { _ = c.Close() }()
	u, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = u.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); closeWrite(u); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
}

// Pids lists the control plane's processes.
func (cp *ControlPlane) Pids() map[string]int {
	out := map[string]int{}
	for _, p := range cp.procs {
		out[p.Name] = p.Pid()
	}
	return out
}

// Exited returns a channel closed when any control-plane process exits.
func (cp *ControlPlane) Exited() <-chan *proc.Process {
	ch := make(chan *proc.Process, len(cp.procs))
	for _, p := range cp.procs {
		go func() { <-p.Done(); ch <- p }()
	}
	return ch
}

// Stop stops the components in reverse start order.
func (cp *ControlPlane) Stop() {
	if cp.proxy != nil {
		_ = cp.proxy.Close()
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop(5 * time.Second)
	}
	cp.wg.Wait()
}

// APIServerEndpointsManager marks the EndpointSlice the sandbox writes for the "kubernetes"
// Service.
const APIServerEndpointsManager = "rediskube-sandbox"

// PublishAPIServerEndpoints writes the EndpointSlice of the "kubernetes" Service, as the API
// server's endpoint reconciler would were it on (it must be off for an API server that
// advertises 127.0.0.1): its one endpoint is the gateway, where pods and the node
// namespace reach the API server, so kubernetes.default.svc:443 works through kube-proxy.
func PublishAPIServerEndpoints(ctx context.Context, client kubernetes.Interface, inst instance.Instance) error {
	ready := true
	port := int32(inst.APIServerPort())
	name, proto := "https", corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kubernetes",
			Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: "kubernetes",
				discoveryv1.LabelManagedBy:   APIServerEndpointsManager,
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{inst.Gateway().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	_, err := slices.Create(ctx, slice, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *discoveryv1.EndpointSlice
		if cur, err = slices.Get(ctx, slice.Name, metav1.GetOptions{}); err == nil {
			slice.ResourceVersion = cur.ResourceVersion
			_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("publish the API server's endpoints: %w", err)
	}
	return nil
}
