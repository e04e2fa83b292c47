//go:build integration

package registry

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm itself pulls and renders a chart pushed to the registry (bin/helm, make helm).
func TestHelmPullsPushedChart(t *testing.T) {
	helm, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%v (run make helm)", err)
	}
	r := start(t, "")
	if _, err := PushChart(t.Context(), chartArchive(t, t.TempDir(), "tiny", "1.2.3"), r.Addr, "charts"); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), helm, "template", "rel", "oci://"+r.Addr+"/charts/tiny", "--version", "1.2.3", "--plain-http")
	// Helm's own state (registry logins, caches) in a folder of the test's.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "name: rel") || !strings.Contains(string(out), `replicas: "1"`) {
		t.Fatalf("helm template of the pushed chart: %v\n%s", err, out)
	}
}
