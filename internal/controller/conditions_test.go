package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestStateNeverSaysReadyWithoutTheReadyCondition: a state left at Ready by a reconcile that
// found a problem follows the conditions.
func TestStateNeverSaysReadyWithoutTheReadyCondition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		obj       statusHolder
		set       func(conditionSet)
		wantState string
	}{
		{"ready stays", &v1beta2.Redis{}, func(c conditionSet) { c.ready("answers") }, "Ready"},
		{"degraded", &v1beta2.Redis{}, func(c conditionSet) { c.degraded(ReasonApplyFailed, "quota") }, "Failed"},
		{"progressing", &v1beta2.Redis{}, func(c conditionSet) { c.progressing(ReasonConverging, "moving") }, "Initializing"},
		{"cluster progressing", &v1beta2.RedisCluster{}, func(c conditionSet) { c.progressing(ReasonConverging, "moving") }, ClusterStateBootstrap},
		{"cluster degraded", &v1beta2.RedisCluster{}, func(c conditionSet) { c.degraded(ReasonTopologyProblem, "slots") }, "Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, reason := tc.obj.CompatibleState()
			*state, *reason = "Ready", "was ready"
			tc.set(conditionSet{conditions: &tc.obj.GetCommonStatus().Conditions, generation: 1})
			settleCompatibleState(tc.obj, "")
			if *state != tc.wantState {
				t.Errorf("state %q, want %q", *state, tc.wantState)
			}
			if tc.wantState != "Ready" && *reason == "was ready" {
				t.Errorf("reason not updated")
			}
		})
	}
}
