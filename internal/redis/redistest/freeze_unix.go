//go:build unix

package redistest

import (
	"syscall"
	"testing"
)

// Freeze stops the process with SIGSTOP: it keeps its sockets open but answers nothing and
// acknowledges no replication, as a node on a hung host would. Thaw resumes it; the test's
// cleanup thaws it in any case, so that Stop can end it.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if !s.Running() {
		t.Fatalf("freeze %s %s: not running", s.kind(), s.Addr())
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze %s %s: %v", s.kind(), s.Addr(), err)
	}
	// Cleanups run last-registered first: this one before the Stop registered at launch.
	process := s.cmd.Process
	t.Cleanup(func() { _ = process.Signal(syscall.SIGCONT) })
}

// Thaw resumes a process stopped by Freeze.
func (s *Server) Thaw(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("thaw %s %s: %v", s.kind(), s.Addr(), err)
	}
}
