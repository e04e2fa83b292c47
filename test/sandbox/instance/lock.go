package instance

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSlotBusy means another live sandbox holds the slot.
var ErrSlotBusy = errors.New("slot is used by another running sandbox")

// Lock is a held slot lock. The kernel releases it when the holder dies, so a crashed
// sandbox never blocks its slot.
type Lock struct{ f *os.File }

// AcquireLock takes the slot's lock for the life of the calling process and records the
// state directory in it.
func (i Instance) AcquireLock() (*Lock, error) {
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", LockDir, err)
	}
	f, err := os.OpenFile(i.LockFile(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open slot lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(i.LockFile())
		_ = f.Close()
		return nil, fmt.Errorf("slot %d (held by %s): %w", i.Slot, strings.TrimSpace(string(owner)), ErrSlotBusy)
	}
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		return nil, err
	}
	if _, err := f.WriteAt([]byte(i.Dir+"\n"), 0); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Release gives the slot back.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
	}
}

// LockHolder reports whether a live process holds the slot's lock, and the state directory
// it recorded. It reads /proc/locks rather than trying the lock, which would make a sandbox
// starting at that moment find its slot busy.
func (i Instance) LockHolder() (dir string, held bool) {
	var st unix.Stat_t
	if err := unix.Stat(i.LockFile(), &st); err != nil {
		return "", false
	}
	b, _ := os.ReadFile(i.LockFile())
	dir = strings.TrimSpace(string(b))
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return dir, false
	}
	// Lines look like "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF".
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			return dir, true
		}
	}
	return dir, false
}

// OwnedBySomeoneElse reports whether a live sandbox with another state directory holds the
// slot; then name-based cleanup of the slot must not run, it would break that sandbox.
func (i Instance) OwnedBySomeoneElse() bool {
	dir, held := i.LockHolder()
	return held && dir != i.Dir
}

// RunningDirs lists the state directories of the sandboxes running on this machine.
func RunningDirs() []string {
	var dirs []string
	for s := 0; s < MaxSlots; s++ {
		if dir, held := (Instance{Slot: s}).LockHolder(); held && dir != "" {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}
