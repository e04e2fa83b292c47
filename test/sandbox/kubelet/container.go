package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
	"github.com/rediskube/redis-operator/test/sandbox/images"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
)

type containerKind int

const (
	appContainer containerKind = iota
	initContainer
	sidecarContainer
)

const sigKill = syscall.SIGKILL

// Restart back-off, as the kubelet's: the first restart is immediate, then 10 s doubling
// up to 5 min; a container that ran for 10 min without failing starts over.
const (
	backOffInitial = 10 * time.Second
	backOffMax     = 300 * time.Second
	// Missing images and config errors are retried faster: the fix (make build, creating
	// the Secret) usually comes from the user within seconds.
	pullBackOffInitial = 2 * time.Second
	pullBackOffMax     = 30 * time.Second
)

// container is one container of a pod sandbox. Its status fields are guarded by sb.mu.
type container struct {
	sb   *podSandbox
	name string
	kind containerKind
	dir  string

	spec      corev1.Container
	state     corev1.ContainerState
	last      corev1.ContainerState
	restarts  int32
	ready     bool
	started   bool
	ranBefore bool
	id        string
	imageID   string
	env       []string
	user      *containerinit.User
	attempt   int
	proc      *process
	pullFails int
	configErr int
	bo        backoff
	logsDone  map[int]chan struct{}

	startedOnce sync.Once
	startedCh   chan struct{}
}

// process is one run of a container's command.
type process struct {
	cmd       *exec.Cmd
	pid       int
	attempt   int
	exited    chan struct{}
	exitCode  int32
	signal    string
	startedAt metav1.Time
	stopOnce  sync.Once
	logs      sync.WaitGroup
}

type backoff struct {
	d    time.Duration
	last time.Time
}

// next returns how long to wait before the next restart.
func (b *backoff) next(initial, max time.Duration) time.Duration {
	now := time.Now()
	if b.d == 0 || now.Sub(b.last) > 2*max {
		b.d, b.last = initial, now
		return 0
	}
	wait := b.d
	b.d = min(2*b.d, max)
	b.last = now
	return wait
}

func newContainer(sb *podSandbox, spec corev1.Container, kind containerKind, prior map[string]corev1.ContainerStatus) *container {
	c := &container{
		sb:        sb,
		name:      spec.Name,
		kind:      kind,
		dir:       filepath.Join(sb.dir, "containers", spec.Name),
		spec:      spec,
		logsDone:  map[int]chan struct{}{},
		startedCh: make(chan struct{}),
	}
	reason := "ContainerCreating"
	if kind == appContainer && len(sb.pod.Spec.InitContainers) > 0 || kind != appContainer {
		reason = "PodInitializing"
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	// A pod that ran on this node before (the node restarted) keeps its restart counts: the
	// lost container counts as terminated.
	if s, ok := prior[spec.Name]; ok && (s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil) {
		c.restarts = s.RestartCount
		c.ranBefore = true
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "ContainerStatusUnknown",
			Message: "The container could not be located when the pod was restarted",
		}}
	}
	return c
}

func (c *container) setState(s corev1.ContainerState) {
	c.sb.mu.Lock()
	c.state = s
	c.sb.mu.Unlock()
	c.sb.changed()
}

func (c *container) waiting(reason, msg string) {
	c.setState(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}})
}

type runResult struct {
	started    bool
	exitCode   int32
	retryAfter time.Duration
}

// supervise runs an app container or sidecar under its restart policy until the pod stops.
func (c *container) supervise() {
	for {
		if c.sb.isTerminating() || c.sb.ctx.Err() != nil {
			return
		}
		res := c.runOnce()
		if c.sb.isTerminating() || c.sb.ctx.Err() != nil {
			return
		}
		if !res.started && res.retryAfter > 0 {
			if !c.sb.sleep(res.retryAfter) {
				return
			}
			continue
		}
		policy := c.sb.currentPod().Spec.RestartPolicy
		if c.kind == sidecarContainer {
			policy = corev1.RestartPolicyAlways
		}
		if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && res.exitCode == 0) {
			return
		}
		if !c.backOff() {
			return
		}
	}
}

// backOff waits before a restart, showing CrashLoopBackOff meanwhile.
func (c *container) backOff() bool {
	wait := c.bo.next(backOffInitial, backOffMax)
	if wait == 0 {
		return true
	}
	pod := c.sb.currentPod()
	msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait, c.name, pod.Name, pod.Namespace, pod.UID)
	c.sb.mu.Lock()
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg}}
	c.sb.mu.Unlock()
	c.sb.changed()
	c.sb.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.name, pod.Name)
	return c.sb.sleep(wait)
}

