// Package instance derives every name, address range and port of one sandbox from its slot
// number, so that two sandboxes on one machine (the developer's `make sandbox` and a test's)
// never share a bridge, a network namespace, an IP range, a port or a cgroup, and so that
// `sandbox down` can find everything a crashed sandbox left behind from the slot alone.
package instance

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// MaxSlots is the number of sandboxes that can run side by side on one machine.
const MaxSlots = 16

// MaxNodes bounds the number of virtual nodes, because each gets a kubelet port.
const MaxNodes = 9

// Prefix starts the name of every kernel object (bridge, veth, netns) a sandbox creates.
const Prefix = "rksb"

// Instance is the identity of one sandbox.
type Instance struct {
	// Slot selects the bridge, the IP ranges and the ports; 0..MaxSlots-1.
	Slot int `json:"slot"`
	// Dir is the absolute state directory (kubeconfig, certificates, etcd, logs, volumes).
	Dir string `json:"dir"`
	// Nodes is the number of virtual nodes.
	Nodes int `json:"nodes"`
	// Registry is the host:port of the sandbox's OCI registry (RegistryAddr), empty when
	// the sandbox runs none: tests and tools read it here to push to it.
	Registry string `json:"registry,omitempty"`
}

// New validates slot, dir and nodes.
func New(slot int, dir string, nodes int) (Instance, error) {
	if slot < 0 || slot >= MaxSlots {
		return Instance{}, fmt.Errorf("slot %d out of range 0..%d", slot, MaxSlots-1)
	}
	if nodes < 1 || nodes > MaxNodes {
		return Instance{}, fmt.Errorf("nodes %d out of range 1..%d", nodes, MaxNodes)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Instance{}, fmt.Errorf("state dir %q: %w", dir, err)
	}
	return Instance{Slot: slot, Dir: abs, Nodes: nodes}, nil
}

// Path joins elem to the state directory.
func (i Instance) Path(elem ...string) string {
	return filepath.Join(append([]string{i.Dir}, elem...)...)
}

// NamePrefix starts the name of every network namespace and veth of this slot.
func (i Instance) NamePrefix() string { return fmt.Sprintf("%s%d-", Prefix, i.Slot) }

// Bridge is the name of the bridge all pods of this slot are attached to.
func (i Instance) Bridge() string { return fmt.Sprintf("%s%dbr", Prefix, i.Slot) }

// PodCIDR is the range pod IPs are taken from: 10.244.16*slot.0/20.
func (i Instance) PodCIDR() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(16 * i.Slot), 0}), 20)
}

// ServiceCIDR is the ClusterIP range: 10.96.16*slot.0/20. Every pod routes it to its node's
// network namespace, the host to the first node's, where kube-proxy translates it to
// endpoints; behind that route an "unreachable" one keeps it on the machine.
func (i Instance) ServiceCIDR() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 96, byte(16 * i.Slot), 0}), 20)
}

// Gateway is the host's address on the bridge; pods reach the API server through it.
func (i Instance) Gateway() netip.Addr { return i.PodCIDR().Addr().Next() }

// NodeIP is the address of node n (0-based): it lives in the node's network namespace
// (NodeNetNS) on the bridge, where the node's kube-proxy runs; the node's NodePorts and its
// kubelet API answer on it. Node addresses follow the gateway and are never given to pods.
func (i Instance) NodeIP(n int) netip.Addr {
	a := i.Gateway().As4()
	a[3] += byte(1 + n)
	return netip.AddrFrom4(a)
}

// IsReserved reports whether a is the gateway or a node address (of any node count).
func (i Instance) IsReserved(a netip.Addr) bool {
	return a == i.Gateway() || (a.Compare(i.NodeIP(0)) >= 0 && a.Compare(i.NodeIP(MaxNodes-1)) <= 0)
}

// NodeNetNS is the network namespace of node n: it holds the node's address and its
// kube-proxy's rules, and its host-side link has the same name. Deleting it deletes every
// rule that kube-proxy made.
func (i Instance) NodeNetNS(n int) string { return fmt.Sprintf("%snode%d", i.NamePrefix(), n) }

// KubeDNSServiceIP is the ClusterIP of kube-system/kube-dns, the pods' nameserver.
func (i Instance) KubeDNSServiceIP() netip.Addr {
	a := i.ServiceCIDR().Addr().As4()
	a[3] = 10
	return netip.AddrFrom4(a)
}

// KubernetesServiceIP is the first ClusterIP, the one of the "kubernetes" Service.
func (i Instance) KubernetesServiceIP() netip.Addr { return i.ServiceCIDR().Addr().Next() }

func (i Instance) basePort() int { return 26000 + 20*i.Slot }

