package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
			common := v1beta2.CommonStatus{ObservedGeneration: 2}
			NewConditions(&common.Conditions, 3).Progressing(ReasonReconciling, "applying")
			SettleObservedGeneration(&common, 3, tc.succeeded)
			if common.ObservedGeneration != tc.wantStatus {
				t.Errorf("observedGeneration %d, want %d", common.ObservedGeneration, tc.wantStatus)
			}
			for _, c := range common.Conditions {
				if c.ObservedGeneration != tc.wantCondition {
					t.Errorf("condition %s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, tc.wantCondition)
				}
			}
			if len(common.Conditions) != 3 || common.Conditions[0].Status == metav1.ConditionUnknown {
				t.Errorf("conditions %v", common.Conditions)
			}
		})
	}
}

// seenReady is a ReadyMemory of one process.
type seenReady map[types.UID]bool

func (m seenReady) FirstReady(uid types.UID) bool {
	first := !m[uid]
	m[uid] = true
	return first
}

func (m seenReady) NotReady(uid types.UID) { delete(m, uid) }

// A resource tells its Ready once, however many reconciles find it Ready, and again only once
// it stopped being Ready in between.
func TestFirstReadyOncePerReadySpell(t *testing.T) {
	var list []metav1.Condition
	c := NewConditions(&list, 1).RememberingReady("uid", seenReady{})
	if !c.FirstReady() || c.FirstReady() {
		t.Fatal("Ready told other than once")
	}
	c.Degraded(ReasonOutage, "pod r-0 does not answer")
	if !c.FirstReady() {
		t.Error("Ready after an outage not told again")
	}
	if !NewConditions(&list, 1).FirstReady() {
		t.Error("conditions that remember nothing do not tell Ready")
	}
}
