package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes redis-server die with the test binary, even when it is killed
// before its cleanups run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
