//go:build integration

package events

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The recorder is tested against a real kube-apiserver: what it writes is what the API server
// accepts of an events.k8s.io Event and of its series patch.
var (
	restConfig *rest.Config
	testScheme = runtime.NewScheme()
	namespaces atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	// The binaries make test builds into bin/, unless KUBEBUILDER_ASSETS names others.
	env := &envtest.Environment{BinaryAssetsDirectory: cmp.Or(os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join("..", "..", "bin"))}
	config, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kube-apiserver (run `make test`, it builds it):", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	restConfig = config
	return m.Run()
}

// testNamespace is a namespace name of the test's own.
func testNamespace(t *testing.T) string {
	t.Helper()
	return "events-" + strconv.FormatInt(namespaces.Add(1), 10)
}
