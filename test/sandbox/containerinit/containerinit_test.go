package containerinit

import (
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

func TestRedisDefaults(t *testing.T) {
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
		{[]string{"--port", "7000"}, []string{"redis-server", "--port", "7000", "--protected-mode", "no"}},
		{[]string{withSetting}, []string{"redis-server", withSetting}},
		{[]string{"redis-server", without}, []string{"redis-server", without, "--protected-mode", "no"}},
		{[]string{"redis-server", "--protected-mode", "yes"}, []string{"redis-server", "--protected-mode", "yes"}},
		{[]string{"sh", "-c", "redis-server"}, []string{"sh", "-c", "redis-server"}},
	}
	for _, tc := range cases {
		if got := redisDefaults(append([]string(nil), tc.in...)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("redisDefaults(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
