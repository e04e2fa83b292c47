package images

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestPathAndRepository(t *testing.T) {
	cases := map[string][2]string{
		"redis":                                  {"redis", "redis"},
		"redis:7.0":                              {"redis", "redis"},
		"docker.io/library/redis:7.2-alpine":     {"redis", "redis"},
		"quay.io/opstree/redis:v7.0.15":          {"opstree/redis", "redis"},
		"localhost:5000/redis-operator:dev":      {"redis-operator", "redis-operator"},
		"oliver006/redis_exporter@sha256:abcdef": {"oliver006/redis_exporter", "redis_exporter"},
		"Busybox":                                {"busybox", "busybox"},
		"docker.io/bitnami/redis:7.2.5":          {"bitnami/redis", "redis"},
		"valkey/valkey:8.0":                      {"valkey/valkey", "valkey"},
	}
	for ref, want := range cases {
		if got := Path(ref); got != want[0] {
			t.Errorf("Path(%q) = %q, want %q", ref, got, want[0])
		}
		if got := Repository(ref); got != want[1] {
			t.Errorf("Repository(%q) = %q, want %q", ref, got, want[1])
		}
	}
}

// fakeHost is a host bin directory laid out as Debian's packages lay it out: the servers are
// links to the check program, which picks its mode by the name it is started under.
func fakeHost(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"redis-check-rdb", "redis-check-aof", "redis-cli", "redis-benchmark",
		"valkey-check-rdb", "valkey-check-aof", "valkey-cli", "valkey-benchmark", "prometheus-redis-exporter"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"redis-server": "redis-check-rdb", "redis-sentinel": "redis-check-rdb", "valkey-server": "valkey-check-rdb"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func targets(binds []Bind) map[string]string {
	out := map[string]string{}
	for _, b := range binds {
		out[b.Target] = filepath.Base(b.Source)
	}
	return out
}

// Each image family as shared/reference/images.md states it: entrypoint, command, user,
// working directory, and which programs it has where.
func TestImageTable(t *testing.T) {
	host := fakeHost(t)
	tbl := Table{BinDir: t.TempDir(), HostBin: host}
	cases := []struct {
		ref        string
		entrypoint []string
		cmd        []string
		user       *User
		workingDir string
		behaviour  string
		binds      map[string]string
		scratch    bool
	}{
		{ref: "redis:7.0.15", entrypoint: []string{"docker-entrypoint.sh"}, cmd: []string{"redis-server"}, workingDir: "/data",
			behaviour: DockerLibrary, binds: map[string]string{
				"/usr/local/bin/redis-server": "redis-check-rdb", "/usr/local/bin/redis-sentinel": "redis-check-rdb",
				"/usr/local/bin/redis-cli": "redis-cli", "/usr/local/bin/redis-check-aof": "redis-check-aof",
				"/usr/local/bin/redis-check-rdb": "redis-check-rdb", "/usr/local/bin/redis-benchmark": "redis-benchmark"}},
		{ref: "valkey/valkey:8.0.1", entrypoint: []string{"docker-entrypoint.sh"}, cmd: []string{"valkey-server"}, workingDir: "/data",
			behaviour: DockerLibrary, binds: map[string]string{
				"/usr/local/bin/valkey-server": "valkey-check-rdb", "/usr/local/bin/valkey-sentinel": "valkey-check-rdb",
				"/usr/local/bin/valkey-cli": "valkey-cli", "/usr/local/bin/valkey-check-aof": "valkey-check-aof",
				"/usr/local/bin/valkey-check-rdb": "valkey-check-rdb", "/usr/local/bin/valkey-benchmark": "valkey-benchmark",
				"/usr/local/bin/redis-server": "valkey-check-rdb", "/usr/local/bin/redis-sentinel": "valkey-check-rdb",
				"/usr/local/bin/redis-cli": "valkey-cli"}},
		{ref: "quay.io/opstree/redis:v7.0.15", entrypoint: []string{"/usr/bin/entrypoint.sh"}, user: &User{UID: 1000, GID: 0},
			behaviour: OpstreeRedis, binds: map[string]string{
				"/usr/local/bin/redis-server": "redis-check-rdb", "/usr/local/bin/redis-cli": "redis-cli"}},
		{ref: "quay.io/opstree/redis-sentinel:v7.0.15", entrypoint: []string{"/usr/bin/entrypoint-sentinel.sh"}, user: &User{UID: 1000, GID: 0},
			behaviour: OpstreeSentinel, binds: map[string]string{
				"/usr/local/bin/redis-sentinel": "redis-check-rdb", "/usr/local/bin/redis-cli": "redis-cli"}},
		{ref: "bitnami/redis:7.2", entrypoint: []string{"/opt/bitnami/scripts/redis/entrypoint.sh"},
			cmd: []string{"/opt/bitnami/scripts/redis/run.sh"}, user: &User{UID: 1001, GID: 0}, behaviour: Bitnami,
			binds: map[string]string{
				"/opt/bitnami/redis/bin/redis-server": "redis-check-rdb", "/opt/bitnami/redis/bin/redis-sentinel": "redis-check-rdb",
				"/opt/bitnami/redis/bin/redis-cli": "redis-cli"}},
		{ref: "quay.io/opstree/redis-exporter:v1.44.0", entrypoint: []string{"/usr/local/bin/redis_exporter"}, scratch: true,
			binds: map[string]string{"/usr/local/bin/redis_exporter": "prometheus-redis-exporter"}},
		{ref: "oliver006/redis_exporter:v1.62.0", entrypoint: []string{"/redis_exporter"}, scratch: true,
			binds: map[string]string{"/redis_exporter": "prometheus-redis-exporter"}},
	}
	for _, tc := range cases {
		img, err := tbl.Resolve(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if !reflect.DeepEqual(img.Entrypoint, tc.entrypoint) || !reflect.DeepEqual(img.Cmd, tc.cmd) {
			t.Errorf("%s: entrypoint %q cmd %q, want %q %q", tc.ref, img.Entrypoint, img.Cmd, tc.entrypoint, tc.cmd)
		}
		if !reflect.DeepEqual(img.User, tc.user) || img.WorkingDir != tc.workingDir || img.Behaviour != tc.behaviour || img.Scratch != tc.scratch {
			t.Errorf("%s: user %+v wd %q behaviour %q scratch %v, want %+v %q %q %v", tc.ref, img.User, img.WorkingDir,
				img.Behaviour, img.Scratch, tc.user, tc.workingDir, tc.behaviour, tc.scratch)
		}
		if got := targets(img.Binds); !reflect.DeepEqual(got, tc.binds) {
			t.Errorf("%s: programs %v, want %v", tc.ref, got, tc.binds)
		}
		if img.Kind == Redis && !reflect.DeepEqual(img.Lacks, hostServerBinaries) {
			t.Errorf("%s: lacks %q: the host's own server programs must not show through", tc.ref, img.Lacks)
		}
	}
	// The opstree images give group 0 the directories their scripts write.
	img, _ := tbl.Resolve("quay.io/opstree/redis:v7.0.15")
	for _, d := range img.Dirs {
		if d.GID != 0 || d.Mode&0o020 == 0 {
			t.Errorf("opstree redis directory %s: gid %d mode %v, want group 0 writable", d.Path, d.GID, d.Mode)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	bin := t.TempDir()
	empty := t.TempDir()
	tbl := Table{BinDir: bin, HostBin: empty}
	for _, ref := range []string{"nginx:latest", "redis-operator:dev", "quay.io/opstree/redis-exporter:v1.44.0", "redis:7", "valkey/valkey:8"} {
		var nf *NotFoundError
		if _, err := tbl.Resolve(ref); !errors.As(err, &nf) {
			t.Errorf("Resolve(%q) with nothing installed = %v, want NotFoundError", ref, err)
		}
	}
	for _, f := range []string{"redis_exporter", "redis-operator"} {
		if err := os.WriteFile(filepath.Join(bin, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if img, err := tbl.Resolve("oliver006/redis_exporter:v1.62.0"); err != nil || img.Binds[0].Source != filepath.Join(bin, "redis_exporter") {
		t.Errorf("exporter image built into bin/: %+v %v", img, err)
	}
	img, err := tbl.Resolve("redis-operator:dev")
	if err != nil || img.Kind != Operator || img.Entrypoint[0] != "/manager" || len(img.Binds) != 2 {
		t.Errorf("operator image once built: %+v %v", img, err)
	}
	if img, err := tbl.Resolve("busybox:1.36"); err != nil || img.Kind != Tools {
		t.Errorf("busybox: %+v %v", img, err)
	}
}

// The image ID a container status reports is a digest-pinned reference that resolves to the
// same image, as a real kubelet's does (the operator restarts an exporter by pinning it).
func TestImageIDResolvesToTheSameImage(t *testing.T) {
	table := Table{BinDir: t.TempDir(), HostBin: fakeHost(t), Roots: fakeRoots(t)}
	for _, ref := range []string{"quay.io/opstree/redis:v7.0.15", "redis:7.0.15", "quay.io/opstree/redis-exporter:v1.44.0",
		"valkey/valkey:8", "valkey/valkey:8.0.1", "redis:8.0.2"} {
		img, err := table.Resolve(ref)
		if err != nil {
			t.Fatal(err)
		}
		pinned, err := table.Resolve(img.ID)
		if err != nil {
			t.Fatal(err)
		}
		if pinned.Kind != img.Kind || pinned.ID != img.ID || pinned.Behaviour != img.Behaviour || pinned.RootFS != img.RootFS {
			t.Errorf("%s resolves to %s/%s/%s, want %s/%s/%s", img.ID, pinned.Kind, pinned.ID, pinned.Behaviour, img.Kind, img.ID, img.Behaviour)
		}
	}
}
