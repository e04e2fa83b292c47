package containerinit

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestResolveInRoot(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "run"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "var"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "opt/real"), 0o755))
	must(os.Symlink("/run", filepath.Join(root, "var/run")))        // absolute: must stay in root
	must(os.Symlink("../opt/real", filepath.Join(root, "var/rel"))) // relative
	must(os.Symlink("/../../..", filepath.Join(root, "escape")))    // cannot leave root
	cases := map[string]string{
		"/var/run/secrets/x": "/run/secrets/x",
		"/var/rel/file":      "/opt/real/file",
		"/escape/etc":        "/etc",
		"/data":              "/data",
		"/a/../b":            "/b",
	}
	for in, want := range cases {
		if got := resolveInRoot(root, in); got != filepath.Join(root, want) {
			t.Errorf("resolveInRoot(%q) = %q, want %q", in, got, filepath.Join(root, want))
		}
	}
}

func TestProtectedModeOff(t *testing.T) {
	dir := t.TempDir()
	withSetting := filepath.Join(dir, "with.conf")
	without := filepath.Join(dir, "without.conf")
	if err := os.WriteFile(withSetting, []byte("# protected-mode is documented here\nprotected-mode yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(without, []byte("# protected-mode yes\nport 6379\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want []string }{
		{[]string{"redis-server"}, []string{"redis-server", "--protected-mode", "no"}},
		{[]string{"valkey-server", "--port", "7000"}, []string{"valkey-server", "--port", "7000", "--protected-mode", "no"}},
		{[]string{"redis-server", withSetting}, []string{"redis-server", withSetting}},
		{[]string{"/usr/local/bin/redis-server", without}, []string{"/usr/local/bin/redis-server", without, "--protected-mode", "no"}},
		{[]string{"redis-server", "--protected-mode", "yes"}, []string{"redis-server", "--protected-mode", "yes"}},
		{[]string{"sh", "-c", "redis-server"}, []string{"sh", "-c", "redis-server"}},
	}
	for _, tc := range cases {
		if got := protectedModeOff(append([]string(nil), tc.in...)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("protectedModeOff(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The official images' entrypoint: flags or a .conf run the server, which drops to uid 999
// when started as root; anything else runs as given, as the container's user.
func TestDockerLibraryEntrypoint(t *testing.T) {
	ep := &Entrypoint{Path: "docker-entrypoint.sh", Behaviour: dockerLibrary, Server: "valkey-server", ServerUser: &User{UID: 999, GID: 999}}
	t.Chdir(t.TempDir())
	cases := []struct {
		in       []string
		user     *User
		want     []string
		wantUser *User
	}{
		{[]string{"docker-entrypoint.sh", "valkey-server"}, nil, []string{"valkey-server"}, &User{UID: 999, GID: 999}},
		{[]string{"docker-entrypoint.sh", "/etc/valkey/valkey.conf"}, nil, []string{"valkey-server", "/etc/valkey/valkey.conf"}, &User{UID: 999, GID: 999}},
		{[]string{"docker-entrypoint.sh", "--port", "7000"}, &User{UID: 0}, []string{"valkey-server", "--port", "7000"}, &User{UID: 999, GID: 999}},
		{[]string{"docker-entrypoint.sh", "valkey-server"}, &User{UID: 1000, GID: 1000}, []string{"valkey-server"}, &User{UID: 1000, GID: 1000}},
		{[]string{"docker-entrypoint.sh", "redis-server"}, nil, []string{"redis-server"}, nil},
		{[]string{"docker-entrypoint.sh", "sh", "-c", "id"}, nil, []string{"sh", "-c", "id"}, nil},
	}
	for _, tc := range cases {
		got, user, err := ep.beforeUser(tc.in, tc.user)
		if err != nil || !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(user, tc.wantUser) {
			t.Errorf("beforeUser(%q, %+v) = %q %+v %v, want %q %+v", tc.in, tc.user, got, user, err, tc.want, tc.wantUser)
		}
	}
}

// The opstree images' entrypoints drop their arguments: Redis runs on /etc/redis/redis.conf
// (appended to from the environment where the user may write it), the sentinel on the file
// it writes from its environment, which without any variable watches 0.0.0.0.
func TestOpstreeEntrypoints(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/redis"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, opstreeRedisConf), []byte("port 6379\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	redis := &Entrypoint{Path: "/usr/bin/entrypoint.sh", Behaviour: opstreeRedis, root: root}
	args, _, _ := redis.beforeUser([]string{"/usr/bin/entrypoint.sh", "redis-server", "/etc/redis/ours.conf", "--cluster-announce-ip", "10.0.0.1"}, nil)
	got, err := redis.afterUser(args, []string{"REDIS_PASSWORD=pw", "SETUP_MODE=cluster"})
	if err != nil || !reflect.DeepEqual(got, []string{"redis-server", opstreeRedisConf}) {
		t.Errorf("opstree redis runs %q (%v), want redis-server %s without the arguments", got, err, opstreeRedisConf)
	}
	b, _ := os.ReadFile(filepath.Join(root, opstreeRedisConf))
	if want := "port 6379\nrequirepass pw\nmasterauth pw\ncluster-enabled yes\ncluster-config-file /node-conf/nodes.conf\n"; string(b) != want {
		t.Errorf("opstree redis.conf = %q, want %q", b, want)
	}

	sentinel := &Entrypoint{Path: "/usr/bin/entrypoint-sentinel.sh", Behaviour: opstreeSentinel, root: root}
	got, err = sentinel.afterUser([]string{"redis-server", "/data/sentinel.conf", "--sentinel"}, nil)
	if err != nil || !reflect.DeepEqual(got, []string{"redis-sentinel", opstreeSentinelConf}) {
		t.Errorf("opstree sentinel runs %q (%v)", got, err)
	}
	b, _ = os.ReadFile(filepath.Join(root, opstreeSentinelConf))
	if want := "port 26379\nsentinel monitor mymaster 0.0.0.0 6379 2\n"; string(b) != want {
		t.Errorf("opstree sentinel.conf = %q, want %q", b, want)
	}
	if _, err := sentinel.afterUser(nil, []string{"MASTER_GROUP_NAME=g", "IP=10.1.2.3", "QUORUM=1"}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(root, opstreeSentinelConf))
	if want := "port 26379\nsentinel monitor g 10.1.2.3 6379 1\n"; string(b) != want {
		t.Errorf("opstree sentinel.conf from its environment = %q, want %q", b, want)
	}
}

func TestBitnamiEntrypoint(t *testing.T) {
	ep := &Entrypoint{Path: "/opt/bitnami/scripts/redis/entrypoint.sh", Behaviour: bitnami}
	args, _, _ := ep.beforeUser([]string{ep.Path, bitnamiRunScript}, nil)
	var exit *exitError
	if _, err := ep.afterUser(args, nil); !errors.As(err, &exit) || exit.code != 1 {
		t.Errorf("run.sh without a password: %v, want exit 1", err)
	}
	got, err := ep.afterUser(args, []string{"REDIS_PASSWORD=pw"})
	if want := []string{"redis-server", bitnamiRedisConf, "--requirepass", "pw", "--masterauth", "pw"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("run.sh with a password = %q %v, want %q", got, err, want)
	}
	args, _, _ = ep.beforeUser([]string{ep.Path, "redis-server", "/etc/redis/redis.conf"}, nil)
	if got, err := ep.afterUser(args, nil); err != nil || !reflect.DeepEqual(got, []string{"redis-server", "/etc/redis/redis.conf"}) {
		t.Errorf("bitnami with arguments runs %q %v, want them as given", got, err)
	}
}

// The versitygw image's entrypoint runs the gateway with the container's arguments, or with
// arguments made of its VGW_* variables, and exits 1 with neither.
func TestVersitygwEntrypoint(t *testing.T) {
	ep := &Entrypoint{Path: "/usr/local/bin/docker-entrypoint.sh", Behaviour: versitygw}
	args, user, err := ep.beforeUser([]string{ep.Path, "--port", ":8333", "posix", "/data"}, &User{UID: 10001, GID: 10001})
	if err != nil || user == nil || user.UID != 10001 {
		t.Fatalf("beforeUser: %q %+v %v, want the container's own user", args, user, err)
	}
	got, err := ep.afterUser(args, []string{"ROOT_ACCESS_KEY=a"})
	if want := []string{versitygwBinary, "--port", ":8333", "posix", "/data"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("with arguments: %q %v, want %q", got, err, want)
	}
	got, err = ep.afterUser(nil, []string{"VGW_BACKEND=posix", "VGW_ARGS=--port :8333  --quiet", "VGW_BACKEND_ARG=/data",
		"VGW_BACKEND_ARGS=--nometa"})
	if want := []string{versitygwBinary, "--port", ":8333", "--quiet", "posix", "/data", "--nometa"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("from the environment: %q %v, want %q", got, err, want)
	}
	for _, env := range [][]string{nil, {"VGW_BACKEND=ceph"}} {
		var exit *exitError
		if _, err := ep.afterUser(nil, env); !errors.As(err, &exit) || exit.code != 1 {
			t.Errorf("no arguments, environment %q: %v, want exit 1", env, err)
		}
	}
}
