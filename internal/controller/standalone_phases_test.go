package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// standalonePodIP is the address of the standalone test Redis's pod.
const standalonePodIP = "10.0.0.7"

// standaloneFixture is a RedisReconciler whose Redis is a fake node, and the scope of a
// reconcile of one Redis that found its pod ready: what the phases after "pod" see.
type standaloneFixture struct {
	r        *RedisReconciler
	s        *redisScope
	node     *fakeNode
	recorder *events.FakeRecorder
}

func newStandaloneFixture(t *testing.T, cr *v1beta2.Redis) standaloneFixture {
	t.Helper()
	node := &fakeNode{}
	recorder := events.NewFakeRecorder(10)
	r := &RedisReconciler{Dependencies: Dependencies{Client: fake.NewClientBuilder().Build(), Recorder: recorder,
		RedisNodes: fakeRedis{standalonePodIP + ":6379": node}, Memory: NewMemory()}}
	s := &redisScope{workloadScope: workloadScope{memory: r.Memory,
		spec: workloadSpec{owner: cr, kind: "Redis", port: 6379}}, cr: cr}
	s.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
	s.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: cr.Name + "-0", Namespace: cr.Namespace},
		Status: corev1.PodStatus{PodIP: standalonePodIP}}
	return standaloneFixture{r: r, s: s, node: node, recorder: recorder}
}

func standaloneRedis(dynamicConfig ...string) *v1beta2.Redis {
	cr := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "ns", UID: types.UID("standalone-uid"), Generation: 1}}
	if len(dynamicConfig) > 0 {
		cr.Spec.RedisConfig = &v1beta2.RedisConfig{DynamicConfig: dynamicConfig}
	}
	return cr
}

// drainEvents returns the events recorded so far ("Normal DynamicConfig set [...]").
func drainEvents(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// The dynamic-config phase reads each parameter and sets only those whose value differs, says
// which in one event, and sends nothing but reads once Redis has them all.
func TestDynamicConfigSetsOnlyWhatDiffers(t *testing.T) {
	ctx := context.Background()
	f := newStandaloneFixture(t, standaloneRedis("maxmemory 100mb", `maxmemory-policy "allkeys-lru"`, "hz 10"))
	f.node.config = map[string]string{"maxmemory": "100mb", "maxmemory-policy": "noeviction", "hz": "20"}

	if stop, err := f.r.applyDynamicConfig(ctx, f.s); stop || err != nil {
		t.Fatalf("phase stopped (%v) or failed: %v", stop, err)
	}
	want := []string{"config get maxmemory", "config get maxmemory-policy", "config set maxmemory-policy allkeys-lru",
		"config get hz", "config set hz 10"}
	if !slices.Equal(f.node.sent, want) {
		t.Errorf("Redis received %q, want %q", f.node.sent, want)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || got[0] != "Normal DynamicConfig set [maxmemory-policy hz]" {
		t.Errorf("events %q, want one naming the parameters set", got)
	}

	f.node.sent = nil
	if _, err := f.r.applyDynamicConfig(ctx, f.s); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(f.node.sent, func(c string) bool { return strings.HasPrefix(c, "config set") }) {
		t.Errorf("a Redis that has the config was sent %q", f.node.sent)
	}
	if got := drainEvents(f.recorder); len(got) != 0 {
		t.Errorf("events %q when nothing changed", got)
	}
}

// A parameter Redis refuses fails the phase with a Warning that says why; the lines before it
// were set, and a line that is not "name value" is refused before anything is sent for it.
func TestDynamicConfigRefusedIsAWarning(t *testing.T) {
	ctx := context.Background()
	f := newStandaloneFixture(t, standaloneRedis("maxmemory 1mb", "appendonly maybe"))
	refusal := fakeServerError("ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'")
	f.node.refuseSet = map[string]error{"appendonly": refusal}

	_, err := f.r.applyDynamicConfig(ctx, f.s)
	if !errors.Is(err, refusal) {
		t.Fatalf("phase error %v, want Redis's refusal", err)
	}
	if f.node.config["maxmemory"] != "1mb" {
		t.Errorf("the line before the refused one was not set: %v", f.node.config)
	}
	got := drainEvents(f.recorder)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning DynamicConfigFailed") || !strings.Contains(got[0], "appendonly") {
		t.Errorf("events %q, want one Warning naming the refused parameter", got)
	}

	f = newStandaloneFixture(t, standaloneRedis("maxmemory"))
	if _, err := f.r.applyDynamicConfig(ctx, f.s); err == nil || !strings.Contains(err.Error(), `"maxmemory" is not "name value"`) {
		t.Errorf("a line without a value: error %v", err)
	}
	if len(f.node.sent) != 0 {
		t.Errorf("Redis received %q for a line without a value", f.node.sent)
	}
}

// A Redis that does not answer PING is not Ready: Progressing while it never served, Degraded
// (an outage) once it did, with what failed, and the phase comes back soon. Answering, it is
// Ready and says so once.
func TestStandaloneHealthFollowsWhatRedisAnswers(t *testing.T) {
	ctx := context.Background()
	cr := standaloneRedis()
	f := newStandaloneFixture(t, cr)
	f.node.down = errors.New("i/o timeout")

	if stop, err := f.r.checkHealth(ctx, f.s); !stop || err != nil {
		t.Fatalf("an unanswered PING must stop the reconcile without an error, got stop=%v err=%v", stop, err)
	}
	progressing := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Status != metav1.ConditionTrue || progressing.Reason != status.ReasonRedisUnreachable ||
		!strings.Contains(progressing.Message, "cache-0 does not answer PING: i/o timeout") {
		t.Errorf("never served: Progressing %+v, want %s naming the pod and the error", progressing, status.ReasonRedisUnreachable)
	}
	if f.s.Result.RequeueAfter != whileConverging {
		t.Errorf("requeue after %s, want %s", f.s.Result.RequeueAfter, whileConverging)
	}

	f.node.down = nil
	if stop, err := f.r.checkHealth(ctx, f.s); stop || err != nil {
		t.Fatalf("an answered PING: stop=%v err=%v", stop, err)
	}
	if !meta.IsStatusConditionTrue(cr.Status.Conditions, v1beta2.ConditionReady) {
		t.Errorf("answering: conditions %+v, want Ready", cr.Status.Conditions)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Normal RedisReady") {
		t.Errorf("events %q, want one RedisReady", got)
	}
	cr.Status.State = StandaloneStateReady

	f.node.down = errors.New("connection reset by peer")
	if stop, _ := f.r.checkHealth(ctx, f.s); !stop {
		t.Fatal("an unanswered PING must stop the reconcile")
	}
	degraded := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != status.ReasonRedisUnreachable {
		t.Errorf("after serving: Degraded %+v, want %s", degraded, status.ReasonRedisUnreachable)
	}
	if want := []string{"ping", "ping", "ping"}; !slices.Equal(f.node.sent, want) {
		t.Errorf("Redis received %q, want %q", f.node.sent, want)
	}
}

// A pod whose Redis refuses the connection reads as one that does not answer.
func TestStandaloneHealthOfARefusedConnection(t *testing.T) {
	cr := standaloneRedis()
	f := newStandaloneFixture(t, cr)
	f.s.pod.Status.PodIP = "10.0.0.99" // no node there
	if stop, err := f.r.checkHealth(context.Background(), f.s); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Reason != status.ReasonRedisUnreachable || !strings.Contains(progressing.Message, "connection refused") {
		t.Errorf("Progressing %+v, want %s with the dial error", progressing, status.ReasonRedisUnreachable)
	}
}
