//go:build integration

package monitoring

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool comes with Debian's prometheus package (make packages installs it).
func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run make packages (hack/install-packages.sh installs Debian's prometheus): %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// The alert rules are valid and their unit tests (alerts_test.yaml) pass.
func TestAlertRules(t *testing.T) {
	dir := filepath.Join(repo(t), filepath.Dir(RulesFile))
	promtool(t, dir, "check", "rules", filepath.Base(RulesFile))
	promtool(t, dir, "test", "rules", filepath.Base(RulesTestFile))
}
