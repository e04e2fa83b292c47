package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// sentinelRollFixture is the TLS roll of three ready sentinels (pods sn-sentinel-0..2 at
// 10.0.7.1..3) that monitor one master and know each other, started before their TLS Secret
// was renewed: each is to restart, one at a time, once the set is settled.
type sentinelRollFixture struct {
	roll     sentinelTLSRoll
	settings *tlsSettings
	set      sentinelSet
	nodes    []*fakeNode
	kube     client.Client
	recorder *events.FakeRecorder
	renewed  redistest.Issued
	requeues *[]string
	// journal is every command of the sentinels, in the order sent across them.
	journal *[]string
}

const sentinelRollSet = "sn-sentinel"

func newSentinelRollFixture(t *testing.T) sentinelRollFixture {
	t.Helper()
	ca := redistest.NewCA(t, "ca")
	renewed := ca.Issue(t, "sentinel")
	material := redis.TLSMaterial{CA: ca.CertPEM, Cert: renewed.CertPEM, Key: renewed.KeyPEM}
	f := sentinelRollFixture{settings: &tlsSettings{material: material, hash: material.Hash(), firstSeen: time.Now()},
		recorder: events.NewFakeRecorder(10), renewed: renewed, requeues: &[]string{}, journal: &[]string{}}
	f.set = sentinelSet{statefulSet: sentinelRollSet, replicas: 3, group: builder.DefaultMasterGroupName}
	dialer := fakeRedis{}
	var objects []client.Object
	for i := range 3 {
		pod := statefulSetPod(sentinelRollSet, i, fmt.Sprintf("10.0.7.%d", i+1))
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		pod.Status.StartTime = &metav1.Time{Time: f.settings.firstSeen.Add(-time.Hour)}
		objects = append(objects, pod)
		f.set.pods = append(f.set.pods, *pod)
		node := &fakeNode{masterState: map[string]map[string]string{builder.DefaultMasterGroupName: {
			"ip": "10.0.3.1", "port": "6379", "flags": "master", "num-other-sentinels": "2"}}, journal: f.journal}
		f.nodes = append(f.nodes, node)
		dialer[fmt.Sprintf("%s:%d", pod.Status.PodIP, builder.DefaultSentinelPort)] = node
	}
	f.kube = fake.NewClientBuilder().WithObjects(objects...).Build()
	f.roll = sentinelTLSRoll{&Dependencies{Client: f.kube, Recorder: f.recorder, RedisNodes: dialer}}
	return f
}

// run runs the roll once, failing the test on error; it reports whether the roll acted.
func (f sentinelRollFixture) run(t *testing.T) bool {
	t.Helper()
	acted, err := f.roll.roll(context.Background(), standaloneRedis(), f.settings, f.set,
		func(_ time.Duration, why string) { *f.requeues = append(*f.requeues, why) })
	if err != nil {
		t.Fatalf("roll: %v", err)
	}
	return acted
}

// sentTo lists the commands the sentinels received, in order, after the sentinel's ordinal,
// and forgets them.
func (f sentinelRollFixture) sentTo() []string {
	var out []string
	for _, line := range *f.journal {
		addr, command, _ := strings.Cut(line, " ")
		for i, pod := range f.set.pods {
			if addr == fmt.Sprintf("%s:%d", pod.Status.PodIP, builder.DefaultSentinelPort) {
				out = append(out, fmt.Sprintf("sentinel-%d: %s", i, command))
			}
		}
	}
	*f.journal = nil
	return out
}

// deleted names the sentinel pods gone from the API.
func (f sentinelRollFixture) deleted(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pod := range f.set.pods {
		err := f.kube.Get(context.Background(), client.ObjectKeyFromObject(&pod), &corev1.Pod{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, pod.Name)
		case err != nil:
			t.Fatal(err)
		}
	}
	return out
}

