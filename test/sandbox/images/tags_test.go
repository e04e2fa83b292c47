package images

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// fakeRoots is a roots folder with a built trixie root laid out as Debian's packages lay it
// out (the servers are links to the check programs).
func fakeRoots(t *testing.T) string {
	t.Helper()
	roots := t.TempDir()
	bin := filepath.Join(roots, "trixie", "usr", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"redis-check-rdb", "redis-check-aof", "redis-cli", "redis-benchmark",
		"valkey-check-rdb", "valkey-check-aof", "valkey-cli", "valkey-benchmark"} {
		if err := os.WriteFile(filepath.Join(bin, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"redis-server": "redis-check-rdb", "redis-sentinel": "redis-check-rdb",
		"valkey-server": "valkey-check-rdb", "valkey-sentinel": "valkey-check-rdb"} {
		if err := os.Symlink(to, filepath.Join(bin, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(roots, "trixie", rootStamp), []byte("built\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return roots
}

// The official images' tags run the server of their release: Redis 6/7 and Valkey 7.2/8.0 on
// the host's packages as before, Redis 8 and Valkey 8.1 from the trixie root, with the
// programs where the images have them.
func TestOfficialTags(t *testing.T) {
	host := fakeHost(t)
	roots := fakeRoots(t)
	trixie := filepath.Join(roots, "trixie")
	tbl := Table{BinDir: t.TempDir(), HostBin: host, Roots: roots}
	cases := map[string]string{
		// Every reference the repository's manifests, tests and docs use keeps the host.
		"redis:7.0.15": "", "redis:7": "", "redis:7.0": "", "redis:7.2": "", "redis:7.4": "", "redis:7.4.2": "",
		"registry.example/redis:7.4.2": "", "localhost:5000/redis:7": "", "docker.io/library/redis:7.2-alpine": "",
		"redis:7.2-alpine": "", "redis:7.0-bookworm": "", "redis:6.2.2": "", "myorg/redis:custom": "",
		"valkey/valkey:8.0.1": "", "valkey/valkey:8.0": "", "valkey/valkey:7.2": "", "docker.io/valkey/valkey:8.0.1-alpine": "",
		// Redis 8 and Valkey 8.1, and the floating tags whose images are those today.
		"redis:8.0.2": trixie, "redis:8.0": trixie, "redis:8": trixie, "redis:8.0.2-bookworm": trixie, "docker.io/library/redis:8.0.2": trixie,
		"redis:8.0-alpine3.21": trixie, "redis:8.2.1": trixie, "redis:latest": trixie, "redis": trixie, "redis:alpine": trixie,
		"valkey/valkey:8.1.1": trixie, "valkey/valkey:8.1": trixie, "valkey/valkey:8": trixie, "valkey/valkey": trixie,
		"valkey/valkey:latest": trixie, "valkey/valkey:8.1.1-bookworm": trixie, "valkey/valkey:8.1-alpine": trixie,
	}
	for ref, wantRoot := range cases {
		img, err := tbl.Resolve(ref)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		if img.RootFS != wantRoot || img.Kind != Redis || img.Behaviour != DockerLibrary || img.WorkingDir != "/data" {
			t.Errorf("%s: root %q kind %s behaviour %q wd %q, want root %q, the docker-library image", ref, img.RootFS, img.Kind,
				img.Behaviour, img.WorkingDir, wantRoot)
		}
		server := "redis-server"
		if strings.Contains(ref, "valkey") {
			server = "valkey-server"
		}
		if len(img.Cmd) != 1 || img.Cmd[0] != server {
			t.Errorf("%s: cmd %q, want %s", ref, img.Cmd, server)
		}
		from := host
		if wantRoot != "" {
			from = filepath.Join(trixie, "usr", "bin")
		}
		for _, b := range img.Binds {
			if filepath.Dir(b.Source) != from || filepath.Dir(b.Target) != "/usr/local/bin" {
				t.Errorf("%s: %s bound from %s, want from %s", ref, b.Target, b.Source, from)
			}
		}
		// The packages' /usr/bin programs are not where the official images have them.
		if len(img.Lacks) == 0 {
			t.Errorf("%s: lacks nothing: the packages' own programs show through", ref)
		}
	}
	img, err := tbl.Resolve("valkey/valkey:8.1.1")
	if err != nil {
		t.Fatal(err)
	}
	if got := targets(img.Binds); got["/usr/local/bin/valkey-server"] != "valkey-check-rdb" ||
		got["/usr/local/bin/redis-cli"] != "valkey-cli" || got["/usr/local/bin/redis-server"] != "valkey-check-rdb" {
		t.Errorf("valkey/valkey:8.1.1 programs %v", got)
	}
	r8, _ := tbl.Resolve("redis:8.0.2")
	r7, _ := tbl.Resolve("redis:7.0.15")
	if r8.ID == r7.ID {
		t.Errorf("redis:8.0.2 and redis:7.0.15 report one image ID %s", r8.ID)
	}
}

// Tags and digests no release has are refused as a registry refuses them; releases the
// sandbox has no server for are refused with that reason, never run on another server.
func TestOfficialTagsRefused(t *testing.T) {
	tbl := Table{BinDir: t.TempDir(), HostBin: fakeHost(t), Roots: fakeRoots(t)}
	unknown := []string{"redis:6.9.9", "redis:7.0.16", "redis:8.0.99", "redis:9", "redis:8.0.2-foo", "redis:nonsense",
		"redis:v7.0.15", "valkey/valkey:9.9", "valkey/valkey:8.2.0", "valkey/valkey:7.2.3", "valkey/valkey:6",
		"redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	for _, ref := range unknown {
		_, err := tbl.Resolve(ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "manifest unknown") {
			t.Errorf("Resolve(%q) = %v, want a NotFoundError reading manifest unknown", ref, err)
		}
	}
	for _, ref := range []string{"redis:5.0.14", "redis:6.0-alpine", "valkey/valkey:9.0.0"} {
		_, err := tbl.Resolve(ref)
		var nf *NotFoundError
		if ref == "redis:6.0-alpine" {
			if err != nil {
				t.Errorf("Resolve(%q) = %v, want the host's Redis", ref, err)
			}
			continue
		}
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "no ") || strings.Contains(nf.Reason, "manifest unknown") {
			t.Errorf("Resolve(%q) = %v, want a NotFoundError saying the sandbox has no server for it", ref, err)
		}
	}
	// Without a built root, its images cannot be pulled: the reason says how to build it.
	bare := Table{BinDir: t.TempDir(), HostBin: fakeHost(t), Roots: t.TempDir()}
	for _, ref := range []string{"redis:8.0.2", "valkey/valkey:8.1.1"} {
		_, err := bare.Resolve(ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "build-server-roots.sh") {
			t.Errorf("Resolve(%q) without the trixie root = %v, want a NotFoundError naming hack/build-server-roots.sh", ref, err)
		}
	}
	if img, err := bare.Resolve("redis:7.0.15"); err != nil || img.RootFS != "" {
		t.Errorf("redis:7.0.15 without the trixie root: %+v %v", img, err)
	}
}

// A root's program that links out of the root is not bound: it would run the host's file.
func TestRootLinkStaysInRoot(t *testing.T) {
	roots := fakeRoots(t)
	link := filepath.Join(roots, "trixie", "usr", "bin", "redis-cli")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/true", link); err != nil {
		t.Fatal(err)
	}
	_, err := Table{BinDir: t.TempDir(), HostBin: fakeHost(t), Roots: roots}.Resolve("redis:8.0.2")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "out of its root") {
		t.Errorf("redis:8.0.2 with redis-cli linking to the host: %v, want refused", err)
	}
}

// versitygwTable is a table whose bin/ holds the versitygw the Makefile builds.
func versitygwTable(t *testing.T) Table {
	t.Helper()
	tbl := Table{BinDir: t.TempDir(), HostBin: fakeHost(t)}
	if err := os.WriteFile(tbl.VersitygwBinary(), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// versity/versitygw runs the versitygw built into bin/ for its release's tag, latest and no
// tag, from any registry, as the image has it: root, the entrypoint script emulated, the
// gateway at /usr/local/bin/versitygw and no Redis program.
func TestVersitygwTags(t *testing.T) {
	tbl := versitygwTable(t)
	for _, ref := range []string{"versity/versitygw:" + VersitygwVersion, "docker.io/versity/versitygw:" + VersitygwVersion,
		"versity/versitygw:latest", "versity/versitygw", "registry.example:5000/versity/versitygw:" + VersitygwVersion} {
		img, err := tbl.Resolve(ref)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		if img.Kind != ObjectStore || img.Behaviour != Versitygw || img.User != nil || img.Scratch ||
			!reflect.DeepEqual(img.Entrypoint, []string{"/usr/local/bin/docker-entrypoint.sh"}) || len(img.Cmd) != 0 {
			t.Errorf("%s: kind %s behaviour %q user %+v scratch %v entrypoint %q cmd %q, want the versitygw image", ref, img.Kind,
				img.Behaviour, img.User, img.Scratch, img.Entrypoint, img.Cmd)
		}
		if want := []Bind{{Source: tbl.VersitygwBinary(), Target: "/usr/local/bin/versitygw"}}; !reflect.DeepEqual(img.Binds, want) {
			t.Errorf("%s: binds %+v, want %+v", ref, img.Binds, want)
		}
		if !reflect.DeepEqual(img.Lacks, hostServerBinaries) {
			t.Errorf("%s: lacks %q: the host's Redis programs must not show through", ref, img.Lacks)
		}
		// Its image ID resolves to the same image, as every other's does.
		pinned, err := tbl.Resolve(img.ID)
		if err != nil || pinned.Kind != ObjectStore || pinned.ID != img.ID {
			t.Errorf("%s: its ID %s resolves to %+v %v", ref, img.ID, pinned, err)
		}
	}
}

// Tags no release has, and digests the sandbox never reported, are refused as the registry
// refuses them; an older release is refused because the sandbox has no build of it; and
// without the binary the reason says how to build it.
func TestVersitygwTagsRefused(t *testing.T) {
	tbl := versitygwTable(t)
	for _, ref := range []string{"versity/versitygw:v99.0.0", "versity/versitygw:v1.8.1", "versity/versitygw:1.8",
		"versity/versitygw:nonsense", "versity/versitygw:v1.8.0-alpine",
		"versity/versitygw@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		_, err := tbl.Resolve(ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "manifest unknown") {
			t.Errorf("Resolve(%q) = %v, want a NotFoundError reading manifest unknown", ref, err)
		}
	}
	for _, ref := range []string{"versity/versitygw:v1.7.0", "versity/versitygw:v1.0.0"} {
		_, err := tbl.Resolve(ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "no versitygw") || strings.Contains(nf.Reason, "manifest unknown") {
			t.Errorf("Resolve(%q) = %v, want a NotFoundError saying the sandbox has no build of it", ref, err)
		}
	}
	bare := Table{BinDir: t.TempDir(), HostBin: fakeHost(t)}
	_, err := bare.Resolve("versity/versitygw:" + VersitygwVersion)
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "make versitygw") {
		t.Errorf("versitygw not built: %v, want a NotFoundError naming make versitygw", err)
	}
}

// The version the table runs is the one the Makefile builds: bin/ has no other.
func TestVersitygwVersionIsTheMakefiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSITYGW_VERSION\s*:?=\s*(\S+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Makefile sets no VERSITYGW_VERSION")
	}
	if string(m[1]) != VersitygwVersion {
		t.Errorf("the Makefile builds versitygw %s, the image table runs %s: change VersitygwVersion with it", m[1], VersitygwVersion)
	}
}
