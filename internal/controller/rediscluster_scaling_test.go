package controller

import (
	"testing"
	"time"
)

func TestFailoverLogWaitsOutTheManualFailoverTimeout(t *testing.T) {
	var l failoverLog
	if !l.ask("a") || l.ask("a") {
		t.Fatal("a second failover on the same node within the timeout must wait")
	}
	if !l.ask("b") {
		t.Fatal("another node's failover need not wait")
	}
	l.asked["a"] = time.Now().Add(-manualFailoverTimeout)
	if !l.ask("a") {
		t.Fatal("after the timeout the failover may be asked again")
	}
}
