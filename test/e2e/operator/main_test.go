// Package operator runs the operator as a user would: deployed in the sandbox (its own
// ServiceAccount, so RBAC is enforced), driving real redis-server pods. Every healing scenario
// writes data first and reads it back after.
//
// Tests that only use a namespace of their own and neither stop the operator nor load the
// whole machine (a CPU hog) call t.Parallel: they run E2E_PARALLEL at a time (go test's
// -parallel) once the others have run one by one. Most of their time is spent waiting on
// Redis and on timeouts, so this keeps the suite's time down; faults they inject (cuts,
// crashes, deleted pods) touch only their own pods.
package operator

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var sb *framework.Sandbox

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Operator: true}, func(s *framework.Sandbox) {
		if err := v1beta2.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		if err := v1alpha1.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		if err := v1beta1.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		if err := apiextensionsv1.AddToScheme(s.Scheme); err != nil {
			panic(err)
		}
		sb = s
	})
}