// runOnce starts the container and waits for it to exit. Errors before the start (unknown
// image, missing config) leave it Waiting and ask for a retry.
func (c *container) runOnce() runResult {
	sb := c.sb
	pod := sb.currentPod()
	sb.mu.Lock()
	spec := c.spec
	sb.mu.Unlock()

	img, err := sb.p.c.cfg.Images.Resolve(spec.Image)
	if err != nil {
		c.pullFails++
		reason := "ErrImagePull"
		if c.pullFails > 1 {
			reason = "ImagePullBackOff"
		}
		c.waiting(reason, err.Error())
		if c.pullFails == 1 || c.pullFails%10 == 0 {
			sb.event(corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", spec.Image, err)
		}
		return runResult{retryAfter: capped(pullBackOffInitial, pullBackOffMax, c.pullFails)}
	}
	c.pullFails = 0
	if c.attempt == 0 {
		sb.event(corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", spec.Image)
	}

	env, initSpec, err := c.prepare(pod, &spec, img)
	if err != nil {
		c.configErr++
		var ce *configError
		if errors.As(err, &ce) {
			c.waiting("CreateContainerConfigError", err.Error())
		} else {
			c.waiting("CreateContainerError", err.Error())
		}
		if c.configErr == 1 || c.configErr%10 == 0 {
			sb.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
		}
		return runResult{retryAfter: capped(pullBackOffInitial, pullBackOffMax, c.configErr)}
	}
	c.configErr = 0

	sb.mu.Lock()
	if c.ranBefore {
		c.restarts++
		if c.state.Terminated != nil {
			c.last = c.state
		}
	}
	c.ranBefore = true
	c.attempt++
	attempt := c.attempt
	c.env = env
	c.user = initSpec.User
	c.imageID = img.ID
	c.ready, c.started = false, false
	done := make(chan struct{})
	c.logsDone[attempt] = done
	delete(c.logsDone, attempt-3)
	sb.mu.Unlock()

	proc, startErr := c.start(attempt, &spec, initSpec)
	id := fmt.Sprintf("sandbox://%s-%s-%d", strings.ReplaceAll(string(pod.UID), "-", "")[:12], c.name, attempt)
	if startErr != nil {
		now := metav1.Now()
		close(done)
		sb.mu.Lock()
		c.id = id
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: startErr.Error(), StartedAt: now, FinishedAt: now, ContainerID: id,
		}}
		sb.mu.Unlock()
		sb.changed()
		sb.event(corev1.EventTypeWarning, "Failed", "Error: failed to start container %q: %v", c.name, startErr)
		return runResult{started: true, exitCode: 128}
	}
	sb.mu.Lock()
	c.id = id
	c.proc = proc
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: proc.startedAt}}
	stopping := sb.terminating
	sb.mu.Unlock()
	if stopping {
		// The pod began to stop while this container was starting: stop() found nothing
		// to stop, so nothing else would end it.
		_ = syscall.Kill(proc.pid, syscall.SIGKILL)
	}
	sb.changed()
	sb.event(corev1.EventTypeNormal, "Created", "Created container %s", c.name)
	sb.event(corev1.EventTypeNormal, "Started", "Started container %s", c.name)

	probeCtx, stopProbes := context.WithCancel(sb.ctx)
	go func() {
		proc.logs.Wait()
		close(done)
	}()
	go c.lifecycle(probeCtx, &spec)

	<-proc.exited
	stopProbes()
	msg := c.terminationMessage(&spec, attempt, proc.exitCode)
	reason := "Completed"
	if proc.exitCode != 0 {
		reason = "Error"
	}
	sb.mu.Lock()
	c.proc = nil
	c.ready, c.started = false, false
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: proc.exitCode, Reason: reason, Message: msg, StartedAt: proc.startedAt,
		FinishedAt: metav1.Now(), ContainerID: id,
	}}
	sb.mu.Unlock()
	sb.changed()
	return runResult{started: true, exitCode: proc.exitCode}
}

