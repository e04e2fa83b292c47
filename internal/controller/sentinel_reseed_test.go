package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

func reseedPod(name, ip string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning}}
}

// The shared restart of a blind sentinel: held through its grace, then its pod alone is
// deleted with one event on the owner; held while another sentinel pod terminates, and for a
// pod whose config lives on a claim, which a new pod would start from.
func TestSentinelReseedRestartsTheBlindPodOnly(t *testing.T) {
	const master = "10.0.0.1"
	monitored := []corev1.Pod{reseedPod("rr-0", master), reseedPod("rr-1", "10.0.0.2")}
	views := []replicationplan.SentinelView{
		{Pod: "rr-s-0", Master: master}, {Pod: "rr-s-1", Master: master},
		{Pod: "rr-s-2", Master: "10.0.0.250", Replicas: []string{"10.0.0.251"}},
	}
	owner := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: "rr-uid"}}
	past := func(r sentinelReseed) { // the blind sentinel's clock started before its grace
		r.waits.Forget(owner.UID)
		r.waits.Started(owner.UID, reseedKey("rr-s-2"), time.Now().Add(-sentinelReseedGrace-time.Second))
	}

	cases := []struct {
		name        string
		change      func(pods []corev1.Pod)
		afterGrace  bool
		wantDeleted bool
		wantHeld    string
	}{
		{name: "within its grace", wantHeld: "once it has been so for 10s"},
		{name: "after its grace", afterGrace: true, wantDeleted: true},
		{name: "another sentinel pod terminating", afterGrace: true, wantHeld: "one at a time", change: func(pods []corev1.Pod) {
			now := metav1.Now()
			pods[0].DeletionTimestamp, pods[0].Finalizers = &now, []string{"test/hold"}
		}},
		{name: "its config on a claim", afterGrace: true, wantHeld: "claim data-rr-s-2", change: func(pods []corev1.Pod) {
			pods[2].Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-rr-s-2"}}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sentinels := []corev1.Pod{reseedPod("rr-s-0", "10.0.1.1"), reseedPod("rr-s-1", "10.0.1.2"), reseedPod("rr-s-2", "10.0.1.3")}
			if tc.change != nil {
				tc.change(sentinels)
			}
			b := fake.NewClientBuilder()
			for i := range sentinels {
				b = b.WithObjects(sentinels[i].DeepCopy())
			}
			c := b.Build()
			rec := events.NewFakeRecorder(10)
			r := sentinelReseed{c: c, rec: rec, waits: NewMemory().waits}
			if tc.afterGrace {
				past(r)
			}
			out, err := r.restart(ctx, owner, views, sentinels, monitored, master)
			if err != nil {
				t.Fatal(err)
			}
			if out.blind != "rr-s-2" || out.restarted != tc.wantDeleted || !strings.Contains(out.held, tc.wantHeld) {
				t.Errorf("outcome %+v, want blind rr-s-2, restarted %v, held containing %q", out, tc.wantDeleted, tc.wantHeld)
			}
			for _, p := range sentinels {
				err := c.Get(ctx, client.ObjectKeyFromObject(&p), &corev1.Pod{})
				if gone := apierrors.IsNotFound(err); gone != (tc.wantDeleted && p.Name == "rr-s-2") {
					t.Errorf("%s gone %v (%v)", p.Name, gone, err)
				}
			}
			close(rec.Events)
			var told []string
			for e := range rec.Events {
				told = append(told, e)
			}
			if tc.wantDeleted && (len(told) != 1 || !strings.Contains(told[0], ReasonSentinelReseeded) || !strings.Contains(told[0], "10.0.0.250")) {
				t.Errorf("events %q, want one %s naming the gone address", told, ReasonSentinelReseeded)
			}
			if !tc.wantDeleted && len(told) != 0 {
				t.Errorf("events %q while held", told)
			}
		})
	}
}

// A sentinel that knows a replica that runs can still learn the master: nothing is held.
func TestSentinelReseedLeavesASentinelThatKnowsALiveReplica(t *testing.T) {
	const master = "10.0.0.1"
	views := []replicationplan.SentinelView{
		{Pod: "rr-s-0", Master: master}, {Pod: "rr-s-1", Master: master},
		{Pod: "rr-s-2", Master: "10.0.0.250", Replicas: []string{"10.0.0.2"}},
	}
	sentinels := []corev1.Pod{reseedPod("rr-s-0", "10.0.1.1"), reseedPod("rr-s-1", "10.0.1.2"), reseedPod("rr-s-2", "10.0.1.3")}
	owner := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: "rr-uid"}}
	out, err := sentinelReseed{c: fake.NewClientBuilder().Build(), rec: events.NewFakeRecorder(1), waits: NewMemory().waits}.restart(
		context.Background(), owner, views, sentinels, []corev1.Pod{reseedPod("rr-0", master), reseedPod("rr-1", "10.0.0.2")}, master)
	if err != nil || out != (reseedOutcome{}) {
		t.Errorf("outcome %+v, %v; want nothing", out, err)
	}
}
