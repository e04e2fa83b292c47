package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// tlsReloadFixture is the TLS reload of a standalone Redis whose TLS Secret was renewed: the
// pod, started before the renewal, serves the old certificate.
type tlsReloadFixture struct {
	d        *Dependencies
	w        *workloadScope
	pod      *corev1.Pod
	node     *fakeNode
	kube     client.Client
	recorder *events.FakeRecorder
	old      redistest.Issued
	renewed  redistest.Issued
}

func newTLSReloadFixture(t *testing.T) tlsReloadFixture {
	t.Helper()
	ca := redistest.NewCA(t, "ca")
	old, renewed := ca.Issue(t, "redis"), ca.Issue(t, "redis")
	material := redis.TLSMaterial{CA: ca.CertPEM, Cert: renewed.CertPEM, Key: renewed.KeyPEM}
	settings := &tlsSettings{config: &tls.Config{MinVersion: tls.VersionTLS12}, material: material, hash: material.Hash(),
		certPath: "/tls/tls.crt", firstSeen: time.Now()}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cache-0", Namespace: "ns",
		Annotations: map[string]string{TLSHashAnnotation: redis.TLSMaterial{CA: ca.CertPEM, Cert: old.CertPEM}.Hash()}},
		Status: corev1.PodStatus{PodIP: standalonePodIP, Phase: corev1.PodRunning,
			StartTime: &metav1.Time{Time: settings.firstSeen.Add(-time.Hour)}}}
	node := &fakeNode{servedCert: old.Cert, certFiles: renewed.Cert}
	kube := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).Build()
	recorder := events.NewFakeRecorder(10)
	d := &Dependencies{Client: kube, Recorder: recorder, RedisNodes: fakeRedis{standalonePodIP + ":6379": node}}
	w := &workloadScope{memory: NewMemory(), spec: workloadSpec{owner: standaloneRedis(), kind: "Redis", port: 6379}}
	w.tls = settings
	return tlsReloadFixture{d: d, w: w, pod: pod, node: node, kube: kube, recorder: recorder, old: old, renewed: renewed}
}

func (f tlsReloadFixture) reload(t *testing.T) {
	t.Helper()
	if err := f.d.reloadTLSOn(context.Background(), f.w, []corev1.Pod{*f.pod}); err != nil {
		t.Fatal(err)
	}
}

// annotation is the TLS hash annotation of the pod as stored.
func (f tlsReloadFixture) annotation(t *testing.T) string {
	t.Helper()
	var pod corev1.Pod
	if err := f.kube.Get(context.Background(), client.ObjectKeyFromObject(f.pod), &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Annotations[TLSHashAnnotation]
}

// A pod whose volume holds the renewed certificate reloads its files, is seen to serve the new
// certificate, and is annotated with the content it serves; one event names its serial.
func TestTLSReloadConfirmsThePodServesTheRenewedCertificate(t *testing.T) {
	f := newTLSReloadFixture(t)
	f.reload(t)
	if want := []string{"tls handshake", "config set tls-cert-file /tls/tls.crt", "tls handshake"}; !slices.Equal(f.node.sent, want) {
		t.Errorf("the pod received %q, want %q", f.node.sent, want)
	}
	if got := f.annotation(t); got != f.w.tls.hash {
		t.Errorf("annotation %q, want the renewed content's hash", got)
	}
	got := drainEvents(f.recorder)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+ReasonTLSReloaded+" pods [cache-0] reloaded") ||
		!strings.HasSuffix(got[0], "serial "+f.renewed.Cert.SerialNumber.Text(16)) {
		t.Errorf("events %q", got)
	}
	if f.w.Result.RequeueAfter != 0 {
		t.Errorf("requeue after %s once the pod serves the content", f.w.Result.RequeueAfter)
	}
}

// A pod whose volume the kubelet has not refreshed yet still serves the old certificate after
// the reload: it is not annotated, no event is told, and the phase comes back shortly. A pod
// whose handshake fails is not told to reload.
func TestTLSReloadWaitsForTheRenewedFiles(t *testing.T) {
	f := newTLSReloadFixture(t)
	f.node.certFiles = f.old.Cert
	f.reload(t)
	if got := f.annotation(t); got == f.w.tls.hash {
		t.Error("a pod serving the old certificate was annotated with the renewed content")
	}
	if got := drainEvents(f.recorder); len(got) != 0 {
		t.Errorf("events %q", got)
	}
	if f.w.Result.RequeueAfter != tlsReloadRetry {
		t.Errorf("requeue after %s, want %s", f.w.Result.RequeueAfter, tlsReloadRetry)
	}

	f = newTLSReloadFixture(t)
	f.node.down = errors.New("connection reset by peer")
	f.reload(t)
	if !slices.Equal(f.node.sent, []string{"tls handshake"}) {
		t.Errorf("a pod whose handshake fails received %q", f.node.sent)
	}
	if f.w.Result.RequeueAfter != tlsReloadRetry {
		t.Errorf("requeue after %s, want %s", f.w.Result.RequeueAfter, tlsReloadRetry)
	}
}

// A pod annotated with the current content is left alone; one started after the content was
// first seen mounted it as it is: it is annotated without an event.
func TestTLSReloadLeavesPodsThatHaveTheContent(t *testing.T) {
	f := newTLSReloadFixture(t)
	f.pod.Annotations[TLSHashAnnotation] = f.w.tls.hash
	f.reload(t)
	if len(f.node.sent) != 0 {
		t.Errorf("a pod with the content received %q", f.node.sent)
	}

	f = newTLSReloadFixture(t)
	f.pod.Annotations = nil
	f.pod.Status.StartTime = &metav1.Time{Time: f.w.tls.firstSeen.Add(time.Second)}
	f.node.servedCert = f.renewed.Cert
	f.reload(t)
	if got := f.annotation(t); got != f.w.tls.hash {
		t.Errorf("annotation %q, want the content it mounted", got)
	}
	if got := drainEvents(f.recorder); len(got) != 0 {
		t.Errorf("events %q for a pod that started with the content", got)
	}
}
