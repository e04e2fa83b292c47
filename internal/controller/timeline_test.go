//go:build integration

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operatorEvents lists the operator's events in a namespace (the kubelet's are not its own).
func operatorEvents(t *testing.T, c client.Client, namespace string) []eventsv1.Event {
	t.Helper()
	var events eventsv1.EventList
	if err := c.List(context.Background(), &events, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var ours []eventsv1.Event
	for _, e := range events.Items {
		if e.ReportingController == "redis-operator" || e.DeprecatedSource.Component == "redis-operator" {
			ours = append(ours, e)
		}
	}
	return ours
}

// assertTimeline checks that the operator's events read as a timeline: each action one
// event, none sent twice (a repeat shows as a series count, or as the same reason, message and
// object twice).
func assertTimeline(t *testing.T, c client.Client, namespace string) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range operatorEvents(t, c, namespace) {
		key := fmt.Sprintf("%s %s/%s %s: %s", e.Type, e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
		if e.Series != nil && e.Series.Count > 1 {
			t.Errorf("sent %d times: %s", e.Series.Count, key)
		}
		if seen[key] {
			t.Errorf("sent twice: %s", key)
		}
		seen[key] = true
	}
}

// assertIdleIsQuiet checks that a Ready resource left alone for a while (through its periodic
// health checks) makes no event at all.
func assertIdleIsQuiet(t *testing.T, c client.Client, namespace string, idle time.Duration) {
	t.Helper()
	before := len(operatorEvents(t, c, namespace))
	time.Sleep(idle)
	after := operatorEvents(t, c, namespace)
	for _, e := range after[min(before, len(after)):] {
		t.Errorf("an idle Ready resource made an event: %s %s/%s %s: %s", e.Type, e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
	}
	if len(after) < before {
		t.Errorf("%d events before the idle time, %d after", before, len(after))
	}
}
