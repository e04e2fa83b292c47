// Package redistest runs real redis-server processes (and sentinels) on loopback for tests, and forms
// clusters of them with the operator's own client.
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Host is the address test servers listen on unless ServerOptions.Host says otherwise.
const Host = "127.0.0.1"

// ServerOptions configure one redis-server.
type ServerOptions struct {
	// Host is the loopback address to listen on: Host ("127.0.0.1") when empty, or "::1".
	Host string
	// Cluster enables cluster mode with a 2s node timeout.
	Cluster bool
	// Password sets requirepass and masterauth.
	Password string
	// Config adds redis.conf lines ("maxmemory 10mb").
	Config []string
	// TLS, when set, makes the server serve TLS only (port 0, tls-port), with replication and
	// the cluster bus over TLS, from these files.
	TLS *TLSFiles
	// Binary is the server executable (a valkey-server); "" finds redis-server on PATH.
	Binary string
	// RDB, when set, is a file copied into the server's directory as dump.rdb before it first
	// starts, which it then loads (appendonly stays off).
	RDB string
}

// Server is a running redis-server owned by a test.
type Server struct {
	Host    string
	Port    int
	BusPort int // cluster bus port, 0 outside cluster mode
	Dir     string

	opts     ServerOptions
	sentinel *SentinelOptions // set when the process runs in sentinel mode
	started  bool             // answered once; a sentinel then owns its config file
	binary   string
	logPath  string
	// clientTLS is how the operator's client verifies this server: the CA bundle the server
	// started with, the server's certificate as client certificate. Nil without TLS.
	clientTLS *tls.Config
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Endpoint is how the operator's client reaches this server with the given credentials, over
// TLS verified against the CA bundle the server started with when it serves TLS.
func (s *Server) Endpoint(auth redis.Auth) redis.Endpoint {
	return redis.NewEndpoint(s.Host, s.Port, auth).WithTLS(s.clientTLS)
}

// Binary finds redis-server on PATH and fails the test, not skips it, when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (%v): run `make test`, which installs it "+
			"(apt-get install -y redis-server redis-tools)", err)
	}
	return path
}

// StartServer starts a redis-server on free loopback ports in a temporary directory,
// waits until it answers, and stops it when the test ends. Its log is printed if the test fails.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	host := opts.Host
	if host == "" {
		host = Host
	}
	binary := opts.Binary
	if binary == "" {
		binary = Binary(t)
	}
	s := &Server{Host: host, Dir: t.TempDir(), opts: opts, binary: binary}
	if opts.RDB != "" {
		data, err := os.ReadFile(opts.RDB)
		if err != nil {
			t.Fatalf("read the RDB to load: %v", err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "dump.rdb"), data, 0o600); err != nil {
			t.Fatalf("write dump.rdb: %v", err)
		}
	}
	s.launch(t)
	return s
}

// launch starts s for the first time and ties its life to the test's.
func (s *Server) launch(t testing.TB) {
	t.Helper()
	s.logPath = filepath.Join(s.Dir, "redis.log")
	if f := s.tlsFiles(); f != nil {
		var err error
		if s.clientTLS, err = f.ClientConfig(); err != nil {
			t.Fatalf("TLS settings for the client: %v", err)
		}
	}
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("log of %s %s:\n%s", s.kind(), s.Addr(), s.LogTail(40))
		}
	})
	var err error
	// A free port can be taken between picking and binding it; pick again then.
	for attempt := 0; attempt < 5; attempt++ {
		s.Port, s.BusPort, err = freePorts(s.Host, s.opts.Cluster)
		if err != nil {
			t.Fatalf("pick free ports: %v", err)
		}
		if err = s.start(); err == nil {
			return
		}
		if !strings.Contains(s.LogTail(20), "Address already in use") {
			break
		}
	}
	t.Fatalf("start %s: %v\n%s", s.kind(), err, s.LogTail(40))
}

func (s *Server) kind() string {
	if s.sentinel != nil {
		return "redis-sentinel"
	}
	return "redis-server"
}

// StartServers starts n servers with the same options.
func StartServers(t testing.TB, n int, opts ServerOptions) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = StartServer(t, opts)
	}
	return servers
}

