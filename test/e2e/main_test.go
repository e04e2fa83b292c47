// Package e2e holds the sandbox's own end-to-end tests: they check, against real processes
// and a real control plane, the kubelet behaviour the operator relies on.
package e2e

import (
	"testing"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{}, func(s *framework.Sandbox) { sb = s })
}
