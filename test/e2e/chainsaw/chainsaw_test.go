// Package chainsaw runs the project's chainsaw tests (test/chainsaw) with bin/chainsaw
// against a sandbox of its own: Kubernetes e2e tooling written for real clusters runs on the
// sandbox unchanged, its scripts with bin/kubectl on their PATH.
package chainsaw

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{}, func(s *framework.Sandbox) { sb = s })
}

var passed = regexp.MustCompile(`Passed\s+tests\s+(\d+)`)

func TestChainsawSuite(t *testing.T) {
	repo := sb.Repo()
	// Builds bin/chainsaw at the pinned version unless it is there already.
	if out, err := exec.Command(filepath.Join(repo, "hack", "build-chainsaw.sh")).CombinedOutput(); err != nil {
		t.Fatalf("hack/build-chainsaw.sh: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := filepath.Join(repo, "test", "chainsaw")
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "bin", "chainsaw"), "test",
		"--config", filepath.Join(dir, ".chainsaw.yaml"), "--test-dir", dir, "--no-color")
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+sb.Inst.Kubeconfig(),
		"PATH="+sb.Bin()+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chainsaw test failed: %v\n%s", err, out)
	}
	n := 0
	if m := passed.FindSubmatch(out); m != nil {
		n, _ = strconv.Atoi(string(m[1]))
	}
	if n == 0 {
		t.Fatalf("chainsaw ran no test:\n%s", out)
	}
	t.Logf("chainsaw:\n%s", out)
}
