// Package s3test runs a real S3 server for tests: versitygw (github.com/versity/versitygw), a
// maintained S3 gateway, over its posix backend in a temporary directory, on a free loopback
// port, with credentials of its own and one bucket. `make integration` installs the pinned
// binary into bin/ and names it in VERSITYGW.
package s3test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// Host is the loopback address the server listens on.
const Host = "127.0.0.1"

// Region is the region the server answers as.
const Region = "us-east-1"

// Server is a running versitygw owned by a test.
type Server struct {
	// Endpoint is "127.0.0.1:port", plain HTTP.
	Endpoint string
	// AccessKey and SecretKey are the root credentials, random for each server.
	AccessKey, SecretKey string
	// Bucket is the bucket created at start.
	Bucket string
	// Dir is the posix backend's root: each bucket a folder, each object a file.
	Dir string
	// TLS is set when the server speaks HTTPS only, with these files.
	TLS *redistest.TLSFiles

	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Options configure one server.
type Options struct {
	// Bucket is the bucket to create; "" is "backups".
	Bucket string
	// AccessKey and SecretKey are the root credentials; "": random ones.
	AccessKey, SecretKey string
	// TLS, when set, makes the server speak HTTPS only, with the certificate and key of
	// these files (issued for Host); clients verify it against their CA bundle.
	TLS *redistest.TLSFiles
}

// Binary is the versitygw executable named by VERSITYGW; the test fails, not skips, without it.
func Binary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("VERSITYGW")
	if path == "" {
		t.Fatal("VERSITYGW is not set: run make integration, or set it to the bin/versitygw-<version> it installs")
	}
	if _, err := os.Stat(path); err != nil { //nolint:gosec // the path is the test environment's own setting
		t.Fatalf("VERSITYGW: %v", err)
	}
	return path
}

// Start starts versitygw on a free loopback port over a temporary directory, waits until it
// answers, creates the bucket, and stops the server when the test ends (printing its log if
// the test failed).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	binary := Binary(t)
	s := prepare(t, opts)
	var err error
	// A free port can be taken between picking and binding it; pick again then.
	for range 5 {
		if err = s.pickPort(); err != nil {
			break
		}
		if err = s.start(binary); err == nil {
			break
		}
		if !strings.Contains(s.logTail(20), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("start versitygw: %v\n%s", err, s.logTail(40))
	}
	s.makeBucket(t)
	return s
}

// Reserve is a server as Start makes it, endpoint, credentials and bucket included, that is
// not started: nothing listens on its port (free when picked) until Run. A test points a
// client at a store that is not there yet with it.
func Reserve(t testing.TB, opts Options) *Server {
	t.Helper()
	Binary(t)
	s := prepare(t, opts)
	if err := s.pickPort(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Run starts a server Reserve made on its endpoint, waits until it answers and creates the
// bucket.
func (s *Server) Run(t testing.TB) {
	t.Helper()
	if err := s.start(Binary(t)); err != nil {
		t.Fatalf("start versitygw: %v\n%s", err, s.logTail(40))
	}
	s.makeBucket(t)
}

// Stop stops the server now, as a store that goes away; Run starts it again, with its data.
func (s *Server) Stop() { s.stop() }

// prepare is a server's settings and directory, and its cleanup, before it starts.
func prepare(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{
		AccessKey: "test-" + randomHex(t, 8),
		SecretKey: randomHex(t, 20),
		Bucket:    opts.Bucket,
		Dir:       filepath.Join(t.TempDir(), "data"),
		TLS:       opts.TLS,
	}
	if s.Bucket == "" {
		s.Bucket = "backups"
	}
	if opts.AccessKey != "" && opts.SecretKey != "" {
		s.AccessKey, s.SecretKey = opts.AccessKey, opts.SecretKey
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatalf("s3 server directory: %v", err)
	}
	s.logPath = filepath.Join(filepath.Dir(s.Dir), "versitygw.log")
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("log of versitygw %s:\n%s", s.Endpoint, s.logTail(40))
		}
	})
	return s
}

// makeBucket creates the server's bucket unless it has it (a server started again).
func (s *Server) makeBucket(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, err := s.Client(t).BucketExists(ctx, s.Bucket); err == nil && ok {
		return
	}
	if err := s.Client(t).MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("create bucket %s: %v\n%s", s.Bucket, err, s.logTail(40))
	}
}

// pickPort sets the endpoint to a free loopback port.
func (s *Server) pickPort() error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pick a free port: %w", err)
	}
	s.Endpoint = net.JoinHostPort(Host, strconv.Itoa(port))
	return nil
}

// Client is a minio client of the server with its root credentials, for tests to look at
// what was stored independently of the code under test.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
	}
	if s.TLS != nil {
		cfg, err := s.TLS.ClientConfig()
		if err != nil {
			t.Fatalf("s3 client TLS: %v", err)
		}
		transport, err := minio.DefaultTransport(true)
		if err != nil {
			t.Fatalf("s3 client transport: %v", err)
		}
		transport.TLSClientConfig = cfg
		opts.Secure, opts.Transport = true, transport
	}
	c, err := minio.New(s.Endpoint, opts)
	if err != nil {
		t.Fatalf("s3 client: %v", err)
	}
	return c
}

// URL is the server's endpoint as an http (or, with TLS, https) URL.
func (s *Server) URL() string {
	if s.TLS != nil {
		return "https://" + s.Endpoint
	}
	return "http://" + s.Endpoint
}

func (s *Server) start(binary string) error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// The child holds its own descriptor of the log.
	defer func() { _ = logFile.Close() }()
	// The credentials go in the environment, not the arguments, where any process could read them.
	args := []string{"--port", s.Endpoint, "--region", Region, "--quiet"}
	if s.TLS != nil {
		args = append(args, "--cert", s.TLS.CertPath(), "--key", s.TLS.KeyPath())
	}
	args = append(args, "posix", s.Dir)
	cmd := exec.Command(binary, args...) //nolint:noctx,gosec // the server lives until the test ends; the binary is the test's own
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("versitygw on %s exited: %v", s.Endpoint, cmd.ProcessState)
		default:
		}
		if s.answers() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("versitygw on %s did not answer within 30s", s.Endpoint)
}

// answers reports whether the server replies to HTTP at all (an unsigned request is refused,
// which is an answer).
func (s *Server) answers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/", nil)
	if err != nil {
		return false
	}
	// Only whether it answers: the tests verify the certificate with their clients.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a readiness probe of the test's own server
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

func (s *Server) stop() {
	if s.exited == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *Server) logTail(n int) string {
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

func freePort() (int, error) {
	// No caller's context to honour: the listener only reserves a port for a moment.
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", net.JoinHostPort(Host, "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random: %v", err)
	}
	return hex.EncodeToString(b)
}