func capped(initial, max time.Duration, n int) time.Duration {
	d := initial
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// prepare resolves the command, environment and mounts of the container.
func (c *container) prepare(pod *corev1.Pod, spec *corev1.Container, img images.Image) ([]string, containerinit.Spec, error) {
	sb := c.sb
	envList, vars, err := sb.envContext(pod).containerEnv(spec)
	if err != nil {
		return nil, containerinit.Spec{}, err
	}
	env := envList
	have := map[string]bool{}
	for k := range vars {
		have[k] = true
	}
	for _, e := range img.Env {
		if k, _, _ := strings.Cut(e, "="); !have[k] {
			env = append(env, e)
			have[k] = true
		}
	}
	host, _ := sb.hostname()
	if !have["HOSTNAME"] {
		env = append(env, "HOSTNAME="+host)
	}
	if !have["HOME"] {
		env = append(env, "HOME=/root")
	}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	expand := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = Expand(s, lookup)
		}
		return out
	}
	var argv []string
	switch {
	case len(spec.Command) > 0:
		argv = append(expand(spec.Command), expand(spec.Args)...)
	case len(spec.Args) > 0:
		argv = append(append([]string(nil), img.Entrypoint...), expand(spec.Args)...)
	default:
		argv = append(append([]string(nil), img.Entrypoint...), img.Cmd...)
	}
	if len(argv) == 0 {
		return nil, containerinit.Spec{}, errors.New("no command specified")
	}
	user, err := identity(pod, spec, img)
	if err != nil {
		return nil, containerinit.Spec{}, err
	}
	mounts, err := sb.vols.mountsFor(spec, vars)
	if err != nil {
		return nil, containerinit.Spec{}, err
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		mounted[filepath.Clean(m.Target)] = true
	}
	for _, f := range []struct{ src, dst string }{{"etc-hosts", "/etc/hosts"}, {"etc-hostname", "/etc/hostname"}, {"etc-resolv.conf", "/etc/resolv.conf"}} {
		if _, err := os.Stat(filepath.Join(sb.dir, f.src)); err != nil {
			continue
		}
		if !mounted[f.dst] {
			mounts = append(mounts, containerinit.Mount{Source: filepath.Join(sb.dir, f.src), Target: f.dst})
		}
	}
	for _, b := range img.Binds {
		mounts = append(mounts, containerinit.Mount{Source: b.Source, Target: b.Target, ReadOnly: true})
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = img.WorkingDir
	}
	netns := ""
	if n, ok := sb.network(); ok {
		netns = n.NetNSPath()
	}
	return env, containerinit.Spec{
		NetNS:         netns,
		Hostname:      host,
		Hide:          hiddenDirs(sb.p.c.cfg.Inst.Dir),
		Mounts:        mounts,
		WorkingDir:    wd,
		Args:          argv,
		Env:           env,
		RedisDefaults: img.RedisDefaults,
		Entrypoint:    entrypointOf(img),
		Lacks:         img.Lacks,
		ScratchImage:  img.Scratch,
		RootFS:        img.RootFS,
		Dirs:          img.Dirs,
		Files:         img.Files,
		User:          user,
		ReadOnlyRoot:  spec.SecurityContext != nil && spec.SecurityContext.ReadOnlyRootFilesystem != nil && *spec.SecurityContext.ReadOnlyRootFilesystem,
	}, nil
}

// entrypointOf is the image's entrypoint that containerinit emulates, if any.
func entrypointOf(img images.Image) *containerinit.Entrypoint {
	if img.Behaviour == "" || len(img.Entrypoint) == 0 {
		return nil
	}
	ep := &containerinit.Entrypoint{Path: img.Entrypoint[0], Behaviour: img.Behaviour}
	if img.Behaviour == images.DockerLibrary && len(img.Cmd) > 0 {
		// The official images' script runs the server (their CMD) as the server's user.
		ep.Server = img.Cmd[0]
		ep.ServerUser = &containerinit.User{UID: 999, GID: img.Groups[999]}
	}
	return ep
}

