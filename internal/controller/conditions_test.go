package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestObservedGenerationMovesOnlyOnSuccess: a reconcile of generation 3 that failed leaves
// status.observedGeneration and the conditions it wrote at the generation last reconciled.
func TestObservedGenerationMovesOnlyOnSuccess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		succeeded     bool
		wantStatus    int64
		wantCondition int64
	}{
		{"succeeded", true, 3, 3},
		{"failed", false, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := v1beta2.CommonStatus{ObservedGeneration: 2}
			conditions := conditionSet{conditions: &status.Conditions, generation: 3}
			conditions.progressing(ReasonReconciling, "applying")
			settleObservedGeneration(&status, 3, tc.succeeded)
			if status.ObservedGeneration != tc.wantStatus {
				t.Errorf("observedGeneration %d, want %d", status.ObservedGeneration, tc.wantStatus)
			}
			for _, c := range status.Conditions {
				if c.ObservedGeneration != tc.wantCondition {
					t.Errorf("condition %s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, tc.wantCondition)
				}
			}
			if len(status.Conditions) != 3 || status.Conditions[0].Status == metav1.ConditionUnknown {
				t.Errorf("conditions %v", status.Conditions)
			}
		})
	}
}

// TestEveryKindHasTheStatusTheShellWrites: the reconcile shell finds each kind's status and
// its common part by field name; a kind without them would panic on its first reconcile.
func TestEveryKindHasTheStatusTheShellWrites(t *testing.T) {
	for _, obj := range []client.Object{&v1beta2.Redis{}, &v1beta2.RedisCluster{}, &v1beta2.RedisReplication{}, &v1beta2.RedisSentinel{}} {
		common := commonStatusOf(obj)
		common.ObservedGeneration = 7
		if got := statusOf(obj).FieldByName("CommonStatus").FieldByName("ObservedGeneration").Int(); got != 7 {
			t.Errorf("%T: the common status is not the resource's own (%d)", obj, got)
		}
	}
}
