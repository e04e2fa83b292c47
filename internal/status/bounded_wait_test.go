package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// stuckWarnings is a StuckWarnings in a map: resource → topic → the trouble warned of.
type stuckWarnings map[types.UID]map[string]string

func (w stuckWarnings) FirstWarning(uid types.UID, topic, trouble string) bool {
	if w[uid] == nil {
		w[uid] = map[string]string{}
	}
	if w[uid][topic] == trouble {
		return false
	}
	w[uid][topic] = trouble
	return true
}

func (w stuckWarnings) Cleared(uid types.UID, topic string) { delete(w[uid], topic) }

// A wait is what it says until it has lasted its bound; from the bound on it is stuck, with
// since when in UTC, whatever the zone of the clock.
func TestBoundedWaitIsStuckFromItsBound(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	const stuckSince = "sentinels disagree; unchanged since 2026-03-01T11:00:00Z"
	cases := []struct {
		name   string
		bound  time.Duration
		lasted time.Duration
		want   WaitOutcome
	}{
		{name: "just started", bound: 2 * time.Minute, want: WaitOutcome{Message: "sentinels disagree"}},
		{name: "within the bound", bound: 2 * time.Minute, lasted: 2*time.Minute - time.Nanosecond, want: WaitOutcome{Message: "sentinels disagree"}},
		{name: "at the bound", bound: 2 * time.Minute, lasted: 2 * time.Minute, want: WaitOutcome{Stuck: true, Message: stuckSince}},
		{name: "long past the bound", bound: 2 * time.Minute, lasted: 3 * time.Hour, want: WaitOutcome{Stuck: true, Message: stuckSince}},
		{name: "a zero bound is stuck at once", want: WaitOutcome{Stuck: true, Message: stuckSince}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := BoundedWait{Key: "monitor", Bound: tc.bound, Message: "sentinels disagree"}
			if got := w.at(since, since.Add(tc.lasted)); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The first reconcile that finds a wait stuck warns, the next ones do not; another wait of the
// same resource warns of its own; once the resource serves (Over), the same wait is timed and
// warned of afresh.
func TestBoundedWaitsWarnOncePerStuckWait(t *testing.T) {
	uid := types.UID("rr")
	waits := NewBoundedWaits(NewClocks(), stuckWarnings{})
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	monitor := BoundedWait{Key: "monitor", Bound: time.Minute, Message: "sentinels disagree"}
	quorum := BoundedWait{Key: "quorum", Bound: time.Minute, Message: "no quorum"}

	steps := []struct {
		name      string
		wait      BoundedWait
		at        time.Duration
		over      bool
		wantStuck bool
		wantWarn  string
	}{
		{name: "first seen", wait: monitor},
		{name: "within its bound", wait: monitor, at: 30 * time.Second},
		{name: "past its bound", wait: monitor, at: time.Minute, wantStuck: true,
			wantWarn: "waited 1m0s: sentinels disagree; unchanged since 2026-03-01T12:00:00Z"},
		{name: "still stuck", wait: monitor, at: 2 * time.Minute, wantStuck: true},
		{name: "another wait starts its own clock", wait: quorum, at: 2 * time.Minute},
		{name: "and warns of its own", wait: quorum, at: 3 * time.Minute, wantStuck: true,
			wantWarn: "waited 1m0s: no quorum; unchanged since 2026-03-01T12:02:00Z"},
		{name: "served, then the first wait again", wait: monitor, at: 10 * time.Minute, over: true},
		{name: "past its new bound", wait: monitor, at: 11 * time.Minute, wantStuck: true,
			wantWarn: "waited 1m0s: sentinels disagree; unchanged since 2026-03-01T12:10:00Z"},
	}
	for _, step := range steps {
		if step.over {
			waits.Over(uid)
		}
		got := waits.Judge(uid, step.wait, start.Add(step.at))
		if got.Stuck != step.wantStuck || got.Warning != step.wantWarn {
			t.Errorf("%s: stuck %v warning %q, want %v %q", step.name, got.Stuck, got.Warning, step.wantStuck, step.wantWarn)
		}
	}
}

// Within its bound the wait is reported in the caller's words; stuck, it is Degraded Stuck.
func TestWaitOutcomeReport(t *testing.T) {
	var list []metav1.Condition
	conditions := NewConditions(&list, 1)
	reported := ""
	report := func(m string) { reported = m; conditions.Progressing(ReasonConverging, m) }

	WaitOutcome{Message: "sentinels disagree"}.Report(conditions, report)
	if reported != "sentinels disagree" || conditions.HasServed() {
		t.Errorf("within the bound: reported %q, conditions %+v", reported, list)
	}
	reported = ""
	WaitOutcome{Stuck: true, Message: "sentinels disagree; unchanged since x"}.Report(conditions, report)
	if reported != "" {
		t.Errorf("a stuck wait went through the caller's report: %q", reported)
	}
	for _, c := range list {
		if c.Type == v1beta2.ConditionDegraded && (c.Status != metav1.ConditionTrue || c.Reason != ReasonStuck) {
			t.Errorf("Degraded %+v, want True %s", c, ReasonStuck)
		}
	}
}