func freePorts(host string, withBus bool) (port, busPort int, err error) {
	pick := func() (int, net.Listener, error) {
		// No caller's context to honour: the listener only reserves a port for a moment.
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, nil, err
		}
		return l.Addr().(*net.TCPAddr).Port, l, nil
	}
	port, l1, err := pick()
	if err != nil {
		return 0, 0, err
	}
	// Closing only frees the port for redis-server; an error changes nothing.
	defer func() { _ = l1.Close() }()
	if !withBus {
		return port, 0, nil
	}
	busPort, l2, err := pick()
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = l2.Close() }()
	return port, busPort, nil
}

func (s *Server) config() string {
	if s.sentinel != nil {
		return s.sentinelConfig()
	}
	lines := []string{
		"bind " + s.Host,
		"dir " + s.Dir,
		"daemonize no",
		`logfile ""`,
		`save ""`,
		"appendonly no",
		"dbfilename dump.rdb",
		"repl-diskless-sync-delay 0",
	}
	lines = append(lines, s.portLines(s.opts.TLS)...)
	if s.opts.TLS != nil {
		lines = append(lines, "tls-replication yes")
		if s.opts.Cluster {
			lines = append(lines, "tls-cluster yes")
		}
	}
	if s.opts.Cluster {
		lines = append(lines,
			"cluster-enabled yes",
			"cluster-config-file "+filepath.Join(s.Dir, "nodes.conf"),
			"cluster-port "+strconv.Itoa(s.BusPort),
			"cluster-node-timeout 2000",
		)
	}
	if s.opts.Password != "" {
		lines = append(lines, "requirepass "+s.opts.Password, "masterauth "+s.opts.Password)
	}
	lines = append(lines, s.opts.Config...)
	return strings.Join(lines, "\n") + "\n"
}

func (s *Server) start() error {
	confPath := filepath.Join(s.Dir, "redis.conf")
	args := []string{confPath}
	if s.sentinel != nil {
		args = append(args, "--sentinel")
	}
	// A sentinel rewrites its config with what it learned (other sentinels, epochs); a
	// restart must keep that, as a pod's persistent config would.
	if s.sentinel == nil || !s.started {
		if err := os.WriteFile(confPath, []byte(s.config()), 0o600); err != nil {
			return err
		}
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// The child holds its own descriptor of the log.
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(s.binary, args...) //nolint:noctx // the server lives until Stop or Kill, not until a context ends
	cmd.Dir = s.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.exited)

	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("%s on port %d exited: %v", s.kind(), s.Port, cmd.ProcessState)
		default:
		}
		if s.answers() {
			s.started = true
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("%s did not answer PING within 15s", s.kind())
}

// portLines are the listening lines: the port, or with TLS no plain port, the TLS port and
// the files.
func (s *Server) portLines(f *TLSFiles) []string {
	if f == nil {
		return []string{"port " + strconv.Itoa(s.Port)}
	}
	return []string{
		"port 0",
		"tls-port " + strconv.Itoa(s.Port),
		"tls-cert-file " + f.CertPath(),
		"tls-key-file " + f.KeyPath(),
		"tls-ca-cert-file " + f.CAPath(),
		"tls-auth-clients optional",
	}
}

// tlsFiles are the server's TLS files, nil without TLS.
func (s *Server) tlsFiles() *TLSFiles {
	if s.sentinel != nil {
		return s.sentinel.TLS
	}
	return s.opts.TLS
}

// answers reports whether the server replies to PING, or refuses it for lack of a password.
func (s *Server) answers() bool {
	var conn net.Conn
	var err error
	if s.tlsFiles() != nil {
		// Only whether it answers: the tests verify certificates with the operator's client.
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}}
		conn, err = dialer.DialContext(context.Background(), "tcp", s.Addr())
	} else {
		conn, err = (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", s.Addr())
	}
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 10s). It keeps the directory, so
// Restart brings the same node back.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if !s.Running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Logf("%s %s ignored SIGTERM for 10s; killing it", s.kind(), s.Addr())
		s.kill()
	}
}

// Kill stops the server abruptly, as a crashed pod would.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.kill()
}

func (s *Server) kill() {
	if !s.Running() {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts a stopped server again on the same ports and directory; a cluster node
// comes back with its nodes.conf.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.Running() {
		t.Fatalf("restart %s %s: still running", s.kind(), s.Addr())
	}
	if err := s.start(); err != nil {
		t.Fatalf("restart %s %s: %v\n%s", s.kind(), s.Addr(), err, s.LogTail(40))
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
