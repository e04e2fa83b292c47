// Package helm installs the operator and Redis the way Helm users do, on a sandbox started
// without the operator: the operator chart (its image mapped by the sandbox to the operator
// built into bin/), then the resource charts, with the exporter on; it checks what users look
// at (Ready, the exporters' redis_up, the operator's metrics, kubectl redis status), a helm
// upgrade reaching the objects, and helm uninstall leaving nothing of ours.
package helm

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
