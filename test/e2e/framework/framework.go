// Package framework runs end-to-end tests against a sandbox: one sandbox per test binary,
// started in TestMain (its own slot, so it never collides with `make sandbox` or another
// test binary), taken down with `sandbox down` at the end, which must leave nothing behind.
// Helpers apply manifests, wait on conditions with failure messages that carry the events,
// pod statuses and logs of the namespace, exec into containers and open Redis connections
// to pod IPs.
package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/test/sandbox/cleanup"
	"github.com/rediskube/redis-operator/test/sandbox/controlplane"
	"github.com/rediskube/redis-operator/test/sandbox/fault"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/manifests"
)

// Options configure the sandbox of a test binary.
type Options struct {
	// Nodes is the number of virtual nodes (default 3).
	Nodes int
	// Operator installs the CRDs and RBAC and deploys the operator (bin/redis-operator,
	// config/default) and fails the start when it is not ready.
	Operator bool
	// VolumeRefresh is how often the kubelets re-render pods' Secret and ConfigMap volumes
	// (default 2 s: a kubelet takes up to a minute; tests that depend on it wait for it).
	VolumeRefresh time.Duration
	// Registry runs the sandbox's OCI registry (Inst.Registry): images pushed there run
	// from their own layers.
	Registry bool
}

// Sandbox is a running sandbox and clients for it.
type Sandbox struct {
	Dir    string
	Inst   instance.Instance
	Status *fault.Status
	// Config is an admin REST config.
	Config *rest.Config
	Kube   kubernetes.Interface
	// Client is a controller-runtime client; add API types to Scheme before using them.
	Client client.Client
	Scheme *k8sruntime.Scheme
	// Fault injects faults (crash containers, stop nodes, cut pods off the network).
	Fault   *fault.Client
	Applier *manifests.Applier

	repo    string
	bin     string
	tempBin string
}

// Main starts the sandbox, hands it to use, runs the tests, takes the sandbox down and
// fails the test binary if the sandbox does not start or leaves anything behind.
func Main(m *testing.M, opts Options, use func(*Sandbox)) {
	os.Exit(run(m, opts, use))
}

func run(m *testing.M, opts Options, use func(*Sandbox)) int {
	start := time.Now()
	sb, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the sandbox did not start:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: sandbox slot %d in %s ready after %.1f s\n", sb.Inst.Slot, sb.Dir, time.Since(start).Seconds())
	use(sb)
	code := m.Run()
	if err := sb.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: sandbox down:", err)
		code = 1
	}
	return code
}

// RepoRoot finds the repository root from the working directory. The test module's go.mod
// (module github.com/rediskube/redis-operator/test) does not match: the name must end the line.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/rediskube/redis-operator\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of github.com/rediskube/redis-operator) not found")
		}
		dir = parent
	}
}

// Start builds the sandbox binary, starts a sandbox in a fresh state directory on a free
// slot and waits until it is ready. The sandbox stops by itself if the test binary dies.
func Start(opts Options) (*Sandbox, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the sandbox needs root (network and mount namespaces): run the e2e tests as root")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	repo, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	// bin/ also holds the operator binary the operator image maps to; KUBEBUILDER_ASSETS
	// is the fallback for the control plane.
	bin := filepath.Join(repo, "bin")
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); controlplane.CheckBinaries(bin) != nil && assets != "" {
		bin = assets
	}
	if err := controlplane.CheckBinaries(bin); err != nil {
		return nil, err
	}
	if opts.Operator {
		if err := checkOperatorFresh(repo, filepath.Join(bin, "redis-operator")); err != nil {
			return nil, err
		}
	}
	if out, err := exec.Command(filepath.Join(repo, "hack", "install-packages.sh")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hack/install-packages.sh: %w\n%s", err, out)
	}
	// The root file system of the redis:8 and valkey/valkey:8.1 images, where the daemon's
	// image table looks for it (instant once built).
	if out, err := exec.Command(filepath.Join(repo, "hack", "build-server-roots.sh"), filepath.Join(bin, "roots")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hack/build-server-roots.sh: %w\n%s", err, out)
	}
	// The versitygw the image versity/versitygw runs (the backup tests' S3 store), built by
	// the Makefile's own target into the bin/ the image table reads (instant once built).
	if out, err := exec.Command("make", "--no-print-directory", "-C", repo, "versitygw", "BIN="+bin).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make versitygw: %w\n%s", err, out)
	}
	tempBin, err := os.MkdirTemp("", "rediskube-sandbox-bin-")
	if err != nil {
		return nil, err
	}
	s := &Sandbox{repo: repo, bin: bin, tempBin: tempBin}
	exe := filepath.Join(tempBin, "sandbox")
	if err := sandboxBinary(repo, exe); err != nil {
		_ = os.RemoveAll(tempBin)
		return nil, err
	}
	if s.Dir, err = os.MkdirTemp("", "rediskube-e2e-"); err != nil {
		return nil, err
	}
	// E2E_SANDBOX_SLOT picks the slot (make bench passes SANDBOX_SLOT when it is set), so that
	// a measurement runs where the user says; otherwise the first free one.
	slot := "auto"
	if chosen := os.Getenv("E2E_SANDBOX_SLOT"); chosen != "" {
		slot = chosen
	}
	args := []string{"up", "--dir", s.Dir, "--slot", slot, "--nodes", strconv.Itoa(opts.Nodes), "--bin", bin,
		"--repo", repo, "--exit-with-pid", strconv.Itoa(os.Getpid()), "--timeout", "3m"}
	if opts.VolumeRefresh <= 0 {
		opts.VolumeRefresh = 2 * time.Second
	}
	args = append(args, "--volume-refresh", opts.VolumeRefresh.String())
	if opts.Registry {
		args = append(args, "--registry")
	}
	if opts.Operator {
		args = append(args, "--require-operator")
	} else {
		args = append(args, "--no-apply")
	}
	up := exec.Command(exe, args...)
	if out, err := up.CombinedOutput(); err != nil {
		s.cleanupAfterFailedStart()
		return nil, fmt.Errorf("sandbox up: %w\n%s", err, out)
	}
	if err := s.connect(); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// sandboxBinary puts the sandbox command at exe: a copy of E2E_SANDBOX_BIN when the make
