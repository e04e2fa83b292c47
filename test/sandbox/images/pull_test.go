package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

type entry struct {
	name, link string
	typ        byte
	mode       int64
	uid        int
	data       string
}

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Mode: e.mode, Uid: e.uid, Gid: e.uid, Size: int64(len(e.data))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func image(t *testing.T, arch string, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", arch, cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func startRegistry(t *testing.T) string {
	t.Helper()
	r, err := registry.Start(t.Context(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return r.Addr
}

// otherArch is a platform the machine is not: its image must never be the one that runs.
func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// An image pushed to the sandbox's registry as a multi-arch index runs as its layers and
// config say: this machine's platform, the upper layer's deletions applied, links kept
// inside the root, the USER's names looked up in the image's own passwd and group.
func TestPullFromTheRegistry(t *testing.T) {
	addr := startRegistry(t)
	base := layer(t,
		entry{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "etc/passwd", mode: 0o644, data: "root:x:0:0:root:/root:/sbin/nologin\napp:x:1234:1235:app:/home/app:/sbin/nologin\n"},
		entry{name: "etc/group", mode: 0o644, data: "root:x:0:\nstaff:x:50:\n"},
		entry{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "usr/bin/hello", mode: 0o755, data: "the program"},
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"},
		entry{name: "hello", typ: tar.TypeLink, link: "usr/bin/hello"},
		entry{name: "old", mode: 0o644, data: "deleted by the next layer"},
		entry{name: "home/app/", typ: tar.TypeDir, mode: 0o700, uid: 1234},
	)
	upper := layer(t, entry{name: ".wh.old", mode: 0o644})
	cfg := v1.Config{Entrypoint: []string{"/hello"}, Cmd: []string{"--version"}, User: "app:staff", Env: []string{"FOO=bar"}, WorkingDir: "/home/app"}
	mine := image(t, runtime.GOARCH, cfg, base, upper)
	other := image(t, otherArch(), v1.Config{Entrypoint: []string{"/wrong"}}, layer(t, entry{name: "wrong", mode: 0o755, data: "x"}))
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch()}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	tag, err := name.ParseReference(addr + "/redis-operator:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}

	tbl := Table{BinDir: t.TempDir(), Registry: addr, Pulled: t.TempDir()}
	img, err := tbl.Resolve(tag.String())
	if err != nil {
		t.Fatal(err)
	}
	if img.Kind != Operator || !reflect.DeepEqual(img.Entrypoint, cfg.Entrypoint) || !reflect.DeepEqual(img.Cmd, cfg.Cmd) ||
		img.WorkingDir != "/home/app" || len(img.Binds) != 0 || img.Scratch {
		t.Errorf("image %+v, want the config's entrypoint, command and working directory and nothing bound", img)
	}
	if !reflect.DeepEqual(img.User, &User{UID: 1234, GID: 50}) || img.Groups[1234] != 1235 {
		t.Errorf("user %+v groups %v, want 1234:50 (app:staff) and app's primary group 1235", img.User, img.Groups)
	}
	if !reflect.DeepEqual(img.Env, []string{"FOO=bar", defaultPath}) {
		t.Errorf("env %q, want the config's and the default PATH", img.Env)
	}
	if want := addr + "/redis-operator@" + idxDigest.String(); img.ID != want {
		t.Errorf("ID %s, want the index's digest %s", img.ID, want)
	}
	root := img.RootFS
	if b, err := os.ReadFile(filepath.Join(root, "hello")); err != nil || string(b) != "the program" {
		t.Errorf("/hello: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(root, "bin")); err != nil || l != "usr/bin" {
		t.Errorf("/bin -> %q %v, want usr/bin", l, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/bin/hello")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("/usr/bin/hello: %v %v, want mode 0755", fi, err)
	}
	for _, gone := range []string{"old", "wrong"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s: %v, want absent", gone, err)
		}
	}
	if os.Geteuid() == 0 {
		if fi, err := os.Stat(filepath.Join(root, "home/app")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 1234 {
			t.Errorf("/home/app: %v, want owned by 1234", err)
		}
	}

	// The ID pins the same image, from the same unpacked root.
	pinned, err := tbl.Resolve(img.ID)
	if err != nil || pinned.RootFS != root || pinned.ID != img.ID {
		t.Errorf("Resolve(%s) = %+v %v, want the root %s", img.ID, pinned, err, root)
	}
	entries, err := os.ReadDir(tbl.Pulled)
	if err != nil || len(entries) != 1 {
		t.Errorf("image cache %v %v, want one unpacked image", entries, err)
	}
}

// What the registry does not have is a failed pull with the registry's own words.
func TestPullUnknown(t *testing.T) {
	addr := startRegistry(t)
	tbl := Table{BinDir: t.TempDir(), Registry: addr, Pulled: t.TempDir()}
	for _, ref := range []string{addr + "/redis-operator:9.9.9",
		addr + "/redis-operator@sha256:" + strings.Repeat("0", 64)} {
		_, err := tbl.Resolve(ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "MANIFEST_UNKNOWN") {
			t.Errorf("Resolve(%s) = %v, want a NotFoundError with MANIFEST_UNKNOWN", ref, err)
		}
	}
	// An index without this machine's platform cannot run here.
	other := image(t, otherArch(), v1.Config{Entrypoint: []string{"/x"}}, layer(t, entry{name: "x", mode: 0o755, data: "x"}))
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch()}}})
	tag, err := name.ParseReference(addr + "/foreign:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	var nf *NotFoundError
	if _, err := tbl.Resolve(tag.String()); !errors.As(err, &nf) {
		t.Errorf("Resolve of an image for %s only: %v, want a NotFoundError", otherArch(), err)
	}
}

// An image's links cannot lead its files out of its root.
func TestUntarStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, entries := range [][]entry{
		{{name: "escape", typ: tar.TypeSymlink, link: outside}, {name: "escape/file", mode: 0o644, data: "x"}},
		{{name: "../file", mode: 0o644, data: "x"}},
		{{name: "hard", typ: tar.TypeLink, link: "../../etc/passwd"}},
	} {
		rc, err := layer(t, entries...).Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		if err := untar(rc, t.TempDir()); err == nil {
			t.Errorf("untar of %+v: no error", entries)
		}
		if _, err := os.Stat(filepath.Join(outside, "file")); err == nil {
			t.Fatalf("untar of %+v wrote outside its root", entries)
		}
	}
}
