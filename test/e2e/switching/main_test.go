// Package switching replaces the OT-CONTAINER-KIT operator with ours on a running sandbox by
// the commands of docs/switching.md, and upgrades ours the same way. It needs a sandbox of its
// own, started without our CRDs or operator: the test installs the other operator's CRDs first
// and stores resources under them, as its users have them.
package switching

import (
	"testing"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{}, func(s *framework.Sandbox) {
		if err := v1beta2.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		sb = s
	})
}
