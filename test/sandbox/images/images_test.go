package images

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRepository(t *testing.T) {
	cases := map[string]string{
		"redis":                                  "redis",
		"redis:7.0":                              "redis",
		"docker.io/library/redis:7.2-alpine":     "redis",
		"quay.io/opstree/redis:v7.0.15":          "redis",
		"localhost:5000/redis-operator:dev":      "redis-operator",
		"oliver006/redis_exporter@sha256:abcdef": "redis_exporter",
		"Busybox":                                "busybox",
	}
	for ref, want := range cases {
		if got := Repository(ref); got != want {
			t.Errorf("Repository(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	bin := t.TempDir()
	tbl := Table{BinDir: bin}
	notFound := func(ref string) {
		t.Helper()
		var nf *NotFoundError
		if _, err := tbl.Resolve(ref); !errors.As(err, &nf) {
			t.Errorf("Resolve(%q) = %v, want NotFoundError", ref, err)
		}
	}
	img, err := tbl.Resolve("quay.io/opstree/redis:v7.0.15")
	if err != nil || img.Kind != Redis || img.WorkingDir != "/data" || !img.RedisDefaults || img.Cmd[0] != "redis-server" {
		t.Errorf("redis image: %+v %v", img, err)
	}
	if img, err := tbl.Resolve("busybox:1.36"); err != nil || img.Kind != Tools {
		t.Errorf("busybox: %+v %v", img, err)
	}
	notFound("nginx:latest")
	notFound("redis-operator:dev")
	saved := debianExporter
	t.Cleanup(func() { debianExporter = saved })
	debianExporter = filepath.Join(bin, "not-installed")
	notFound("quay.io/opstree/redis-exporter:v1.44.0")

	// Debian's package, when no redis_exporter is built into bin/.
	debianExporter = filepath.Join(t.TempDir(), "prometheus-redis-exporter")
	if err := os.WriteFile(debianExporter, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err = tbl.Resolve("quay.io/opstree/redis-exporter:v1.44.0")
	if err != nil || img.Kind != Exporter || img.Entrypoint[0] != "/redis_exporter" || img.Binds[0].Source != debianExporter {
		t.Errorf("exporter image from the Debian package: %+v %v", img, err)
	}
	if err := os.WriteFile(filepath.Join(bin, "redis_exporter"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if img, err := tbl.Resolve("oliver006/redis_exporter:v1.62.0"); err != nil || img.Binds[0].Source != filepath.Join(bin, "redis_exporter") {
		t.Errorf("exporter image built into bin/: %+v %v", img, err)
	}

	if err := os.WriteFile(filepath.Join(bin, "redis-operator"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err = tbl.Resolve("redis-operator:dev")
	if err != nil || img.Kind != Operator || img.Entrypoint[0] != "/manager" || len(img.Binds) != 2 {
		t.Errorf("operator image once built: %+v %v", img, err)
	}
}

// The image ID a container status reports is a digest-pinned reference that resolves to the
// same image, as a real kubelet's does (the operator restarts an exporter by pinning it).
func TestImageIDResolvesToTheSameImage(t *testing.T) {
	table := Table{BinDir: t.TempDir()}
	img, err := table.Resolve("quay.io/opstree/redis:v7.0.15")
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := table.Resolve(img.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pinned.Kind != img.Kind || pinned.ID != img.ID {
		t.Errorf("%s resolves to %s/%s, want %s/%s", img.ID, pinned.Kind, pinned.ID, img.Kind, img.ID)
	}
}
