// Package cleanup takes a sandbox down completely: it stops the daemon, kills every process
// of the sandbox, removes its network namespaces, links, routes, cgroup and state directory,
// and then checks that nothing is left. It works from the state directory (or the slot)
// alone, so it also cleans up after a sandbox that crashed.
package cleanup

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

	"golang.org/x/sys/unix"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/network"
	"github.com/rediskube/redis-operator/test/sandbox/proc"
)

// Options of Down.
type Options struct {
	// KeepDir keeps the state directory (logs, volumes) for inspection.
	KeepDir bool
	// Grace is how long the daemon gets to stop its pods and control plane.
	Grace time.Duration
}

// Down stops the sandbox of inst and removes everything it made.
func Down(inst instance.Instance, opts Options) error {
	if opts.Grace == 0 {
		opts.Grace = 30 * time.Second
	}
	stopDaemon(inst, opts.Grace)
	var errs []error
	foreign := inst.OwnedBySomeoneElse()
	if !foreign {
		if err := proc.Find(inst.CgroupName()).KillAll(15*time.Second, true); err != nil {
			errs = append(errs, err)
		}
		if err := network.Teardown(inst); err != nil {
			errs = append(errs, err)
		}
		if err := network.RestoreNeighLimits(inst.Slot); err != nil {
			errs = append(errs, err)
		}
	}
	killByDir(inst.Dir)
	if err := unmountUnder(inst.Dir); err != nil {
		errs = append(errs, err)
	}
	if !opts.KeepDir {
		if err := os.RemoveAll(inst.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove state dir: %w", err))
		}
	}
	if left := Leftovers(inst, opts.KeepDir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// stopDaemon asks the daemon to stop (SIGTERM) and kills it after grace.
func stopDaemon(inst instance.Instance, grace time.Duration) {
	b, err := os.ReadFile(inst.PidFile())
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !isSandboxProcess(pid, inst) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is as good as gone.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// isSandboxProcess guards against a recycled pid: the process must mention the state dir.
func isSandboxProcess(pid int, inst instance.Instance) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), inst.Dir)
}

// ours are the executables a sandbox runs with its state directory on the command line.
var ours = map[string]bool{"sandbox": true, "etcd": true, "kube-apiserver": true,
	"kube-controller-manager": true, "kube-scheduler": true, "kube-proxy": true}

// processesByDir lists the sandbox's processes whose command line mentions dir: the daemon,
// container-init, etcd and the API server (their flags name files in it). A user's editor
// or tail on a log file is not one of them.
func processesByDir(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !ours[strings.TrimSuffix(filepath.Base(exe), " (deleted)")] {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if arg == dir || strings.HasPrefix(arg, dir+"/") || strings.Contains(arg, "="+dir+"/") || strings.HasSuffix(arg, "="+dir) {
				if alive(pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

func killByDir(dir string) {
	for i := 0; i < 50; i++ {
		pids := processesByDir(dir)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mountsUnder lists mount points at or below dir in the host's mount namespace.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescape(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

func unescape(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

func unmountUnder(dir string) error {
	mps := mountsUnder(dir)
	for i := len(mps) - 1; i >= 0; i-- {
		if err := unix.Unmount(mps[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", mps[i], err)
		}
	}
	return nil
}

// Leftovers lists what of the sandbox of inst still exists: processes, cgroup, network
// namespaces, links, routes, mounts and (unless keepDir) the state directory.
func Leftovers(inst instance.Instance, keepDir bool) []string {
	var out []string
	if !inst.OwnedBySomeoneElse() {
		g := proc.Find(inst.CgroupName())
		if pids := g.Pids(); len(pids) > 0 {
			out = append(out, fmt.Sprintf("processes %v in cgroup %s", pids, g.Dir))
		}
		if g.Exists() {
			out = append(out, "cgroup "+g.Dir)
		}
		for _, ns := range network.Namespaces(inst) {
			out = append(out, "network namespace "+ns)
		}
		for _, l := range network.Links(inst) {
			out = append(out, "link "+l)
		}
		for _, r := range network.Routes(inst) {
			out = append(out, "route "+r)
		}
		for _, m := range mountsUnder("/run/netns") {
			if strings.HasPrefix(filepath.Base(m), inst.NamePrefix()) {
				out = append(out, "mount "+m)
			}
		}
	}
	if pids := processesByDir(inst.Dir); len(pids) > 0 {
		out = append(out, fmt.Sprintf("processes %v using %s", pids, inst.Dir))
	}
	for _, m := range mountsUnder(inst.Dir) {
		out = append(out, "mount "+m)
	}
	if !keepDir {
		if _, err := os.Stat(inst.Dir); err == nil {
			out = append(out, "state directory "+inst.Dir)
		}
	}
	return out
}
