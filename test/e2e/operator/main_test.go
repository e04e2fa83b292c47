// Package operator runs the operator as a user would: deployed in the sandbox (its own
// ServiceAccount, so RBAC is enforced), driving real redis-server pods. Every healing scenario
// writes data first and reads it back after.
package operator

import (
	"testing"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Operator: true}, func(s *framework.Sandbox) {
		if err := v1beta2.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		sb = s
	})
}
