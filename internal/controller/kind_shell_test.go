package controller

import (
	"testing"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// TestStateNeverSaysReadyWithoutTheReadyCondition: a state left at Ready by a reconcile that
// found a problem follows the conditions.
func TestStateNeverSaysReadyWithoutTheReadyCondition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		obj       statusHolder
		set       func(status.Conditions)
		wantState string
	}{
		{"ready stays", &v1beta2.Redis{}, func(c status.Conditions) { c.Ready("answers") }, "Ready"},
		{"degraded", &v1beta2.Redis{}, func(c status.Conditions) { c.Degraded(status.ReasonApplyFailed, "quota") }, "Failed"},
		{"progressing", &v1beta2.Redis{}, func(c status.Conditions) { c.Progressing(status.ReasonConverging, "moving") }, "Initializing"},
		{"cluster progressing", &v1beta2.RedisCluster{}, func(c status.Conditions) { c.Progressing(status.ReasonConverging, "moving") }, status.ClusterStateBootstrap},
		{"cluster degraded", &v1beta2.RedisCluster{}, func(c status.Conditions) { c.Degraded(status.ReasonTopologyProblem, "slots") }, "Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, reason := tc.obj.CompatibleState()
			*state, *reason = "Ready", "was ready"
			tc.set(status.NewConditions(&tc.obj.GetCommonStatus().Conditions, 1))
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