// A pod goes only when every sentinel agrees on the master, knows every other and the
// sentinels could authorize a failover without it; a sentinel that counts departed sentinels
// is reset first, and no pod goes in that reconcile.
func TestSentinelTLSRollRestartsOnlyASettledSet(t *testing.T) {
	group := builder.DefaultMasterGroupName
	asked := []string{"sentinel-0: sentinel master " + group, "sentinel-1: sentinel master " + group, "sentinel-2: sentinel master " + group}
	tests := []struct {
		name        string
		script      func(sentinelRollFixture)
		wantActed   bool
		wantDeleted []string
		wantSent    []string
		wantEvent   string
		wantRequeue string
	}{
		{name: "a settled set loses its first stale pod", script: func(sentinelRollFixture) {},
			wantActed: true, wantDeleted: []string{"sn-sentinel-0"}, wantSent: append(slices.Clone(asked), "sentinel-0: sentinel ckquorum "+group),
			wantEvent: "Normal TLSRestarted", wantRequeue: "a sentinel pod restarts"},
		{name: "sentinels that could not authorize a failover keep their pods",
			script:   func(f sentinelRollFixture) { f.nodes[0].quorum = fakeServerError("NOQUORUM 1 usable Sentinels") },
			wantSent: append(slices.Clone(asked), "sentinel-0: sentinel ckquorum "+group), wantRequeue: "cannot authorize a failover"},
		{name: "sentinels that disagree on the master keep their pods",
			script:   func(f sentinelRollFixture) { f.nodes[1].masterState[group]["ip"] = "10.0.3.2" },
			wantSent: asked[:2], wantRequeue: "disagree on the master"},
		{name: "a sentinel counting a departed one is reset, and no pod goes",
			script:    func(f sentinelRollFixture) { f.nodes[1].masterState[group]["num-other-sentinels"] = "3" },
			wantActed: true, wantSent: append(slices.Clone(asked), "sentinel-1: sentinel reset "+group),
			wantEvent: "Normal SentinelsForgotten", wantRequeue: "rediscovers the others"},
		{name: "a sentinel that does not answer keeps every pod",
			script:   func(f sentinelRollFixture) { f.nodes[2].down = errors.New("connection reset") },
			wantSent: asked, wantRequeue: "sentinel sn-sentinel-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSentinelRollFixture(t)
			tt.script(f)
			if acted := f.run(t); acted != tt.wantActed {
				t.Errorf("acted %v, want %v", acted, tt.wantActed)
			}
			if got := f.sentTo(); !reflect.DeepEqual(got, tt.wantSent) {
				t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.wantSent, "\n"))
			}
			if got := f.deleted(t); !reflect.DeepEqual(got, tt.wantDeleted) {
				t.Errorf("deleted %q, want %q", got, tt.wantDeleted)
			}
			events := drainEvents(f.recorder)
			if (tt.wantEvent == "") != (len(events) == 0) || (tt.wantEvent != "" && !strings.HasPrefix(events[0], tt.wantEvent)) {
				t.Errorf("events %q, want %q", events, tt.wantEvent)
			}
			if !slices.ContainsFunc(*f.requeues, func(why string) bool { return strings.Contains(why, tt.wantRequeue) }) {
				t.Errorf("requeues %q, want one saying %q", *f.requeues, tt.wantRequeue)
			}
		})
	}
}

// A replacement that started after the renewal is marked as having the Secret's content once
// its TLS handshake shows the renewed certificate, and not before.
func TestSentinelTLSRollMarksAReplacementServingTheRenewedCertificate(t *testing.T) {
	tests := []struct {
		name     string
		serves   func(sentinelRollFixture) *fakeNode
		wantMark bool
	}{
		{name: "serving the renewed certificate", serves: func(f sentinelRollFixture) *fakeNode {
			return &fakeNode{servedCert: f.renewed.Cert}
		}, wantMark: true},
		{name: "serving none yet", serves: func(sentinelRollFixture) *fakeNode { return &fakeNode{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSentinelRollFixture(t)
			// Pod 0 is the replacement: started after the renewal was first seen.
			f.set.pods[0].Status.StartTime = &metav1.Time{Time: f.settings.firstSeen.Add(time.Minute)}
			node := tt.serves(f)
			node.masterState = f.nodes[0].masterState
			f.nodes[0] = node
			f.roll.RedisNodes.(fakeRedis)["10.0.7.1:26379"] = node
			f.run(t)
			if got := f.nodes[0].sent; len(got) == 0 || got[0] != "tls handshake" {
				t.Errorf("the replacement was sent %q, want a TLS handshake first", got)
			}
			var pod corev1.Pod
			if err := f.kube.Get(context.Background(), client.ObjectKeyFromObject(&f.set.pods[0]), &pod); err != nil {
				t.Fatal(err)
			}
			if marked := pod.Annotations[TLSHashAnnotation] == f.settings.hash; marked != tt.wantMark {
				t.Errorf("marked %v, want %v", marked, tt.wantMark)
			}
		})
	}
}
