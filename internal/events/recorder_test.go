//go:build integration

package events

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Events of one reason about one resource with different messages stay apart (a timeline),
// and an exact repeat is counted on the event it repeats instead of making another.
func TestEventRecorderKeepsEachMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := testNamespace(t)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	regarding, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "resource"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	regarding.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	rec, stop := NewRecorder(kube.EventsV1(), testScheme, "redis-operator")
	defer stop()
	for _, note := range []string{"the master is now pod-1 (was pod-0)", "the master is now pod-0 (was pod-1)", "the master is now pod-0 (was pod-1)"} {
		rec.Eventf(regarding, nil, corev1.EventTypeNormal, "MasterChanged", "Observe", "%s", note)
	}
	// Beyond client-go's default budget of 25 events per resource.
	for range 30 {
		rec.Eventf(regarding, nil, corev1.EventTypeNormal, "ClusterMeet", "Meet", "introduce node %s", time.Now().Format(time.RFC3339Nano))
	}
	want := map[string]int32{"the master is now pod-1 (was pod-0)": 1, "the master is now pod-0 (was pod-1)": 2}
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int32{}
		meets := 0
		var notes []string
		for _, e := range events.Items {
			notes = append(notes, e.Reason+": "+e.Note)
			if e.EventTime.IsZero() || e.ReportingController != "redis-operator" || e.Action == "" {
				t.Fatalf("event without its time, reporting controller or action: %+v", e)
			}
			switch e.Reason {
			case "MasterChanged":
				got[e.Note] = 1
				if e.Series != nil {
					got[e.Note] = e.Series.Count
				}
			case "ClusterMeet":
				meets++
			}
		}
		if len(got) == len(want) && got["the master is now pod-1 (was pod-0)"] == 1 && got["the master is now pod-0 (was pod-1)"] == 2 && meets == 30 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(notes)
			t.Fatalf("MasterChanged events %v (want %v), %d ClusterMeet events (want 30); all: %q", got, want, meets, notes)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
