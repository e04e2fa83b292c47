// Package containerinit turns a freshly cloned process into a container and execs the
// container's command. The sandbox daemon re-executes its own binary as
// `sandbox container-init <spec>` with new mount, PID and UTS namespaces; this code then
// joins the pod's network namespace, builds a root file system (the host's /, or the image's
// own root file system, as the read-only lower layer of an overlay whose writable layer is a
// tmpfs, so the container can neither see other pods' state nor change the host), bind-mounts each volume at its mountPath, chroots,
// and execs. Nothing it creates outlives the container: every mount lives in the container's
// private mount namespace.
package containerinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Mount is a bind mount of a host path at a path in the container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Spec is everything container-init needs; the daemon writes it as JSON.
type Spec struct {
	// NetNS is the network namespace to join (a /run/netns path); empty keeps the host's.
	NetNS string `json:"netns,omitempty"`
	// Hostname is set in the container's UTS namespace.
	Hostname string `json:"hostname"`
	// Scratch is an empty host directory where the container's root is assembled.
	Scratch string `json:"scratch"`
	// RootFS is the host directory the container's root shows (the overlay's lower layer):
	// an image's own root file system; empty is the host's /.
	RootFS string `json:"rootfs,omitempty"`
	// Hide lists host directories masked by an empty tmpfs (the sandbox's state directory).
	Hide []string `json:"hide,omitempty"`
	// Mounts are volume mounts, /etc/hosts and the termination log.
	Mounts []Mount `json:"mounts"`
	// WorkingDir is created when missing, as container runtimes do.
	WorkingDir string   `json:"workingDir,omitempty"`
	Args       []string `json:"args"`
	Env        []string `json:"env"`
	// RedisDefaults: the image's redis-server defaults to protected-mode no, as the
	// official images build it.
	RedisDefaults bool `json:"redisDefaults,omitempty"`
	// Entrypoint is the image's emulated entrypoint, run when Args start with it.
	Entrypoint *Entrypoint `json:"entrypoint,omitempty"`
	// Lacks are host programs (globs, in the PATH directories) the image does not contain.
	Lacks []string `json:"lacks,omitempty"`
	// ScratchImage hides every PATH directory of the host: the image has only its own files.
	ScratchImage bool `json:"scratchImage,omitempty"`
	// Dirs and Files are the image's own, created in the root before volumes are mounted
	// (a volume at the same path hides them, as on a real node).
	Dirs  []Dir  `json:"dirs,omitempty"`
	Files []File `json:"files,omitempty"`
	// User is the identity the command runs as (securityContext); nil keeps root.
	User *User `json:"user,omitempty"`
	// ReadOnlyRoot makes the root file system read-only (readOnlyRootFilesystem): only
	// volumes and /dev/shm stay writable.
	ReadOnlyRoot bool `json:"readOnlyRoot,omitempty"`
}

// Dir is a directory of the image.
type Dir struct {
	Path string      `json:"path"`
	UID  int         `json:"uid"`
	GID  int         `json:"gid"`
	Mode os.FileMode `json:"mode"`
}

// File is a file of the image.
type File struct {
	Path    string      `json:"path"`
	Content string      `json:"content"`
	UID     int         `json:"uid"`
	GID     int         `json:"gid"`
	Mode    os.FileMode `json:"mode"`
}

// User is a process identity: uid, gid and supplementary groups.
type User struct {
	UID    int   `json:"uid"`
	GID    int   `json:"gid"`
	Groups []int `json:"groups,omitempty"`
}

// StatusFD is the descriptor on which container-init reports a failure before exec; a
// successful exec closes it (close-on-exec) without writing anything.
const StatusFD = 3

func init() {
	// Namespace changes (setns of the network namespace) apply to one OS thread; keep the
	// main goroutine on the thread that will exec.
	runtime.LockOSThread()
}

// Main runs container-init with the spec at path and never returns on success.
func Main(path string) {
	status := os.NewFile(StatusFD, "status")
	err := run(path)
	var exit *exitError
	if errors.As(err, &exit) {
		// The entrypoint ran and failed: the container started, printed and exited.
		_ = status.Close()
		fmt.Fprintln(os.Stderr, exit.msg)
		os.Exit(exit.code)
	}
	msg := err.Error()
	if status != nil {
		_, _ = status.WriteString(msg)
		_ = status.Close()
	}
	fmt.Fprintln(os.Stderr, "container-init:", msg)
	os.Exit(127)
}

