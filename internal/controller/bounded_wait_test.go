package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// A wait is reported as it is until its bound, then as Stuck with one Warning event, however
// many reconciles follow; once the resource is Ready, the same wait starts afresh.
func TestBoundedWaitSaysStuckOncePastItsBound(t *testing.T) {
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: types.UID("bounded-wait")}}
	conds := status.NewConditions(&cr.Status.Conditions, 0)
	rec := events.NewFakeRecorder(10)
	mem := NewMemory()
	reported := 0
	report := func(m string) { reported++; conds.Progressing(status.ReasonConverging, m) }

	boundedWait(rec, mem, cr, conds, "sentinels", time.Hour, "sentinels disagree", report)
	if reported != 1 || degradedReason(conds) != "" {
		t.Fatalf("within the bound: reported %d, degraded %q", reported, degradedReason(conds))
	}
	for range 3 { // past the bound (0), three reconciles
		boundedWait(rec, mem, cr, conds, "sentinels", 0, "sentinels disagree", report)
	}
	if reported != 1 || degradedReason(conds) != ReasonStuck {
		t.Fatalf("past the bound: reported %d, degraded %q", reported, degradedReason(conds))
	}
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d events past the bound, want 1", got)
	}
	if e := <-rec.Events; !strings.Contains(e, "Warning Stuck") || !strings.Contains(e, "sentinels disagree") {
		t.Errorf("event %q", e)
	}
	mem.waitsOver(cr.UID) // Ready
	boundedWait(rec, mem, cr, conds, "sentinels", time.Hour, "sentinels disagree", report)
	if reported != 2 {
		t.Errorf("after Ready the wait did not start afresh")
	}
	boundedWait(rec, mem, cr, conds, "sentinels", 0, "sentinels disagree", report)
	if len(rec.Events) != 1 {
		t.Errorf("a new stuck episode after Ready was not warned of")
	}
}

// degradedReason is the reason of a True Degraded condition, "" otherwise.
func degradedReason(c status.Conditions) string {
	for _, cond := range c.List() {
		if cond.Type == v1beta2.ConditionDegraded && cond.Status == metav1.ConditionTrue {
			return cond.Reason
		}
	}
	return ""
}
