// Package network gives every pod of a sandbox its own network namespace and IP on a bridge
// the sandbox owns. The host reaches pods through the bridge and pods reach each other.
// Every node has a namespace on the bridge too, with the node's address, where its
// kube-proxy's rules translate ClusterIPs and NodePorts to endpoints: each pod routes the
// ClusterIP range to its node, the host to the first node. No packet for a sandbox address
// leaves the machine: pods and nodes have no default route, the host NATs and forwards
// nothing, and "unreachable" routes stand behind the bridge's for both ranges. Everything a
// node namespace holds (kube-proxy's tables) goes away with it.
package network

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
)

// Manager owns the bridge of one sandbox and allocates pod IPs.
type Manager struct {
	inst instance.Instance

	mu     sync.Mutex
	inUse  map[netip.Addr]bool
	cursor netip.Addr
}

// New returns the network manager of inst; call Setup before Attach.
func New(inst instance.Instance) *Manager {
	return &Manager{inst: inst, inUse: map[netip.Addr]bool{}, cursor: inst.Gateway()}
}

// backstopMetric ranks the "unreachable" routes behind the real ones: should a bridge or a
// link go away, sandbox addresses still never follow a default route off the machine.
const backstopMetric = "4000"

// Setup creates the bridge with the gateway address, one network namespace per node with
// the node's address, and the routes: the host sends the ClusterIP range to the first node,
// and both sandbox ranges have an "unreachable" backstop.
func (m *Manager) Setup() error {
	inst := m.inst
	br := inst.Bridge()
	gw := netip.PrefixFrom(inst.Gateway(), inst.PodCIDR().Bits())
	cmds := [][]string{
		{"link", "add", br, "type", "bridge"},
		{"addr", "add", gw.String(), "dev", br},
		{"link", "set", br, "up"},
		{"route", "add", "unreachable", inst.PodCIDR().String(), "metric", backstopMetric},
		{"route", "add", "unreachable", inst.ServiceCIDR().String(), "metric", backstopMetric},
	}
	_ = os.WriteFile(fmt.Sprintf("/proc/sys/net/ipv6/conf/%s/disable_ipv6", br), []byte("1"), 0o644)
	for i, c := range cmds {
		if err := ip(c...); err != nil {
			return err
		}
		if i == 0 {
			_ = os.WriteFile(fmt.Sprintf("/proc/sys/net/ipv6/conf/%s/disable_ipv6", br), []byte("1"), 0o644)
		}
	}
	for n := 0; n < inst.Nodes; n++ {
		if err := m.setupNode(n); err != nil {
			return err
		}
	}
	return ip("route", "add", inst.ServiceCIDR().String(), "via", inst.NodeIP(0).String(), "dev", br)
}

// setupNode creates node n's network namespace, linked to the bridge with the node's address.
func (m *Manager) setupNode(n int) error {
	inst := m.inst
	ns := inst.NodeNetNS(n)
	cmds := [][]string{
		{"netns", "add", ns},
		{"link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", ns, "master", inst.Bridge(), "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", netip.PrefixFrom(inst.NodeIP(n), inst.PodCIDR().Bits()).String(), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		// The ClusterIP range needs a route here, as a node's default route would be, so
		// that packets reach kube-proxy's forward-hook rules (reject for a Service without
		// endpoints, drop for an unallocated address). Nothing survives them untranslated,
		// and the host, which forwards nothing, would drop it.
		{"-n", ns, "route", "add", inst.ServiceCIDR().String(), "via", inst.Gateway().String(), "dev", "eth0"},
	}
	for _, c := range cmds {
		if err := ip(c...); err != nil {
			return err
		}
	}
	// The node routes translated packets back out to the bridge. It sends no ICMP redirects:
	// the host and pods must keep sending ClusterIP traffic through it.
	return InNetNS(filepath.Join("/run/netns", ns), func() error {
		for path, v := range map[string]string{
			"/proc/sys/net/ipv4/ip_forward":                  "1",
			"/proc/sys/net/ipv4/conf/all/send_redirects":     "0",
			"/proc/sys/net/ipv4/conf/default/send_redirects": "0",
			"/proc/sys/net/ipv4/conf/eth0/send_redirects":    "0",
		} {
			if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
				return fmt.Errorf("node namespace %s: %w", ns, err)
			}
		}
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", []byte("1"), 0o644)
		return nil
	})
}

