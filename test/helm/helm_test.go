// Package helm checks the charts in charts/ without a cluster: helm lint, helm template
// against golden files, the values schema refusing what the charts cannot honour, and the
// operator chart's copies of generated files matching config/.
package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// The charts of the four kinds, which take their helpers from the library chart redis-common.
var kindCharts = []string{"redis", "redis-cluster", "redis-replication", "redis-sentinel"}

const library = "redis-common"

func repo(t *testing.T) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGeneratedCopies: the operator chart ships config/'s CRDs, RBAC rules, alerts and dashboard as they are
// (make chart-sync).
func TestGeneratedCopies(t *testing.T) {
	root := repo(t)
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	pairs := [][2]string{
		{filepath.Join(root, "config", "rbac", "role.yaml"), filepath.Join(root, "charts", "redis-operator", "files", "role.yaml")},
		{filepath.Join(root, "config", "prometheus", "alerts.rules.yaml"), filepath.Join(root, "charts", "redis-operator", "files", "alerts.rules.yaml")},
		{filepath.Join(root, "config", "grafana", "redis-operator-dashboard.json"), filepath.Join(root, "charts", "redis-operator", "files", "redis-operator-dashboard.json")},
	}
	for _, crd := range crds {
		pairs = append(pairs, [2]string{crd, filepath.Join(root, "charts", "redis-operator", "crds", filepath.Base(crd))})
	}
	for _, p := range pairs {
		a, errA := os.ReadFile(p[0])
		b, errB := os.ReadFile(p[1])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (run make chart-sync, or copy the helpers): %v %v", p[1], p[0], errA, errB)
		}
	}
}

type chartMeta struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	Version      string `json:"version"`
	Dependencies []struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Repository string `json:"repository"`
	} `json:"dependencies"`
}

func readChart(t *testing.T, dir string) chartMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s/Chart.yaml: %v", dir, err)
	}
	return m
}

// TestKindChartsShareTheLibrary: the helpers live once, in the library chart, which every kind
// chart depends on from the tree at the library's version (else helm dependency build fails or
// vendors another version), and no kind chart defines a helper of its own under the same names.
func TestKindChartsShareTheLibrary(t *testing.T) {
	root := repo(t)
	lib := readChart(t, filepath.Join(root, "charts", library))
	if lib.Type != "library" {
		t.Errorf("charts/%s is of type %q, want library", library, lib.Type)
	}
	for _, c := range kindCharts {
		dir := filepath.Join(root, "charts", c)
		found := false
		for _, d := range readChart(t, dir).Dependencies {
			if d.Name != library {
				continue
			}
			found = true
			if d.Repository != "file://../"+library || d.Version != lib.Version {
				t.Errorf("%s depends on %s %s from %s, want %s from file://../%s", c, library, d.Version, d.Repository, lib.Version, library)
			}
		}
		if !found {
			t.Errorf("%s does not depend on %s", c, library)
		}
		templates, err := os.ReadDir(filepath.Join(dir, "templates"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range templates {
			b, err := os.ReadFile(filepath.Join(dir, "templates", f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `define "rk.`) {
				t.Errorf("%s/templates/%s defines an rk. helper: the helpers belong in charts/%s", c, f.Name(), library)
			}
		}
	}
}