// hiddenDirs are the state directories of this and every other running sandbox: a
// container must not see certificates, volumes or other pods.
func hiddenDirs(own string) []string {
	dirs := []string{own}
	for _, d := range instance.RunningDirs() {
		if d != own {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func (c *container) logPath(attempt int) string {
	return filepath.Join(c.dir, fmt.Sprintf("%d.log", attempt))
}

func (c *container) terminationPath(attempt int) string {
	return filepath.Join(c.dir, fmt.Sprintf("termination-%d", attempt))
}

// start launches `sandbox container-init` in new mount, PID, UTS and IPC namespaces and
// waits until it exec'd the container's command (or failed to).
func (c *container) start(attempt int, ctr *corev1.Container, spec containerinit.Spec) (*process, error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	termPath := ctr.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	if err := os.WriteFile(c.terminationPath(attempt), nil, 0o666); err != nil {
		return nil, err
	}
	spec.Mounts = append(spec.Mounts, containerinit.Mount{Source: c.terminationPath(attempt), Target: termPath})
	spec.Scratch = filepath.Join(c.dir, fmt.Sprintf("root-%d", attempt))
	if err := os.MkdirAll(spec.Scratch, 0o700); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(filepath.Join(c.dir, fmt.Sprintf("root-%d", attempt-1)))
	_ = os.Remove(c.terminationPath(attempt - 3))
	_ = os.Remove(c.logPath(attempt - 3))
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(c.dir, "spec.json")
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(c.logPath(attempt), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		_ = outR.Close()
		_ = outW.Close()
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		_ = outR.Close()
		_ = outW.Close()
		_ = errR.Close()
		_ = errW.Close()
		return nil, err
	}
	cmd := exec.Command(c.sb.p.c.cfg.Self, "container-init", specPath)
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
	}
	startErr := cmd.Start()
	_ = outW.Close()
	_ = errW.Close()
	_ = statusW.Close()
	if startErr != nil {
		_ = logFile.Close()
		_ = outR.Close()
		_ = errR.Close()
		_ = statusR.Close()
		return nil, startErr
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, attempt: attempt, exited: make(chan struct{}), startedAt: metav1.Now()}
	lw := &logWriter{f: logFile}
	p.logs.Add(2)
	go func() { defer p.logs.Done(); lw.copy("stdout", outR) }()
	go func() { defer p.logs.Done(); lw.copy("stderr", errR) }()
	go func() { p.logs.Wait(); _ = logFile.Close() }()
	msg, _ := io.ReadAll(statusR)
	_ = statusR.Close()
	go func() {
		_ = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			p.exitCode = 128 + int32(ws.Signal())
			p.signal = ws.Signal().String()
		default:
			p.exitCode = int32(ws.ExitStatus())
		}
		close(p.exited)
	}()
	if len(msg) > 0 {
		<-p.exited
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	return p, nil
}

// terminationMessage reads what the container wrote to its terminationMessagePath, or its
// last log lines when the policy asks for that after a failure.
func (c *container) terminationMessage(spec *corev1.Container, attempt int, exitCode int32) string {
	b, _ := os.ReadFile(c.terminationPath(attempt))
	if len(b) > 4096 {
		b = b[:4096]
	}
	if len(b) == 0 && spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && exitCode != 0 {
		lines := readLogLines(c.logPath(attempt))
		if len(lines) > 80 {
			lines = lines[len(lines)-80:]
		}
		var sb strings.Builder
		for _, l := range lines {
			sb.WriteString(l.msg)
			sb.WriteByte('\n')
		}
		s := sb.String()
		if len(s) > 2048 {
			s = s[len(s)-2048:]
		}
		return s
	}
	return string(b)
}

// signal sends sig to the container's first process. SIGKILL ends the whole container: it
// is PID 1 of the container's PID namespace.
func (c *container) signal(sig syscall.Signal) error {
	c.sb.mu.Lock()
	p := c.proc
	c.sb.mu.Unlock()
	if p == nil {
		return fmt.Errorf("container %s of pod %s is not running", c.name, c.sb.key)
	}
	return syscall.Kill(p.pid, sig)
}

// stop stops the running container as the kubelet does: preStop hook, SIGTERM, and SIGKILL
// when deadline (at least 2 s after the hook) has passed.
func (c *container) stop(deadline time.Time, reason string) {
	c.sb.mu.Lock()
	p := c.proc
	spec := c.spec
	c.sb.mu.Unlock()
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		c.sb.event(corev1.EventTypeNormal, "Killing", "%s %s", reason, c.name)
		hook := spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil
		if hook {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			go func() {
				select {
				case <-p.exited:
					cancel()
				case <-ctx.Done():
				}
			}()
			if out, err := c.runHandler(ctx, spec.Lifecycle.PreStop, &spec); err != nil {
				c.sb.event(corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v %s", err, out)
			}
			cancel()
		}
		// Like the kubelet, leave a container at least 2 s after its preStop hook.
		wait := max(time.Until(deadline), 0)
		if hook && wait < 2*time.Second {
			wait = 2 * time.Second
		}
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(wait):
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	<-p.exited
}

// waitStopped kills the container if it still runs and waits for its end.
func (c *container) waitStopped(timeout time.Duration) {
	c.sb.mu.Lock()
	p := c.proc
	c.sb.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	case <-time.After(100 * time.Millisecond):
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(timeout):
	}
}

func (c *container) statusLocked() corev1.ContainerStatus {
	started := c.started
	return corev1.ContainerStatus{
		Name:                 c.name,
		State:                c.state,
		LastTerminationState: c.last,
		Ready:                c.ready,
		RestartCount:         c.restarts,
		Image:                c.spec.Image,
		ImageID:              c.imageID,
		ContainerID:          c.id,
		Started:              &started,
	}
}