func run(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("parse spec: %w", err)
	}
	if len(s.Args) == 0 {
		return errors.New("no command specified")
	}
	if s.NetNS != "" {
		fd, err := unix.Open(s.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open network namespace: %w", err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("join network namespace: %w", err)
		}
		_ = unix.Close(fd)
	}
	root, err := buildRoot(&s)
	if err != nil {
		return err
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return fmt.Errorf("create working directory: %w", err)
	}
	if err := os.Chdir(wd); err != nil {
		return fmt.Errorf("chdir %s: %w", wd, err)
	}
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return fmt.Errorf("set hostname: %w", err)
		}
	}
	args, user := s.Args, s.User
	emulated := s.Entrypoint.runsEntrypoint(args, s.Env)
	if emulated {
		if args, user, err = s.Entrypoint.beforeUser(args, user); err != nil {
			return err
		}
	}
	if u := user; u != nil {
		// Groups first: once the uid is not 0 the process may not change them.
		if err := syscall.Setgroups(u.Groups); err != nil {
			return fmt.Errorf("set supplementary groups: %w", err)
		}
		if err := syscall.Setgid(u.GID); err != nil {
			return fmt.Errorf("set gid %d: %w", u.GID, err)
		}
		if err := syscall.Setuid(u.UID); err != nil {
			return fmt.Errorf("set uid %d: %w", u.UID, err)
		}
	}
	if emulated {
		if args, err = s.Entrypoint.afterUser(args, s.Env); err != nil {
			return err
		}
	}
	if len(args) == 0 {
		return errors.New("no command specified")
	}
	if s.RedisDefaults {
		args = protectedModeOff(args)
	}
	bin, err := lookPath(args[0], s.Env)
	if err != nil {
		return err
	}
	if _, err := unix.FcntlInt(StatusFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fmt.Errorf("mark status descriptor close-on-exec: %w", err)
	}
	err = syscall.Exec(bin, args, s.Env)
	return fmt.Errorf("exec %s: %w", bin, err)
}

