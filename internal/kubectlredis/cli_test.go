package kubectlredis

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/version"
)

// TestVersionNeedsNoCluster: `kubectl redis version` answers from the binary alone, even with a
// kubeconfig that does not exist.
func TestVersionNeedsNoCluster(t *testing.T) {
	var out strings.Builder
	if err := Run(t.Context(), []string{"version", "--kubeconfig", "/nonexistent"}, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), version.String("kubectl-redis")+"\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
