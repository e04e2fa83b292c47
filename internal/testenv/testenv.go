//go:build integration

// Package testenv starts the kube-apiserver and etcd (envtest) that a package's integration
// tests share, from the binaries `make test` builds into bin/. It serves the packages two
// folders below the repository's root (internal/apply, internal/controller): the paths it
// names are relative to the folder go test runs a package's tests in.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// New is a control plane with the core kinds only, from KUBEBUILDER_ASSETS or else from the
// repository's bin/.
func New() *envtest.Environment {
	return &envtest.Environment{BinaryAssetsDirectory: assets()}
}

// NewWithCRDs is New's control plane with the operator's CRDs (config/crd/bases) installed
// as it starts.
func NewWithCRDs() *envtest.Environment {
	env := New()
	env.CRDDirectoryPaths = []string{filepath.Join("..", "..", "config", "crd", "bases")}
	env.ErrorIfCRDPathMissing = true
	return env
}

// Run is a TestMain's work: it starts env, sets *config to reach its API server, runs the
// tests and stops env. It returns the code for os.Exit: 1, with why on stderr, if env did not
// start.
func Run(m *testing.M, env *envtest.Environment, config **rest.Config) int {
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start kube-apiserver from %s (run `make test`, it builds it): %v\n", env.BinaryAssetsDirectory, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	*config = cfg
	return m.Run()
}

func assets() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "bin")
}