// InNetNS runs fn on an OS thread that joined the network namespace at nsPath: sockets fn
// opens belong to that namespace, and so do the /proc/sys/net files it writes. The thread is
// never handed back to the scheduler; it ends with fn.
func InNetNS(nsPath string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no UnlockOSThread: the thread exits with this goroutine
		f, err := os.Open(nsPath)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = f.Close() }()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("join network namespace %s: %w", nsPath, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// Pod is the network of one pod sandbox.
type Pod struct {
	// NetNS is the name of the network namespace (under /run/netns).
	NetNS string
	// Veth is the host end of the pod's link, on the bridge.
	Veth string
	// IP is the pod's address.
	IP netip.Addr
}

// NetNSPath is the namespace's bind-mount path, which processes join with setns.
func (p Pod) NetNSPath() string { return filepath.Join("/run/netns", p.NetNS) }

// Attach creates a network namespace for a pod of node (0-based) with a new IP (never the IP
// the pod's previous incarnation had while other addresses are free) and links it to the
// bridge; the pod sends Service traffic to its node.
func (m *Manager) Attach(label string, node int) (Pod, error) {
	addr, err := m.allocate()
	if err != nil {
		return Pod{}, err
	}
	id := randomID()
	p := Pod{
		NetNS: trim(m.inst.NamePrefix()+id+"-"+instance.SanitizeName(label), 200),
		Veth:  m.inst.NamePrefix() + id, // rksbN-xxxxxx: at most 13 of the 15 characters allowed
		IP:    addr,
	}
	cidr := netip.PrefixFrom(addr, m.inst.PodCIDR().Bits()).String()
	steps := [][]string{
		{"netns", "add", p.NetNS},
		{"link", "add", p.Veth, "type", "veth", "peer", "name", "eth0", "netns", p.NetNS},
		{"link", "set", p.Veth, "master", m.inst.Bridge(), "up"},
		{"-n", p.NetNS, "addr", "add", cidr, "dev", "eth0"},
		{"-n", p.NetNS, "link", "set", "lo", "up"},
		{"-n", p.NetNS, "link", "set", "eth0", "up"},
		{"-n", p.NetNS, "route", "add", m.inst.ServiceCIDR().String(), "via", m.inst.NodeIP(node).String(), "dev", "eth0"},
		{"-n", p.NetNS, "route", "add", "unreachable", m.inst.ServiceCIDR().String(), "metric", backstopMetric},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			m.Detach(p)
			return Pod{}, err
		}
	}
	return p, nil
}

// Detach removes the pod's namespace and link and frees its IP. Processes still in the
// namespace must have been killed first.
func (m *Manager) Detach(p Pod) {
	if p.Veth != "" {
		_ = ip("link", "del", p.Veth)
	}
	if p.NetNS != "" {
		_ = ip("netns", "del", p.NetNS)
	}
	m.mu.Lock()
	delete(m.inUse, p.IP)
	m.mu.Unlock()
}

// Cut takes the pod's link down: the pod can neither send nor receive, established
// connections stall as in a real partition.
func (m *Manager) Cut(p Pod) error { return ip("link", "set", p.Veth, "down") }

// Heal brings the pod's link back.
func (m *Manager) Heal(p Pod) error { return ip("link", "set", p.Veth, "up") }

// IsCut reports whether the pod's link is down (administratively: IFF_UP cleared).
func IsCut(p Pod) bool {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", p.Veth, "flags"))
	if err != nil {
		return false
	}
	flags, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32)
	return err == nil && flags&0x1 == 0
}

func (m *Manager) allocate() (netip.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cidr := m.inst.PodCIDR()
	a := m.cursor
	for range 1 << (32 - cidr.Bits()) {
		a = a.Next()
		if !cidr.Contains(a) || a == lastAddr(cidr) {
			a = m.inst.NodeIP(instance.MaxNodes - 1).Next()
		}
		if !m.inUse[a] && !m.inst.IsReserved(a) {
			m.inUse[a] = true
			m.cursor = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("pod range %s exhausted", cidr)
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Teardown removes everything a sandbox of inst's slot created in the network: its pod
// namespaces, links, bridge and routes. It works from names alone, so it also cleans up
// after a crashed sandbox.
func Teardown(inst instance.Instance) error {
	var errs []error
	for _, ns := range Namespaces(inst) {
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	// Deleting a namespace deletes its veth pair: list the links only now.
	for _, l := range Links(inst) {
		if err := ip("link", "del", l); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			errs = append(errs, err)
		}
	}
	for _, r := range Routes(inst) {
		if err := ip(append([]string{"route", "del"}, strings.Fields(r)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Namespaces lists the network namespaces of inst's slot.
func Namespaces(inst instance.Instance) []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), inst.NamePrefix()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Links lists the links (bridge and veths) of inst's slot.
func Links(inst instance.Instance) []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), inst.NamePrefix()) || e.Name() == inst.Bridge() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Routes lists the host routes of inst's slot, each as "[type] prefix [metric n]".
func Routes(inst instance.Instance) []string {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return nil
	}
	var routes []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		typ := ""
		if dst == "unreachable" || dst == "blackhole" || dst == "prohibit" {
			typ, dst = f[0], f[1]
		}
		p, err := netip.ParsePrefix(dst)
		if err != nil || (p != inst.PodCIDR() && p != inst.ServiceCIDR()) {
			continue
		}
		if strings.Contains(line, "dev "+inst.Bridge()) {
			continue // goes away with the bridge
		}
		r := strings.TrimSpace(typ + " " + dst)
		for i := range f {
			if f[i] == "metric" && i+1 < len(f) {
				r += " metric " + f[i+1]
			}
			if f[i] == "table" && i+1 < len(f) && f[i+1] != "main" {
				r += " table " + f[i+1]
			}
		}
		routes = append(routes, r)
	}
	return routes
}

// PidsIn lists the processes that live in the network namespace ns.
func PidsIn(ns string) []string {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func randomID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
