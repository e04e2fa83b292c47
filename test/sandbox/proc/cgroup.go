// Package proc tracks and kills the processes of a sandbox. Every process the sandbox starts
// (control plane, containers, exec sessions) descends from the sandbox daemon, which joins a
// cgroup of its own before starting anything; so `sandbox down` finds and kills all of them
// through that cgroup, even when the daemon crashed or a container double-forked.
package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Group is a cgroup (v1 freezer, or v2) that collects a sandbox's processes.
type Group struct {
	// Dir is the cgroup directory; empty when the machine offers no usable cgroup.
	Dir string
	v2  bool
}

// Roots tried in order: the v1 freezer hierarchy (can freeze before killing, so nothing
// forks away), then a v2 unified hierarchy (has cgroup.kill).
var roots = []struct {
	dir string
	v2  bool
}{
	{"/sys/fs/cgroup/freezer", false},
	{"/sys/fs/cgroup/unified", true},
	{"/sys/fs/cgroup", true},
}

// Find returns the group called name (it may not exist).
func Find(name string) Group {
	for _, r := range roots {
		if r.v2 {
			if _, err := os.Stat(filepath.Join(r.dir, "cgroup.procs")); err != nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(r.dir, "cgroup.controllers")); err != nil {
				continue
			}
		} else if _, err := os.Stat(filepath.Join(r.dir, "tasks")); err != nil {
			continue
		}
		return Group{Dir: filepath.Join(r.dir, name), v2: r.v2}
	}
	return Group{}
}

// Join creates the group and moves the calling process into it; children inherit it.
func (g Group) Join() error {
	if g.Dir == "" {
		return errors.New("no cgroup hierarchy found (looked for v1 freezer and v2)")
	}
	if err := os.MkdirAll(g.Dir, 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	return os.WriteFile(filepath.Join(g.Dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// Leave moves the caller back to the cgroup it was in before Join (in the same hierarchy),
// so the group can be emptied and removed.
func (g Group) Leave() {
	if g.Dir == "" {
		return
	}
	_ = os.WriteFile(filepath.Join(filepath.Dir(g.Dir), "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// Exists reports whether the group's directory exists.
func (g Group) Exists() bool {
	if g.Dir == "" {
		return false
	}
	_, err := os.Stat(g.Dir)
	return err == nil
}

// Pids lists the processes in the group.
func (g Group) Pids() []int {
	if g.Dir == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(g.Dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p, err := strconv.Atoi(strings.TrimSpace(s.Text())); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// KillAll kills every process in the group except the caller, waits for them to be gone
// and removes the group when it is empty and removeDir is set.
func (g Group) KillAll(timeout time.Duration, removeDir bool) error {
	if !g.Exists() {
		return nil
	}
	self := os.Getpid()
	deadline := time.Now().Add(timeout)
	for {
		pids := without(g.Pids(), self)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of cgroup %s survive SIGKILL", pids, g.Dir)
		}
		if g.v2 && !contains(g.Pids(), self) {
			_ = os.WriteFile(filepath.Join(g.Dir, "cgroup.kill"), []byte("1"), 0o644)
		} else {
			g.freeze(true)
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			g.freeze(false)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if removeDir && !contains(g.Pids(), self) {
		if err := os.Remove(g.Dir); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove cgroup: %w", err)
		}
	}
	return nil
}

// freeze stops (or resumes) every process of a v1 freezer group so none can fork while we
// kill; a no-op when the caller is itself in the group.
func (g Group) freeze(on bool) {
	if g.v2 || contains(g.Pids(), os.Getpid()) {
		return
	}
	state := "THAWED"
	if on {
		state = "FROZEN"
	}
	_ = os.WriteFile(filepath.Join(g.Dir, "freezer.state"), []byte(state), 0o644)
}

func without(pids []int, p int) []int {
	out := pids[:0]
	for _, q := range pids {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

func contains(pids []int, p int) bool {
	for _, q := range pids {
		if q == p {
			return true
		}
	}
	return false
}