func buildRoot(s *Spec) (string, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", s.Scratch, "tmpfs", 0, "mode=0700"); err != nil {
		return "", fmt.Errorf("mount scratch tmpfs: %w", err)
	}
	upper, work, root := filepath.Join(s.Scratch, "upper"), filepath.Join(s.Scratch, "work"), filepath.Join(s.Scratch, "root")
	for _, d := range []string{upper, work, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
	}
	lower := "/"
	if s.RootFS != "" {
		lower = s.RootFS
		// The overlay's options separate layers with ':' and options with ','.
		if strings.ContainsAny(lower, ":,") {
			return "", fmt.Errorf("root file system %s: the path may not contain ':' or ','", lower)
		}
		fi, err := os.Stat(lower)
		if err != nil {
			return "", fmt.Errorf("root file system: %w", err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("root file system %s is not a directory", lower)
		}
	}
	if err := unix.Mount("overlay", root, "overlay", 0, fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)); err != nil {
		return "", fmt.Errorf("mount root overlay: %w", err)
	}
	// Paths in the container resolve symlinks inside the new root: /var/run -> /run must
	// not lead to the host's /run before the chroot.
	in := func(p string) string { return resolveInRoot(root, p) }
	if s.RootFS != "" {
		// An image's root may lack the mount points (a pulled image of one binary has no
		// /proc): they are made in the writable layer, as container runtimes make them.
		for _, d := range []string{"/proc", "/dev", "/sys", "/tmp", "/run"} {
			if err := os.MkdirAll(in(d), 0o755); err != nil {
				return "", fmt.Errorf("mount point %s: %w", d, err)
			}
		}
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"/proc", func() error {
			return unix.Mount("proc", in("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}},
		{"/dev", func() error { return setupDev(in("/dev")) }},
		{"/sys", func() error {
			if err := unix.Mount("/sys", in("/sys"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return err
			}
			return unix.Mount("", in("/sys"), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
		}},
		{"/tmp", func() error {
			return unix.Mount("tmpfs", in("/tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
		}},
		{"/run", func() error {
			return unix.Mount("tmpfs", in("/run"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755")
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return "", fmt.Errorf("mount %s: %w", st.what, err)
		}
	}
	if err := imageFiles(s, in); err != nil {
		return "", err
	}
	for _, h := range s.Hide {
		if fi, err := os.Stat(in(h)); err == nil && fi.IsDir() {
			if err := unix.Mount("tmpfs", in(h), "tmpfs", 0, "mode=0755,size=64k"); err != nil {
				return "", fmt.Errorf("hide %s: %w", h, err)
			}
		}
	}
	mounts := append([]Mount(nil), s.Mounts...)
	// Parents before children: /data before /data/conf.
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(filepath.Clean(mounts[i].Target), "/") < strings.Count(filepath.Clean(mounts[j].Target), "/")
	})
	for _, m := range mounts {
		if err := bind(m, resolveInRoot(root, m.Target)); err != nil {
			return "", fmt.Errorf("mount %s at %s: %w", m.Source, m.Target, err)
		}
	}
	if s.ReadOnlyRoot {
		for _, p := range []string{"/", "/tmp", "/run"} {
			if err := unix.Mount("", in(p), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				// The overlay and tmpfs mounts are not bind mounts: remount them as they are.
				if err := unix.Mount("", in(p), "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
					return "", fmt.Errorf("make %s read-only: %w", p, err)
				}
			}
		}
	}
	return root, nil
}

// resolveInRoot returns the host path of p as seen from inside root, following symlinks the
// way the kernel would after chroot(root): absolute links restart at root, and ".." never
// leaves it. Components that do not exist yet are appended as they are.
func resolveInRoot(root, p string) string {
	parts := strings.Split(filepath.Clean("/"+p), "/")[1:]
	cur := "/"
	for links := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || links > 40 {
			cur = next
			continue
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			cur = next
			continue
		}
		links++
		if filepath.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(filepath.Clean(target), "/"), parts...)
	}
	return filepath.Join(root, cur)
}

func bind(m Mount, target string) error {
	fi, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if _, err := os.Lstat(target); err != nil {
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_ = f.Close()
		}
	}
	if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if m.ReadOnly {
		return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	return nil
}

// setupDev gives the container a minimal /dev of its own, as container runtimes do.
func setupDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return err
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		t := filepath.Join(dev, n)
		f, err := os.OpenFile(t, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := unix.Mount("/dev/"+n, t, "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm", "mqueue"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := unix.Mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return err
	}
	links := map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// lookPath resolves name against the PATH of the container's environment.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("exec: %q: %w", name, err)
		}
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("permission denied")
	}
	return nil
}

// pathDirs are the directories an image's programs are looked up in.
var pathDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// imageFiles makes the root look like the image's: the host programs it lacks are removed
// from the overlay (whiteouts in the writable layer, the host is untouched), a scratch
// image's PATH directories are emptied, and its own directories and files are created.
func imageFiles(s *Spec, in func(string) string) error {
	if s.ScratchImage {
		seen := map[string]bool{}
		for _, d := range pathDirs {
			p := in(d)
			if seen[p] {
				continue
			}
			seen[p] = true
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
			if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
				return fmt.Errorf("empty %s: %w", d, err)
			}
		}
	}
	for _, pattern := range s.Lacks {
		for _, d := range pathDirs {
			matches, err := filepath.Glob(filepath.Join(in(d), pattern))
			if err != nil {
				return fmt.Errorf("hide %s: %w", pattern, err)
			}
			for _, m := range matches {
				if err := os.Remove(m); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("hide %s: %w", m, err)
				}
			}
		}
	}
	for _, d := range s.Dirs {
		p := in(d.Path)
		// The image's directory, not the host's: /etc/redis of the host's packages holds
		// their files (a sentinel.conf only root may write), which the image does not have.
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("image directory %s: %w", d.Path, err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("image directory %s: %w", d.Path, err)
		}
		if err := os.Chown(p, d.UID, d.GID); err != nil {
			return fmt.Errorf("image directory %s: %w", d.Path, err)
		}
		if err := os.Chmod(p, d.Mode.Perm()); err != nil {
			return fmt.Errorf("image directory %s: %w", d.Path, err)
		}
	}
	for _, f := range s.Files {
		p := in(f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
		_ = os.Remove(p)
		if err := os.WriteFile(p, []byte(f.Content), f.Mode.Perm()); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
		if err := os.Chown(p, f.UID, f.GID); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
		if err := os.Chmod(p, f.Mode.Perm()); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
	}
	return nil
}
