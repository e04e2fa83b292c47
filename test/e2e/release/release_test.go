//go:build release

// Package release runs a release's operator on a sandbox, as users get it: hack/release
// builds the release as `make release` does, its image layout is pushed to the sandbox's
// registry, its install.yaml is applied with only the registry changed, and the nodes pull
// the image and run the binary from its layers. Tagged release (make e2e-release): building
// a release cross-compiles every platform, too long for make e2e.
package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/sandbox/manifests"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Registry: true}, func(s *framework.Sandbox) { sb = s })
}

const (
	version = "0.0.0-e2e.1"
	// shippedRepository is the repository the release's install.yaml pins (hack/release's
	// DefaultRepository); the test swaps it for the sandbox's registry.
	shippedRepository = "ghcr.io/rediskube/redis-operator"
	operatorNS        = "redis-operator-system"
)

// buildRelease builds a release of the working tree into a temporary folder and returns it.
func buildRelease(t *testing.T) string {
	t.Helper()
	repo := sb.Repo()
	tmp := t.TempDir()
	changelog := filepath.Join(tmp, "CHANGELOG.md")
	notes := "# Changelog\n\n## [Unreleased]\n\n## [" + version + "] - 2026-12-06\n\n- An e2e release.\n"
	if err := os.WriteFile(changelog, []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "dist")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	bin := filepath.Join(repo, "bin")
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/release", "-version", version, "-root", repo, "-out", out,
		"-changelog", changelog, "-helm", filepath.Join(bin, "helm"), "-kustomize", filepath.Join(bin, "kustomize"))
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the release (make helm kustomize chart-deps first): %v\n%s", err, b)
	}
	return out
}

// The operator of a release runs from the release's image, pulled from the sandbox's
// registry: the pod reports the image by the digest install.yaml pins, and the binary in
// it is the release's version.
func TestReleaseImageRuns(t *testing.T) {
	dist := buildRelease(t)
	pushed, err := registry.PushLayout(t.Context(), filepath.Join(dist, "image"), sb.Inst.Registry, "redis-operator")
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 1 {
		t.Fatalf("pushed %q, want the release's one index", pushed)
	}
	_, digest, _ := strings.Cut(pushed[0], "@")
	install, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := shippedRepository + "@" + digest
	if n := strings.Count(string(install), shipped); n != 1 {
		t.Fatalf("install.yaml names %s %d times, want once: it must pin the pushed image", shipped, n)
	}
	local := sb.Inst.Registry + "/redis-operator@" + digest
	objs, err := manifests.Parse([]byte(strings.ReplaceAll(string(install), shipped, local)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := sb.Applier.EnsureNamespaces(ctx, objs); err != nil {
		t.Fatal(err)
	}
	if err := sb.Applier.Apply(ctx, objs, operatorNS); err != nil {
		t.Fatal(err)
	}

	pods := sb.WaitPodsReady(t, operatorNS, "app.kubernetes.io/name=redis-operator", 1, 3*time.Minute)
	pod := pods[0]
	if id := pod.Status.ContainerStatuses[0].ImageID; id != local {
		t.Errorf("the operator's image ID is %s, want %s", id, local)
	}
	logs, err := sb.Logs(ctx, operatorNS, pod.Name, "manager", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "starting") || !strings.Contains(logs, version) {
		t.Errorf("the operator's start log does not name version %s:\n%s", version, logs)
	}
	stdout, stderr, err := sb.Exec(ctx, operatorNS, pod.Name, "manager", "/redis-operator", "--version")
	if err != nil || !strings.Contains(stdout, version) {
		t.Errorf("redis-operator --version in the container: %q %q %v, want %s", stdout, stderr, err, version)
	}
}

// A tag the registry does not have leaves the container waiting on its pull, with the
// registry's answer, as a kubelet reports it.
func TestUnknownTagIsAFailedPull(t *testing.T) {
	ns := sb.Namespace(t, "unknown-tag")
	ref := sb.Inst.Registry + "/redis-operator:9.9.9"
	sb.Apply(t, ns, `apiVersion: v1
kind: Pod
metadata:
  name: unknown-tag
spec:
  containers:
    - name: c
      image: `+ref+`
`)
	sb.WaitFor(t, ns, "the pull of "+ref+" to fail", time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := sb.Kube.CoreV1().Pods(ns).Get(ctx, "unknown-tag", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "", err
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		if w == nil {
			return false, framework.DescribePod(p), nil
		}
		failed := (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, "MANIFEST_UNKNOWN")
		return failed, w.Reason + ": " + w.Message, nil
	})
}
