package release

// This file has no build tag: the helm arguments of the install-and-upgrade test (tag release)
// are checked against the chart here, without a sandbox, by rendering the chart pulled from an
// in-process registry with exactly those arguments. A value name the chart does not have fails
// its values.schema.json, so a typo shows here rather than after a release build.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

const (
	// operatorNS is the namespace the release's install.yaml installs into, and the one the
	// operator chart is installed into (the README's `helm install ... -n redis-operator-system`).
	operatorNS = "redis-operator-system"
	// imageRepository is the repository the release's image layout is pushed to on the
	// sandbox's registry.
	imageRepository = "redis-operator"
	// chartsPrefix is where the release's charts are pushed on the registry, as `sandbox push
	// --charts` and `make sandbox-push` put them.
	chartsPrefix = "charts"
	// helmRelease is the Helm release name of the operator chart.
	helmRelease = "redis-operator"
)

// operatorChartArgs are the arguments, after `helm install` or `helm upgrade`, that install the
// operator chart of release version from the registry at addr (plain HTTP, on loopback) with
// the release's image pushed there: the chart's image is redisOperator.imageName:imageTag,
// and the tag, left empty, is the chart's appVersion, which hack/release sets to the release's
// version, the tag the image layout carries. The requests are the helm e2e's: the chart's
// 500m/500Mi would crowd the sandbox's nodes during the upgrade's surge, when two operator pods
// run. Everything else is the chart's default, as a user gets it.
func operatorChartArgs(addr, version string) []string {
	return []string{helmRelease, "oci://" + addr + "/" + chartsPrefix + "/redis-operator", "--version", version, "--plain-http",
		"--namespace", operatorNS,
		"--set", "redisOperator.imageName=" + addr + "/" + imageRepository,
		"--set", "resources.requests.cpu=50m", "--set", "resources.requests.memory=64Mi"}
}

// helmInstallArgs: `helm install` of the operator chart of version, the namespace made by Helm.
func helmInstallArgs(addr, version string) []string {
	return append(append([]string{"install"}, operatorChartArgs(addr, version)...), "--create-namespace")
}

// helmUpgradeArgs: `helm upgrade` to version with the same values as the install (given again,
// so Helm does not reuse or reset anything behind the test's back).
func helmUpgradeArgs(addr, version string) []string {
	return append([]string{"upgrade"}, operatorChartArgs(addr, version)...)
}

// The install and upgrade arguments render the operator chart pulled from a registry: the
// version's chart, in the operator namespace, running the image pushed under the version's tag
// on that registry, with the requests asked for.
func TestHelmArgsRenderTheChartFromTheRegistry(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helmBin := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helmBin); err != nil {
		t.Fatalf("%v (run make helm)", err)
	}
	home := t.TempDir()
	helm := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), helmBin, args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	r, err := registry.Start(t.Context(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	charts := t.TempDir()
	versions := []string{"0.0.0-e2e.1", "0.0.0-e2e.2"}
	for _, v := range versions {
		// As hack/release packages it.
		helm("package", filepath.Join(root, "charts", "redis-operator"), "--version", v, "--app-version", v, "--destination", charts)
	}
	if _, err := registry.PushCharts(t.Context(), charts, r.Addr, chartsPrefix); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{helmInstallArgs(r.Addr, versions[0]), helmUpgradeArgs(r.Addr, versions[1])} {
		v := versions[i]
		rendered := helm(append([]string{"template"}, args[1:]...)...)
		for _, want := range []string{
			"helm.sh/chart: redis-operator-" + v + "\n",
			"image: " + r.Addr + "/" + imageRepository + ":" + v + "\n",
			"namespace: " + operatorNS + "\n",
			"cpu: 50m\n",
			"memory: 64Mi\n",
		} {
			if !strings.Contains(rendered, want) {
				t.Errorf("helm %s: the rendered chart lacks %q", args[0], want)
			}
		}
	}
}