// EtcdClientPort and the following ports are all bound on 127.0.0.1 (the API server port
// also on the gateway, for pods), below the kernel's ephemeral port range.
func (i Instance) EtcdClientPort() int { return i.basePort() }

// EtcdPeerPort is etcd's peer port.
func (i Instance) EtcdPeerPort() int { return i.basePort() + 1 }

// APIServerPort is the kube-apiserver's secure port.
func (i Instance) APIServerPort() int { return i.basePort() + 2 }

// ControllerManagerPort is kube-controller-manager's secure port.
func (i Instance) ControllerManagerPort() int { return i.basePort() + 3 }

// SchedulerPort is kube-scheduler's secure port.
func (i Instance) SchedulerPort() int { return i.basePort() + 4 }

// RegistryAddr is where the sandbox's registry listens when it runs one: a fixed port per
// slot, so that image references stay the same across restarts of a sandbox.
func (i Instance) RegistryAddr() string { return fmt.Sprintf("127.0.0.1:%d", i.basePort()+5) }

// RegistryDir holds the registry's blobs and manifests.
func (i Instance) RegistryDir() string { return i.Path("registry") }

// PulledDir holds the unpacked file systems of the images pulled from the registry.
func (i Instance) PulledDir() string { return i.Path("images") }

// KubeletPort is the kubelet API port of node n (0-based).
func (i Instance) KubeletPort(n int) int { return i.basePort() + 10 + n }

// Ports lists every port the sandbox listens on.
func (i Instance) Ports() []int {
	p := []int{i.EtcdClientPort(), i.EtcdPeerPort(), i.APIServerPort(), i.ControllerManagerPort(), i.SchedulerPort()}
	for n := 0; n < i.Nodes; n++ {
		p = append(p, i.KubeletPort(n))
	}
	if i.Registry != "" {
		p = append(p, i.basePort()+5)
	}
	return p
}

// Zones are the topology zones of nodes 0, 1, 2, ...
var zones = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}

// NodeName is the name of node n.
func (i Instance) NodeName(n int) string { return "sandbox-" + zones[n] }

// NodeZone is the topology.kubernetes.io/zone of node n.
func (i Instance) NodeZone(n int) string { return zones[n] }

// NodeIndex returns the index of the node called name, or -1.
func (i Instance) NodeIndex(name string) int {
	for n := 0; n < i.Nodes; n++ {
		if i.NodeName(n) == name {
			return n
		}
	}
	return -1
}

// CgroupName is the cgroup every process of the sandbox runs in, so that `down` can kill
// them all even when the sandbox daemon crashed.
func (i Instance) CgroupName() string { return fmt.Sprintf("rediskube-sandbox-%d", i.Slot) }

// LockDir holds one lock file per slot, held by the running sandbox daemon of that slot.
// A variable so that tests can use a directory of their own.
var LockDir = "/run/rediskube-sandbox"

// LockFile is the lock of this slot.
func (i Instance) LockFile() string {
	return filepath.Join(LockDir, fmt.Sprintf("slot-%d.lock", i.Slot))
}

// Kubeconfig is the admin kubeconfig users and tests use.
func (i Instance) Kubeconfig() string { return i.Path("kubeconfig") }

// ControlSocket is the unix socket of the sandbox daemon (status and fault injection).
func (i Instance) ControlSocket() string { return i.Path("control.sock") }

// PidFile holds the sandbox daemon's pid.
func (i Instance) PidFile() string { return i.Path("sandbox.pid") }

// LogDir holds the daemon's and the control plane's logs.
func (i Instance) LogDir() string { return i.Path("logs") }

// VolumesDir holds the data of persistent volumes.
func (i Instance) VolumesDir() string { return i.Path("volumes") }

// PodsDir holds per-pod state: volumes, container logs and root file systems.
func (i Instance) PodsDir() string { return i.Path("pods") }

const fileName = "instance.json"

// Save records the instance in its state directory so that `down` works from the directory
// alone, even after a crash.
func (i Instance) Save() error {
	if err := os.MkdirAll(i.Dir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return err
	}
	tmp := i.Path(fileName + ".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write instance file: %w", err)
	}
	return os.Rename(tmp, i.Path(fileName))
}

// Load reads the instance recorded in dir.
func Load(dir string) (Instance, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Instance{}, err
	}
	b, err := os.ReadFile(filepath.Join(abs, fileName))
	if err != nil {
		return Instance{}, fmt.Errorf("read sandbox instance: %w", err)
	}
	var i Instance
	if err := json.Unmarshal(b, &i); err != nil {
		return Instance{}, fmt.Errorf("parse %s: %w", filepath.Join(abs, fileName), err)
	}
	inst, err := New(i.Slot, abs, i.Nodes)
	inst.Registry = i.Registry
	return inst, err
}

// SanitizeName turns s into something usable in a file or namespace name.
func SanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
}
