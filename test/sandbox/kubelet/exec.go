package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	utilexec "k8s.io/utils/exec"
)

// command builds a process that runs argv inside the container: in its mount (and root),
// PID, network, UTS and IPC namespaces, with the container's environment, as `kubectl exec`
// and exec probes expect.
func (c *container) command(ctx context.Context, argv []string) (*exec.Cmd, error) {
	c.sb.mu.Lock()
	p := c.proc
	env := append([]string(nil), c.env...)
	user := c.user
	c.sb.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("container %s of pod %s is not running", c.name, c.sb.key)
	}
	if len(argv) == 0 {
		return nil, errors.New("no command given")
	}
	args := append([]string{"--target", strconv.Itoa(p.pid), "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd"},
		runAs(user, argv)...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = env
	// Stop waiting for stdin once the command exited: an interactive client may never
	// close it.
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

// execCapture runs argv in the container and returns its combined output.
func (c *container) execCapture(ctx context.Context, argv []string) (string, error) {
	cmd, err := c.command(ctx, argv)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	s := out.String()
	if len(s) > 10*1024 {
		s = s[:10*1024]
	}
	return s, err
}

// exec serves `kubectl exec`, with or without a terminal.
func (c *container) exec(ctx context.Context, argv []string, attach api.AttachIO) error {
	cmd, err := c.command(ctx, argv)
	if err != nil {
		return err
	}
	if attach.TTY() {
		f, err := pty.Start(cmd)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		go func() {
			for size := range attach.Resize() {
				_ = pty.Setsize(f, &pty.Winsize{Rows: size.Height, Cols: size.Width})
			}
		}()
		if in := attach.Stdin(); in != nil {
			go func() { _, _ = io.Copy(f, in) }()
		}
		if out := attach.Stdout(); out != nil {
			_, _ = io.Copy(out, f)
		}
		return exitError(cmd.Wait())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if in := attach.Stdin(); in != nil {
		cmd.Stdin = in
	}
	if out := attach.Stdout(); out != nil {
		cmd.Stdout = out
	}
	if e := attach.Stderr(); e != nil {
		cmd.Stderr = e
	}
	return exitError(cmd.Run())
}

// exitError gives the API server the command's exit code.
func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 128
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code += int(ws.Signal())
			}
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}
