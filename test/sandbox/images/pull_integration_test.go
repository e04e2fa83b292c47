//go:build integration

package images_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
	"github.com/rediskube/redis-operator/test/sandbox/images"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

// probe is the program of the test image: it reports what a container of the image sees.
const probe = `package main

import (
	"fmt"
	"os"
)

func main() {
	wd, _ := os.Getwd()
	_, proc := os.Stat("/proc/self/status")
	_, host := os.Stat("/usr/bin/redis-server")
	fmt.Printf("uid=%d gid=%d wd=%s foo=%s args=%q proc=%v host-redis=%v\n", os.Getuid(), os.Getgid(), wd,
		os.Getenv("FOO"), os.Args[1:], proc == nil, host == nil)
}
`

// buildProbe compiles probe as a static binary, as the release builds the operator.
func buildProbe(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", "probe", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// probeImage is a one-layer image as the release's: the binary, /etc/passwd and /etc/group.
func probeImage(t *testing.T, bin []byte) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\napp:x:1234:1235:app:/work:/sbin/nologin\n")},
		{"etc/group", 0o644, []byte("root:x:0:\napp:x:1235:\n")},
		{"probe", 0o755, bin},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/probe"}, Cmd: []string{"hello"}, User: "app", WorkingDir: "/work", Env: []string{"FOO=bar"}}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// An image pulled from the sandbox's registry runs its own binary on its own file system:
// the config's user, working directory, environment and command, a /proc of its own, and
// none of the host's programs.
func TestPulledImageRunsFromItsLayers(t *testing.T) {
	reg, err := registry.Start(t.Context(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop(t.Context()) })
	tag, err := name.ParseReference(reg.Addr + "/probe:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, probeImage(t, buildProbe(t)), remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	tbl := images.Table{BinDir: t.TempDir(), Registry: reg.Addr, Pulled: t.TempDir()}
	img, err := tbl.Resolve(tag.String())
	if err != nil {
		t.Fatal(err)
	}
	spec := containerinit.Spec{
		Hostname:   "pull-test",
		Scratch:    t.TempDir(),
		RootFS:     img.RootFS,
		WorkingDir: img.WorkingDir,
		Args:       append(append([]string(nil), img.Entrypoint...), img.Cmd...),
		Env:        img.Env,
		User:       &containerinit.User{UID: img.User.UID, GID: img.User.GID},
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
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = []string{specEnv + "=" + specPath}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = statusW.Close()
	msg, _ := io.ReadAll(statusR)
	_ = statusR.Close()
	if err := cmd.Wait(); err != nil || len(msg) > 0 {
		t.Fatalf("container: %v %s\n%s", err, msg, out.String())
	}
	want := `uid=1234 gid=1235 wd=/work foo=bar args=["hello"] proc=true host-redis=false`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("the container reports\n%s\nwant\n%s", got, want)
	}
}
