package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/status"
)

// Two operators in one process (two tests' reconcilers) remember apart: a wait one has
// clocked past its bound, and the warning it gave, are nothing to the other.
func TestSeparateMemoriesShareNoWaitOrWarning(t *testing.T) {
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: types.UID("same-resource")}}
	first, second := NewMemory(), NewMemory()
	rec := events.NewFakeRecorder(10)
	report := func(string) {}

	firstConds := status.NewConditions(&[]metav1.Condition{}, 0)
	boundedWait(rec, first, cr, firstConds, "sentinels", 0, "sentinels disagree", report)
	if degradedReason(firstConds) != ReasonStuck || len(rec.Events) != 1 {
		t.Fatalf("first memory past the bound: degraded %q, %d events", degradedReason(firstConds), len(rec.Events))
	}
	<-rec.Events

	// The second memory has no clock running for the wait: within an hour's bound it is
	// reported as it is, not as stuck since the first memory's clock started.
	secondConds := status.NewConditions(&[]metav1.Condition{}, 0)
	reported := 0
	boundedWait(rec, second, cr, secondConds, "sentinels", time.Hour, "sentinels disagree", func(string) { reported++ })
	if reported != 1 || degradedReason(secondConds) != "" {
		t.Fatalf("second memory within the bound: reported %d, degraded %q", reported, degradedReason(secondConds))
	}
	// Nor has it warned: past the bound it warns once itself.
	boundedWait(rec, second, cr, secondConds, "sentinels", 0, "sentinels disagree", report)
	if len(rec.Events) != 1 {
		t.Fatalf("second memory past the bound: %d events, want its own one", len(rec.Events))
	}
	if e := <-rec.Events; !strings.Contains(e, "Warning Stuck") {
		t.Errorf("event %q", e)
	}

	if !first.warned.FirstWarning(cr.UID, "pod", "rr-0/ImagePullBackOff") || !second.warned.FirstWarning(cr.UID, "pod", "rr-0/ImagePullBackOff") {
		t.Error("a trouble one memory warned of counts as warned in the other")
	}
	now := time.Now()
	if !first.told.FirstTelling(cr.UID, "meet", now) || !second.told.FirstTelling(cr.UID, "meet", now) {
		t.Error("an action one memory told counts as told in the other")
	}
}

// forget drops all a memory keeps of a resource that is gone: its warnings, its told actions
// and its wait clocks.
func TestMemoryForgetsAResourceWhole(t *testing.T) {
	uid := types.UID("gone")
	m := NewMemory()
	now := time.Now()
	m.warned.FirstWarning(uid, "pod", "trouble")
	m.told.FirstTelling(uid, "meet", now)
	m.waits.Started(uid, "sentinels", now.Add(-time.Hour))

	m.forget(uid)
	if !m.warned.FirstWarning(uid, "pod", "trouble") {
		t.Error("the warning outlived the resource")
	}
	if !m.told.FirstTelling(uid, "meet", now) {
		t.Error("the told action outlived the resource")
	}
	if since := m.waits.Started(uid, "sentinels", now); !since.Equal(now) {
		t.Errorf("the wait clock outlived the resource: running since %s", since)
	}
}

// A reconciler given no Memory says so, before it reads anything (it has no client either),
// instead of panicking in its first reconcile; SetupWithManager refuses it with the same words.
func TestReconcilerWithoutMemoryFailsClearly(t *testing.T) {
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}
	for name, reconcile := range map[string]func() (ctrl.Result, error){
		"Redis":            func() (ctrl.Result, error) { return (&RedisReconciler{}).Reconcile(t.Context(), req) },
		"RedisCluster":     func() (ctrl.Result, error) { return (&RedisClusterReconciler{}).Reconcile(t.Context(), req) },
		"RedisReplication": func() (ctrl.Result, error) { return (&RedisReplicationReconciler{}).Reconcile(t.Context(), req) },
		"RedisSentinel":    func() (ctrl.Result, error) { return (&RedisSentinelReconciler{}).Reconcile(t.Context(), req) },
	} {
		if _, err := reconcile(); err == nil || !strings.Contains(err.Error(), "no Memory") {
			t.Errorf("%s reconciler without Memory: %v, want an error saying so", name, err)
		}
	}
	if err := requireMemory(nil, "RedisReconciler"); err == nil || !strings.Contains(err.Error(), "RedisReconciler has no Memory") {
		t.Errorf("setup without Memory: %v", err)
	}
	if err := requireMemory(NewMemory(), "RedisReconciler"); err != nil {
		t.Errorf("setup with a Memory: %v", err)
	}
}

// SetupWithManager refuses a reconciler given no Applier as it refuses one given no Memory:
// it could write none of its resources' objects.
func TestSetupRequiresMemoryAndApplier(t *testing.T) {
	if err := requireShared(NewMemory(), nil, "RedisReconciler"); err == nil || !strings.Contains(err.Error(), "RedisReconciler has no Applier") {
		t.Errorf("setup without an Applier: %v", err)
	}
	if err := requireShared(nil, apply.NewApplier(), "RedisReconciler"); err == nil || !strings.Contains(err.Error(), "RedisReconciler has no Memory") {
		t.Errorf("setup without Memory: %v", err)
	}
	if err := requireShared(NewMemory(), apply.NewApplier(), "RedisReconciler"); err != nil {
		t.Errorf("setup with both: %v", err)
	}
}
