// Package helm checks the charts in charts/ without a cluster: helm lint, helm template
// against golden files, the values schema refusing what the charts cannot honour, and the
// operator chart's copies of generated files matching config/.
package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

func repo(t *testing.T) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGeneratedCopies: the operator chart ships config/'s CRDs, RBAC rules, alerts and dashboard as they are
// (make chart-sync), and the resource charts share one helper file.
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
	common := filepath.Join(root, "charts", "redis-cluster", "templates", "_common.tpl")
	for _, c := range []string{"redis", "redis-replication", "redis-sentinel"} {
		pairs = append(pairs, [2]string{common, filepath.Join(root, "charts", c, "templates", "_common.tpl")})
	}
	for _, p := range pairs {
		a, errA := os.ReadFile(p[0])
		b, errB := os.ReadFile(p[1])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (run make chart-sync, or copy the helpers): %v %v", p[1], p[0], errA, errB)
		}
	}
}
