package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

const testFinalizer = "test.rediskube.io/finalizer"

// testScope is a kind's scope as the tests need it: the Scope and the phases that ran.
type testScope struct {
	Scope
	cr  *v1beta2.Redis
	ran []string
}

// step is a phase that notes it ran, then returns stop and err.
func step(name string, stop bool, err error) Phase[*testScope] {
	return Phase[*testScope]{Name: name, Run: func(_ context.Context, s *testScope) (bool, error) {
		s.ran = append(s.ran, name)
		return stop, err
	}}
}

// ready is a phase that says the resource is Ready.
func ready(_ context.Context, s *testScope) (bool, error) {
	s.Conditions.Ready("all good")
	return false, nil
}

func TestRunRunsThePhasesInOrderUntilOneStops(t *testing.T) {
	s := &testScope{}
	phases := []Phase[*testScope]{step("a", false, nil), step("b", true, nil), step("c", false, nil)}
	if err := Run(context.Background(), "Redis", phases, s, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(s.ran, want) {
		t.Fatalf("ran %v, want %v: b stops the reconcile", s.ran, want)
	}
}

func TestRunStopsAtAFailureNamedByItsPhaseAndCountsIt(t *testing.T) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_phase_failures_total"}, []string{"kind", "phase"})
	s := &testScope{}
	boom := errors.New("boom")
	phases := []Phase[*testScope]{step("a", false, nil), step("b", false, boom), step("c", false, nil)}
	err := Run(context.Background(), "Redis", phases, s, failures)
	if !errors.Is(err, boom) || err.Error() != "b: boom" {
		t.Fatalf("error %v, want b: boom", err)
	}
	if want := []string{"a", "b"}; !slices.Equal(s.ran, want) {
		t.Fatalf("ran %v, want %v", s.ran, want)
	}
	if got := testutil.ToFloat64(failures.WithLabelValues("Redis", "b")); got != 1 {
		t.Fatalf("%v failures of phase b counted, want 1", got)
	}
	// The series of a phase that ran exists before it ever fails.
	if got := testutil.CollectAndCount(failures); got != 2 {
		t.Fatalf("%d series, want 2 (a at 0, b at 1)", got)
	}
}

func TestRequeueKeepsTheEarliest(t *testing.T) {
	ctx := context.Background()
	var s Scope
	s.Requeue(ctx, time.Minute, "later")
	s.Requeuer(ctx)(10*time.Second, "sooner")
	s.Requeue(ctx, 30*time.Second, "in between")
	if s.Result.RequeueAfter != 10*time.Second {
		t.Fatalf("requeue after %v, want the earliest, 10s", s.Result.RequeueAfter)
	}
}

// fixture is a fake API server holding one Redis, which counts the status patches.
type fixture struct {
	c       client.Client
	cr      *v1beta2.Redis
	patches int
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &fixture{cr: &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", Generation: 2}}}
	f.cr.Status.ObservedGeneration = 1
	f.c = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1beta2.Redis{}).WithObjects(append(objs, f.cr)...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string,
			obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			f.patches++
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		}}).Build()
	return f
}

func (f *fixture) shell(phases ...Phase[*testScope]) Shell[*v1beta2.Redis, *testScope] {
	return Shell[*v1beta2.Redis, *testScope]{
		Client:    f.c,
		Kind:      "Redis",
		Finalizer: testFinalizer,
		NewObject: func() *v1beta2.Redis { return &v1beta2.Redis{} },
		NewScope:  func(cr *v1beta2.Redis, base Scope) *testScope { return &testScope{Scope: base, cr: cr} },
		Phases:    phases,
	}
}

func (f *fixture) reconcile(t *testing.T, sh Shell[*v1beta2.Redis, *testScope]) (ctrl.Result, error) {
	t.Helper()
	return sh.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.cr)})
}

func (f *fixture) stored(t *testing.T) *v1beta2.Redis {
	t.Helper()
	var cr v1beta2.Redis
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cr), &cr); err != nil {
		t.Fatal(err)
	}
	return &cr
}

func TestTheStatusIsPatchedOnceAndNotAgainWhenNothingChanged(t *testing.T) {
	f := newFixture(t)
	sh := f.shell(Phase[*testScope]{Name: "ready", Run: ready}, step("more", false, nil))
	if _, err := f.reconcile(t, sh); err != nil {
		t.Fatal(err)
	}
	if f.patches != 1 {
		t.Fatalf("%d status patches, want 1", f.patches)
	}
	if got := f.stored(t).Status; got.ObservedGeneration != 2 || len(got.Conditions) == 0 {
		t.Fatalf("stored status %+v, want the conditions and observedGeneration 2", got)
	}
	if _, err := f.reconcile(t, sh); err != nil {
		t.Fatal(err)
	}
	if f.patches != 1 {
		t.Fatalf("%d status patches after a reconcile that changed nothing, want still 1", f.patches)
	}
}