// targets built it once for all their packages (linking it takes seconds per package), else
// built here. E2E_SANDBOX_BUILD_FLAGS="-race" always builds it, with the race detector.
func sandboxBinary(repo, exe string) error {
	flags := strings.Fields(os.Getenv("E2E_SANDBOX_BUILD_FLAGS"))
	if built := os.Getenv("E2E_SANDBOX_BIN"); built != "" && len(flags) == 0 {
		// A copy: a make sandbox-bin while the tests run must not replace the running command.
		return copyExecutable(built, exe)
	}
	// The sandbox is a command of the test module (test/go.mod), not of the operator's.
	build := exec.Command(goTool(), append(append([]string{"build"}, flags...), "-o", exe, "./cmd/sandbox")...)
	build.Dir = filepath.Join(repo, "test")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the sandbox: %w\n%s", err, out)
	}
	return nil
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("the sandbox command E2E_SANDBOX_BIN: %w", err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copy the sandbox command: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy the sandbox command: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy the sandbox command: %w", err)
	}
	return nil
}

// checkOperatorFresh refuses an operator binary older than any Go source it is built from: the
// sandbox deploys the binary as it finds it, and `go test` does not rebuild it (make e2e and
// make test do), so a test run by hand would otherwise exercise yesterday's operator.
func checkOperatorFresh(repo, binary string) error {
	built, err := os.Stat(binary)
	if err != nil {
		return fmt.Errorf("the operator binary: %w (run make build)", err)
	}
	var newer string
	for _, dir := range []string{"api", "cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || newer != "" || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.ModTime().After(built.ModTime()) {
				newer = path
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if newer != "" {
		return fmt.Errorf("%s is older than %s: run make build, or the sandbox runs an operator without your change", binary, newer)
	}
	return nil
}

// goTool is the go command running the tests (go test puts its GOROOT/bin first in PATH).
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if _, err := os.Stat(filepath.Join(root, "bin", "go")); err == nil {
			return filepath.Join(root, "bin", "go")
		}
	}
	return "go"
}

func (s *Sandbox) cleanupAfterFailedStart() {
	if inst, err := instance.Load(s.Dir); err == nil {
		_ = cleanup.Down(inst, cleanup.Options{KeepDir: true})
	}
	_ = os.RemoveAll(s.tempBin)
}

func (s *Sandbox) connect() error {
	var err error
	if s.Inst, err = instance.Load(s.Dir); err != nil {
		return err
	}
	s.Fault = fault.New(s.Inst.ControlSocket())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.Status, err = s.Fault.Status(ctx); err != nil {
		return err
	}
	if s.Config, err = controlplane.RESTConfig(s.Inst); err != nil {
		return err
	}
	if s.Kube, err = kubernetes.NewForConfig(s.Config); err != nil {
		return err
	}
	s.Scheme = k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s.Scheme); err != nil {
		return err
	}
	// The tests' client logs nothing worth reading; without a logger controller-runtime
	// prints a stack trace saying it has none.
	ctrllog.SetLogger(logr.Discard())
	if s.Client, err = client.New(s.Config, client.Options{Scheme: s.Scheme}); err != nil {
		return err
	}
	s.Applier, err = manifests.NewApplier(s.Config)
	return err
}

// Stop takes the sandbox down with `sandbox down` and fails when anything is left: a
// process, a network namespace, a link, a route, a mount, the cgroup or the state
// directory. It also fails when the sandbox daemon logged a panic or a data race.
func (s *Sandbox) Stop() error {
	defer func() { _ = os.RemoveAll(s.tempBin) }()
	out, err := exec.Command(filepath.Join(s.tempBin, "sandbox"), "down", "--keep-dir", "--dir", s.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	var errs []error
	logPath := filepath.Join(s.Inst.LogDir(), "sandbox.log")
	if log, err := os.ReadFile(logPath); err == nil {
		for _, bad := range []string{"WARNING: DATA RACE", "panic: ", "fatal error: "} {
			if i := bytes.Index(log, []byte(bad)); i >= 0 {
				end := min(len(log), i+4000)
				errs = append(errs, fmt.Errorf("the sandbox daemon logged %q:\n%s", bad, log[i:end]))
			}
		}
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		errs = append(errs, err)
	}
	if left := cleanup.Leftovers(s.Inst, false); len(left) > 0 {
		errs = append(errs, fmt.Errorf("sandbox down left behind: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// Binary is the sandbox executable the test binary built.
func (s *Sandbox) Binary() string { return filepath.Join(s.tempBin, "sandbox") }

// Repo is the repository root.
func (s *Sandbox) Repo() string { return s.repo }

// Bin is the directory of the control-plane binaries (kubectl among them).
func (s *Sandbox) Bin() string { return s.bin }

// VolumeRefresh is how often the running sandbox's kubelets re-render Secret and ConfigMap
// volumes: the longest a pod's file lags behind its API object.
func (s *Sandbox) VolumeRefresh() time.Duration {
	return time.Duration(s.Status.VolumeRefreshSeconds * float64(time.Second))
}
