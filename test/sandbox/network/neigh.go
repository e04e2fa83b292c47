package network

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
)

// The kernel's neighbour (ARP) table is one for all network namespaces, and its default hard
// limit (gc_thresh3, 1024 entries) is reached past about 160 pods: entries are then refused
// ("neighbor table overflow") and connections to pods time out at random. A running sandbox
// raises the limits; the last one to stop puts back the values it found.

// NeighLimits are the values a sandbox needs at least (a higher value found is kept).
var NeighLimits = map[string]int{"gc_thresh1": 4096, "gc_thresh2": 16384, "gc_thresh3": 32768}

// neighTable is where the limits live and where the values found before are kept; a field so
// that tests use a directory of their own.
type neighTable struct {
	sysctlDir string // /proc/sys/net/ipv4/neigh/default
	saved     string // the values found, kept while any sandbox runs
	lock      string // serialises sandboxes starting and stopping
	// running reports whether a sandbox other than slot still has its network.
	running func(slot int) bool
}

var hostNeigh = neighTable{
	sysctlDir: "/proc/sys/net/ipv4/neigh/default",
	saved:     filepath.Join(instance.LockDir, "neigh-limits.saved"),
	lock:      filepath.Join(instance.LockDir, "neigh-limits.lock"),
	running:   otherBridgeExists,
}

// RaiseNeighLimits raises the neighbour table limits for a sandbox that starts, keeping the
// values found (before the first sandbox raised them) for RestoreNeighLimits.
func RaiseNeighLimits() error { return hostNeigh.raise() }

// RestoreNeighLimits puts back the limits found before the first sandbox started, once no
// sandbox but slot's (which is stopping) has its network.
func RestoreNeighLimits(slot int) error { return hostNeigh.restore(slot) }

func (n neighTable) raise() error {
	return n.locked(func() error {
		current, err := n.read()
		if err != nil {
			return err
		}
		if _, err := os.Stat(n.saved); os.IsNotExist(err) {
			if err := os.WriteFile(n.saved, []byte(format(current)), 0o644); err != nil {
				return fmt.Errorf("keep the neighbour table limits: %w", err)
			}
		}
		for _, name := range sortedNames() {
			if current[name] >= NeighLimits[name] {
				continue
			}
			if err := n.write(name, NeighLimits[name]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (n neighTable) restore(slot int) error {
	return n.locked(func() error {
		if n.running(slot) {
			return nil
		}
		data, err := os.ReadFile(n.saved)
		if os.IsNotExist(err) {
			return nil // never raised, or already put back
		}
		if err != nil {
			return err
		}
		saved, err := parse(string(data))
		if err != nil {
			return fmt.Errorf("%s: %w", n.saved, err)
		}
		// gc_thresh3 last when lowering: the kernel wants thresh1 <= thresh2 <= thresh3 to
		// make sense, though it does not enforce it.
		for _, name := range sortedNames() {
			if v, ok := saved[name]; ok {
				if err := n.write(name, v); err != nil {
					return err
				}
			}
		}
		return os.Remove(n.saved)
	})
}

func (n neighTable) locked(fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(n.lock), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(n.lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", n.lock, err)
	}
	return fn()
}

func (n neighTable) read() (map[string]int, error) {
	out := map[string]int{}
	for name := range NeighLimits {
		b, err := os.ReadFile(filepath.Join(n.sysctlDir, name))
		if err != nil {
			return nil, fmt.Errorf("read neighbour table limit: %w", err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("neighbour table limit %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func (n neighTable) write(name string, v int) error {
	if err := os.WriteFile(filepath.Join(n.sysctlDir, name), []byte(strconv.Itoa(v)), 0o644); err != nil {
		return fmt.Errorf("set neighbour table limit %s: %w", name, err)
	}
	return nil
}

func sortedNames() []string { return []string{"gc_thresh1", "gc_thresh2", "gc_thresh3"} }

func format(values map[string]int) string {
	var b strings.Builder
	for _, name := range sortedNames() {
		fmt.Fprintf(&b, "%s %d\n", name, values[name])
	}
	return b.String()
}

func parse(text string) (map[string]int, error) {
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if _, known := NeighLimits[name]; !ok || !known {
			return nil, fmt.Errorf("line %q", line)
		}
		v, err := strconv.Atoi(value)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		out[name] = v
	}
	return out, nil
}

// otherBridgeExists: a sandbox of another slot has its bridge, so its pods use the table.
func otherBridgeExists(slot int) bool {
	for s := 0; s < instance.MaxSlots; s++ {
		if s == slot {
			continue
		}
		if _, err := os.Stat(filepath.Join("/sys/class/net", fmt.Sprintf("%s%dbr", instance.Prefix, s))); err == nil {
			return true
		}
	}
	return false
}
