// Package e2e holds the sandbox's own end-to-end tests: they check, against real processes
// and a real control plane, the kubelet behaviour the operator relies on.
package e2e

import (
	"testing"
	"time"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

// volumeRefresh is the kubelets' Secret and ConfigMap refresh period here: not the 2 s the
// operator's suites use, so that a test sees the setting reach the kubelets.
const volumeRefresh = 5 * time.Second

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{VolumeRefresh: volumeRefresh}, func(s *framework.Sandbox) { sb = s })
}