func TestObservedGenerationOnlyWhenEveryPhaseSucceeded(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("boom")
	sh := f.shell(Phase[*testScope]{Name: "ready", Run: ready}, step("fails", false, boom), step("after", false, nil))
	if _, err := f.reconcile(t, sh); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the phase's", err)
	}
	got := f.stored(t).Status
	if got.ObservedGeneration != 1 {
		t.Fatalf("observedGeneration %d after a failed phase, want still 1", got.ObservedGeneration)
	}
	for _, c := range got.Conditions {
		if c.ObservedGeneration > 1 {
			t.Fatalf("condition %s claims generation %d after a failed phase", c.Type, c.ObservedGeneration)
		}
	}
	if f.patches != 1 {
		t.Fatalf("%d status patches, want 1: the conditions changed", f.patches)
	}

	// A phase that stops the reconcile, with its reason, has acted on the generation.
	sh = f.shell(Phase[*testScope]{Name: "ready", Run: ready}, step("stops", true, nil), step("after", false, boom))
	if _, err := f.reconcile(t, sh); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t).Status.ObservedGeneration; got != 2 {
		t.Fatalf("observedGeneration %d after the phases stopped without error, want 2", got)
	}
}

func TestTheHooksRunAroundTheWriteAndTheResultIsTheScopes(t *testing.T) {
	f := newFixture(t)
	var calls []string
	sh := f.shell(Phase[*testScope]{Name: "requeue", Run: func(ctx context.Context, s *testScope) (bool, error) {
		calls = append(calls, "phase")
		s.Requeue(ctx, time.Minute, "later")
		s.Requeue(ctx, time.Second, "sooner")
		return false, nil
	}})
	sh.Finish = func(_ context.Context, s *testScope) {
		calls = append(calls, "finish")
		s.Conditions.Progressing(status.ReasonReconciling, "finishing")
	}
	sh.SettleStatus = func(cr *v1beta2.Redis, _ *testScope) {
		calls = append(calls, "settle")
		cr.Status.State = "Settled"
	}
	sh.AfterWrite = func(cr *v1beta2.Redis) { calls = append(calls, "after-write:"+cr.Status.State) }
	result, err := f.reconcile(t, sh)
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != time.Second {
		t.Fatalf("requeue after %v, want the earliest asked, 1s", result.RequeueAfter)
	}
	if want := []string{"phase", "finish", "settle", "after-write:Settled"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if got := f.stored(t).Status.State; got != "Settled" {
		t.Fatalf("stored state %q, want what SettleStatus derived", got)
	}
}

func TestAGoneResourceIsForgottenWithoutAnError(t *testing.T) {
	f := newFixture(t)
	var gone []types.NamespacedName
	sh := f.shell(step("never", false, errors.New("a phase ran for a resource that is gone")))
	sh.OnGone = func(_ context.Context, key types.NamespacedName) { gone = append(gone, key) }
	sh.NewScope = func(*v1beta2.Redis, Scope) *testScope { t.Fatal("a scope for a resource that is gone"); return nil }
	key := types.NamespacedName{Namespace: "ns", Name: "deleted"}
	result, err := sh.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil || result != (ctrl.Result{}) {
		t.Fatalf("result %+v, error %v; want none", result, err)
	}
	if !slices.Equal(gone, []types.NamespacedName{key}) {
		t.Fatalf("OnGone saw %v, want %v", gone, key)
	}
}

// Once its finalizer is off a resource being deleted, the status is left alone: the resource
// may be gone by the time a patch arrives.
func TestNoStatusWriteOnceTheFinalizerIsOff(t *testing.T) {
	now := metav1.Now()
	going := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "going", Generation: 1,
		DeletionTimestamp: &now, Finalizers: []string{"someone.else/finalizer"}}}
	f := newFixture(t, going)
	var deleting []string
	sh := f.shell(Phase[*testScope]{Name: "ready", Run: ready})
	sh.OnDeleting = func(_ context.Context, cr *v1beta2.Redis) { deleting = append(deleting, cr.Name) }
	if _, err := sh.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(going)}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deleting, []string{"going"}) {
		t.Fatalf("OnDeleting saw %v, want [going]", deleting)
	}
	if f.patches != 0 {
		t.Fatalf("%d status patches of a resource without the kind's finalizer being deleted, want 0", f.patches)
	}
}

// ShowStatus writes what the phases wrote so far without claiming the generation, and the
// final write starts from what was shown.
func TestShowStatusWritesBeforeTheEndWithoutClaimingTheGeneration(t *testing.T) {
	f := newFixture(t)
	var shown v1beta2.Redis
	sh := f.shell(Phase[*testScope]{Name: "long", Run: func(ctx context.Context, s *testScope) (bool, error) {
		s.Conditions.Progressing(status.ReasonReconciling, "a long step")
		if err := s.ShowStatus(ctx); err != nil {
			return false, err
		}
		return false, f.c.Get(ctx, client.ObjectKeyFromObject(s.cr), &shown)
	}})
	if _, err := f.reconcile(t, sh); err != nil {
		t.Fatal(err)
	}
	if shown.Status.ObservedGeneration != 1 || len(shown.Status.Conditions) == 0 {
		t.Fatalf("shown status %+v, want the conditions at observedGeneration 1", shown.Status)
	}
	if got := f.stored(t).Status.ObservedGeneration; got != 2 || f.patches != 2 {
		t.Fatalf("observedGeneration %d after %d patches, want 2 after 2", got, f.patches)
	}
}
