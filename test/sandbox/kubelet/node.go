package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/rediskube/redis-operator/test/sandbox/controlplane"
	"github.com/rediskube/redis-operator/test/sandbox/network"
	"github.com/rediskube/redis-operator/test/sandbox/pki"
)

var getOpts = metav1.GetOptions{}

// leaseDuration is the node lease's duration; virtual-kubelet renews it every quarter, so a
// stopped node is noticed within controlplane.NodeMonitorGracePeriod.
const leaseDuration = int32(controlplane.NodeMonitorGracePeriod / time.Second)

// KubeletVersion is what nodes report.
const KubeletVersion = "v1.37.2"

// Node is one running virtual node.
type Node struct {
	name     string
	idx      int
	provider *Provider
	cancel   context.CancelFunc
	done     chan struct{}
	server   *http.Server
}

func (c *Cluster) nodeObject(idx int) *corev1.Node {
	inst := c.cfg.Inst
	name := inst.NodeName(idx)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              c.cfg.NodeCPU,
		corev1.ResourceMemory:           c.cfg.NodeMemory,
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"topology.kubernetes.io/zone":      inst.NodeZone(idx),
				"topology.kubernetes.io/region":    "sandbox",
				"node.kubernetes.io/instance-type": "sandbox",
				"type":                             "virtual-kubelet",
			},
		},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodeRunning,
			Capacity:    res,
			Allocatable: res,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: inst.NodeIP(idx).String()},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(inst.KubeletPort(idx))}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          KubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "rediskube-sandbox://1",
				OSImage:                 "rediskube sandbox (processes on the host)",
			},
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "sandbox kubelet is posting ready status"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			},
		},
	}
}

// startNode wires a provider into virtual-kubelet's node and pod controllers (as
// nodeutil.NewNode does, but with a short lease so stopped nodes are noticed quickly) and
// serves the kubelet API on the node's port.
func (c *Cluster) startNode(idx int) (*Node, error) {
	inst := c.cfg.Inst
	name := inst.NodeName(idx)
	ctx, cancel := context.WithCancel(c.ctx)
	n := &Node{name: name, idx: idx, cancel: cancel, done: make(chan struct{})}
	fail := func(err error) (*Node, error) {
		cancel()
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	client := c.cfg.Client

	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, nodeutil.PodInformerFilter(name))
	podInformer := podFactory.Core().V1().Pods()

	broadcaster := record.NewBroadcaster()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: name})

	n.provider = newProvider(c, name, idx, recorder)
	nodeObj := c.nodeObject(idx)
	nc, err := node.NewNodeController(node.NewNaiveNodeProvider(), nodeObj, client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1WithRenewInterval(nodeutil.NodeLeaseV1Client(client), leaseDuration, time.Duration(leaseDuration)*time.Second/4),
		node.WithNodeStatusUpdateInterval(30*time.Second),
		// A deleted Node object is registered again, as a kubelet would.
		node.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			if !apierrors.IsNotFound(err) {
				return err
			}
			fresh := c.nodeObject(idx)
			_, cerr := client.CoreV1().Nodes().Create(ctx, fresh, metav1.CreateOptions{})
			if cerr != nil && !apierrors.IsAlreadyExists(cerr) {
				return cerr
			}
			return nil
		}),
	)
	if err != nil {
		return fail(err)
	}
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:                 client.CoreV1(),
		PodInformer:               podInformer,
		EventRecorder:             recorder,
		Provider:                  n.provider,
		ConfigMapInformer:         c.factory.Core().V1().ConfigMaps(),
		SecretInformer:            c.factory.Core().V1().Secrets(),
		ServiceInformer:           c.factory.Core().V1().Services(),
		SkipDownwardAPIResolution: true, // the provider resolves env itself: it knows the pod IP
	})
	if err != nil {
		return fail(err)
	}

	handler := api.PodHandler(api.PodHandlerConfig{
		RunInContainer:    n.provider.RunInContainer,
		AttachToContainer: n.provider.AttachToContainer,
		GetContainerLogs:  n.provider.GetContainerLogs,
		GetPods:           n.provider.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			return podInformer.Lister().List(labels.Everything())
		},
		GetStatsSummary:       n.provider.GetStatsSummary,
		GetMetricsResource:    n.provider.GetMetricsResource,
		PortForward:           n.provider.PortForward,
		StreamIdleTimeout:     30 * time.Minute,
		StreamCreationTimeout: 30 * time.Second,
	}, false)
	tlsCfg, err := c.kubeletTLS()
	if err != nil {
		return fail(err)
	}
	// The API server reaches the kubelet at the node's InternalIP, in the node namespace;
	// loopback serves local tools.
	port := strconv.Itoa(inst.KubeletPort(idx))
	local, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return fail(fmt.Errorf("kubelet API listener: %w", err))
	}
	var onNode net.Listener
	err = network.InNetNS(filepath.Join("/run/netns", inst.NodeNetNS(idx)), func() (err error) {
		onNode, err = net.Listen("tcp", net.JoinHostPort(inst.NodeIP(idx).String(), port))
		return err
	})
	if err != nil {
		_ = local.Close()
		return fail(fmt.Errorf("kubelet API listener on the node address: %w", err))
	}
	n.server = &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	for _, l := range []net.Listener{local, onNode} {
		go func() { _ = n.server.Serve(tls.NewListener(l, tlsCfg)) }()
	}

	broadcaster.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: client.CoreV1().Events("")})
	podFactory.Start(ctx.Done())

	go func() {
		defer close(n.done)
		defer broadcaster.Shutdown()
		go func() { _ = pc.Run(ctx, 4) }()
		select {
		case <-pc.Ready():
		case <-pc.Done():
			c.cfg.Log.Error("pod controller exited", "node", name, "err", pc.Err())
			return
		case <-ctx.Done():
			<-pc.Done()
			return
		}
		go func() {
			if err := nc.Run(ctx); err != nil && ctx.Err() == nil {
				c.cfg.Log.Error("node controller exited: the node no longer reports status", "node", name, "err", err)
			}
		}()
		<-ctx.Done()
		<-pc.Done()
		<-nc.Done()
	}()

	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-pc.Ready():
			select {
			case <-nc.Ready():
				return n, nil
			case <-nc.Done():
				n.stop()
				return nil, fmt.Errorf("node %s: node controller: %w", name, nc.Err())
			case <-deadline:
				n.stop()
				return nil, fmt.Errorf("node %s: not registered after 30s", name)
			}
		case <-n.done:
			n.stop()
			return nil, fmt.Errorf("node %s: pod controller exited: %w", name, pc.Err())
		case <-deadline:
			n.stop()
			return nil, fmt.Errorf("node %s: pod controller not ready after 30s", name)
		}
	}
}

// kubeletTLS serves the kubelet API with a certificate of the sandbox CA and accepts only
// clients with a certificate of that CA (the API server's kubelet client, admins).
func (c *Cluster) kubeletTLS() (*tls.Config, error) {
	files := controlplane.PKI(c.cfg.Inst)
	cert, err := tls.LoadX509KeyPair(files.Cert(pki.Kubelet), files.Key(pki.Kubelet))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(files.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("parse CA certificate")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// stop stops the controllers (no more heartbeats or status updates) and kills every
// process of the node's pods.
func (n *Node) stop() {
	n.provider.halt()
	n.cancel()
	<-n.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = n.server.Shutdown(ctx)
	_ = n.server.Close()
	n.provider.killAll()
}
