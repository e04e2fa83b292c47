package events

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A lasting trouble is warned of once per topic; a different trouble on the topic, or the
// same one after it cleared, is warned of again.
func TestWarnedOncePerTroubleUntilCleared(t *testing.T) {
	m := NewWarned()
	uid := types.UID("r")
	if !m.FirstWarning(uid, "pod", "r-0/ImagePullBackOff") || m.FirstWarning(uid, "pod", "r-0/ImagePullBackOff") {
		t.Fatal("one trouble not warned of exactly once")
	}
	if !m.FirstWarning(uid, "pod", "r-0/CrashLoopBackOff") {
		t.Error("another trouble on the topic not warned of")
	}
	m.Cleared(uid, "pod")
	if !m.FirstWarning(uid, "pod", "r-0/CrashLoopBackOff") {
		t.Error("a trouble back after it cleared not warned of")
	}
	m.Forget(uid)
	if !m.FirstWarning(uid, "pod", "r-0/CrashLoopBackOff") {
		t.Error("a warning outlived its resource")
	}
}

// An action is told once within repeatWindow, and again after it.
func TestToldOncePerRepeatWindow(t *testing.T) {
	m := NewTold()
	uid := types.UID("r")
	now := time.Now()
	if !m.FirstTelling(uid, "meet r-1", now) || m.FirstTelling(uid, "meet r-1", now.Add(repeatWindow/2)) {
		t.Fatal("an action not told exactly once within the window")
	}
	if !m.FirstTelling(uid, "meet r-1", now.Add(repeatWindow)) {
		t.Error("an action not told again after the window")
	}
	m.Forget(uid)
	if !m.FirstTelling(uid, "meet r-1", now.Add(repeatWindow)) {
		t.Error("a told action outlived its resource")
	}
}
