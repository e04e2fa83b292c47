//go:build integration

package images_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
	"github.com/rediskube/redis-operator/test/sandbox/images"
)

// specEnv makes the test binary container-init, as the sandbox daemon re-executes itself.
const specEnv = "IMAGES_TEST_CONTAINER_INIT_SPEC"

func TestMain(m *testing.M) {
	if spec := os.Getenv(specEnv); spec != "" {
		containerinit.Main(spec)
	}
	os.Exit(m.Run())
}

// table is the image table over the repository's bin/, where make integration builds the
// trixie root (hack/build-server-roots.sh).
func table(t *testing.T) images.Table {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return images.Table{BinDir: bin}
}

// container starts img's default command with args through container-init, as the
// kubelet does for a container that sets only args, and returns its pid.
func container(t *testing.T, img images.Image, args ...string) int {
	t.Helper()
	var mounts []containerinit.Mount
	for _, b := range img.Binds {
		mounts = append(mounts, containerinit.Mount{Source: b.Source, Target: b.Target, ReadOnly: true})
	}
	spec := containerinit.Spec{
		Hostname:      "rootfs-test",
		Scratch:       t.TempDir(),
		RootFS:        img.RootFS,
		Mounts:        mounts,
		WorkingDir:    img.WorkingDir,
		Args:          append(append([]string(nil), img.Entrypoint...), args...),
		Env:           img.Env,
		RedisDefaults: img.RedisDefaults,
		Entrypoint: &containerinit.Entrypoint{Path: img.Entrypoint[0], Behaviour: img.Behaviour, Server: img.Cmd[0],
			ServerUser: &containerinit.User{UID: 999, GID: img.Groups[999]}},
		Lacks: img.Lacks,
		Dirs:  img.Dirs,
		Files: img.Files,
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{specEnv + "=" + specPath}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = statusW.Close()
	msg, _ := io.ReadAll(statusR)
	_ = statusR.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("container output:\n%s", out.String())
		}
	})
	if len(msg) > 0 {
		t.Fatalf("container-init: %s", msg)
	}
	return cmd.Process.Pid
}

// inContainer runs a shell script inside the container as uid 999, as an exec probe or the
// preStop hook runs there (kubelet's nsenter and setpriv).
func inContainer(t *testing.T, pid int, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(pid), "--mount", "--uts", "--ipc", "--net", "--pid",
		"--root", "--wd", "--", "setpriv", "--reuid", "999", "--regid", "999", "--clear-groups", "--",
		"/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("in the container: %s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// Redis 8.0.2 and Valkey 8.1.1 images run trixie's servers on trixie's own file system: the
// docker-entrypoint behaviour drops to uid 999, the programs are where the images have them,
// and the probes' shell and redis-cli work inside.
func TestTrixieRootImagesRunTheirServers(t *testing.T) {
	cases := []struct{ ref, field, version, server string }{
		{"redis:8.0.2", "redis_version", "8.0.2", "redis-server"},
		{"valkey/valkey:8.1.1", "valkey_version", "8.1.1", "valkey-server"},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			img, err := table(t).Resolve(tc.ref)
			if err != nil {
				t.Fatalf("%v (make integration builds the root with hack/build-server-roots.sh)", err)
			}
			port := freePort(t)
			pid := container(t, img, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
			rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
			defer func() { _ = rdb.Close() }()
			var info string
			deadline := time.Now().Add(30 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				info, err = rdb.Info(ctx, "server").Result()
				cancel()
				if err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("INFO server: %v", err)
			}
			if want := tc.field + ":" + tc.version; !strings.Contains(info, want+"\r\n") {
				t.Errorf("INFO server lacks %s:\n%s", want, info)
			}
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(status), "\nUid:\t999\t") {
				t.Errorf("the server does not run as uid 999:\n%s", status)
			}
			if got := inContainer(t, pid, ". /etc/os-release; echo $VERSION_CODENAME"); got != "trixie" {
				t.Errorf("the container's /etc/os-release names %q, want trixie", got)
			}
			if got := inContainer(t, pid, "command -v "+tc.server+"; command -v redis-cli"); got != "/usr/local/bin/"+tc.server+"\n/usr/local/bin/redis-cli" {
				t.Errorf("programs found at %q, want /usr/local/bin only", got)
			}
			if got := inContainer(t, pid, fmt.Sprintf("redis-cli -h 127.0.0.1 -p %d ping | grep -c PONG", port)); got != "1" {
				t.Errorf("redis-cli ping inside the container: %q", got)
			}
		})
	}
}
