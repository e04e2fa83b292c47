package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A wait's clock runs from the first time it was seen to hold and stops when it no longer
// does, so that the next time it holds it is timed afresh; another wait, or resource, keeps
// its own.
func TestClocksTimeEachWaitFromWhenItFirstHeld(t *testing.T) {
	clocks := NewClocks()
	uid, other := types.UID("a"), types.UID("b")
	start := time.Now()
	if d := clocks.Lasted(uid, "unlinked", true, start); d != 0 {
		t.Fatalf("a wait first seen has lasted %s, want 0", d)
	}
	clocks.Started(other, "unlinked", start.Add(-time.Hour))
	if d := clocks.Lasted(uid, "unlinked", true, start.Add(time.Minute)); d != time.Minute {
		t.Errorf("lasted %s, want 1m", d)
	}
	if _, running := clocks.StartedAt(uid, "master-silent"); running {
		t.Error("a wait never seen has a clock running")
	}
	if d := clocks.Lasted(uid, "unlinked", false, start.Add(2*time.Minute)); d != 0 {
		t.Errorf("a wait that no longer holds lasted %s, want 0", d)
	}
	if d := clocks.Lasted(uid, "unlinked", true, start.Add(3*time.Minute)); d != 0 {
		t.Errorf("a wait that holds again lasted %s from before, want 0", d)
	}
	clocks.Forget(uid)
	if since, running := clocks.StartedAt(other, "unlinked"); !running || !since.Equal(start.Add(-time.Hour)) {
		t.Errorf("forgetting one resource stopped another's clock: %s, %v", since, running)
	}
}
