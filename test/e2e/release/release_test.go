//go:build release

// Package release runs a release's operator on a sandbox, as users get it: hack/release
// builds the release as `make release` does (for this machine's platform only, unless
// RELEASE_E2E_ALL_PLATFORMS=1), its image layout and charts are pushed to the sandbox's
// registry, and the operator is installed from there twice: its install.yaml applied with only
// the registry changed, and its chart installed by Helm from oci://, then upgraded to a second
// release. The nodes pull the image and run the binary from its layers. Tagged release (make
// e2e-release): a release build takes minutes, too long for make e2e.
package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/sandbox/manifests"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Registry: true}, func(s *framework.Sandbox) {
		if err := v1beta2.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		sb = s
	})
}

const (
	// version is the release TestReleaseImageRuns runs and the Helm test installs first;
	// nextVersion the one the Helm test upgrades to, built from the same tree.
	version     = "0.0.0-e2e.1"
	nextVersion = "0.0.0-e2e.2"
	// shippedRepository is the repository the release's install.yaml pins (hack/release's
	// DefaultRepository); the test swaps it for the sandbox's registry.
	shippedRepository = "ghcr.io/rediskube/redis-operator"
	// allPlatformsEnv set to 1 builds every platform, as make release does; otherwise only
	// this machine's, the one the sandbox's nodes pull: the cross-builds are most of a
	// release's build time.
	allPlatformsEnv = "RELEASE_E2E_ALL_PLATFORMS"
)

// releasePlatforms is hack/release's -platforms for the tests' builds.
func releasePlatforms() string {
	if os.Getenv(allPlatformsEnv) == "1" {
		return "all"
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

// builds are the releases built by this test binary, by version: each is built once and
// shared by the tests that run it, in the sandbox's state directory (gone with the sandbox).
var builds struct {
	sync.Mutex
	dist map[string]string
	err  map[string]error
}

// buildRelease builds a release of the working tree at version, once per test binary, and
// returns its folder (dist/ of make release).
func buildRelease(t *testing.T, v string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if builds.dist == nil {
		builds.dist, builds.err = map[string]string{}, map[string]error{}
	}
	if _, done := builds.dist[v]; !done {
		start := time.Now()
		builds.dist[v], builds.err[v] = build(t.Context(), v)
		if builds.err[v] == nil {
			t.Logf("release %s (platforms %s) built in %v", v, releasePlatforms(), time.Since(start).Round(time.Second))
		}
	}
	if err := builds.err[v]; err != nil {
		t.Fatal(err)
	}
	return builds.dist[v]
}

func build(ctx context.Context, v string) (string, error) {
	repo := sb.Repo()
	dir, err := os.MkdirTemp(sb.Dir, "release-"+v+"-")
	if err != nil {
		return "", err
	}
	changelog := filepath.Join(dir, "CHANGELOG.md")
	notes := "# Changelog\n\n## [Unreleased]\n\n## [" + v + "] - 2026-12-06\n\n- An e2e release.\n"
	if err := os.WriteFile(changelog, []byte(notes), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "dist")
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	bin := filepath.Join(repo, "bin")
	// make e2e-release installs cyclonedx-gomod (its file name carries its version) and names it.
	cyclonedx := os.Getenv("CYCLONEDX_GOMOD")
	if cyclonedx == "" {
		return "", fmt.Errorf("build release %s: CYCLONEDX_GOMOD is not set: run make e2e-release, or set it to the bin/cyclonedx-gomod-<version> that make release installs", v)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/release", "-version", v, "-root", repo, "-out", out,
		"-changelog", changelog, "-platforms", releasePlatforms(),
		"-helm", filepath.Join(bin, "helm"), "-kustomize", filepath.Join(bin, "kustomize"), "-cyclonedx-gomod", cyclonedx)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build release %s (make helm kustomize chart-deps first): %w\n%s", v, err, b)
	}
	return out, nil
}

// deleteAndWait deletes objs, last first, and waits until every one is gone, so that the next
// test installs on a cluster without them; it fails the test (without stopping it) if they
// stay.
func deleteAndWait(t *testing.T, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	background := metav1.DeletePropagationBackground
	for i := len(objs) - 1; i >= 0; i-- {
		res, err := sb.Applier.Resource(objs[i], operatorNS)
		if err == nil {
			err = res.Delete(ctx, objs[i].GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	err := sb.Poll(what+" deleted", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, o := range objs {
			res, err := sb.Applier.Resource(o, operatorNS)
			if err != nil {
				return false, "", err
			}
			_, err = res.Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil {
				return false, o.GetKind() + " " + o.GetName() + " still there", nil
			}
			if !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Error(err)
	}
}

// The operator of a release runs from the release's image, pulled from the sandbox's
// registry: the pod reports the image by the digest install.yaml pins, and the binary in
// it is the release's version.
func TestReleaseImageRuns(t *testing.T) {
	dist := buildRelease(t, version)
	pushed, err := registry.PushLayout(t.Context(), filepath.Join(dist, "image"), sb.Inst.Registry, imageRepository)
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
	local := sb.Inst.Registry + "/" + imageRepository + "@" + digest
	objs, err := manifests.Parse([]byte(strings.ReplaceAll(string(install), shipped, local)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The Helm test installs the same objects under the same names: they go at the end, the
	// CRDs too, so that it installs the chart's own.
	t.Cleanup(func() { deleteAndWait(t, "install.yaml's objects", objs) })
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
