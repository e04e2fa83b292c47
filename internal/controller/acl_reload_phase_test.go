package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/rediskube/redis-operator/internal/builder"
)

// The marker users that end the aclfile the pods loaded and the one the operator rendered now.
const (
	loadedACLMarker   = "redis-operator-acl-0000000000000001"
	renderedACLMarker = "redis-operator-acl-0000000000000002"
)

// aclReloadFixture is the ACL reload of a standalone Redis whose pod runs the aclfile ending
// in loadedACLMarker, while the operator rendered one ending in renderedACLMarker.
type aclReloadFixture struct {
	d        *Dependencies
	w        *workloadScope
	pod      corev1.Pod
	node     *fakeNode
	recorder *events.FakeRecorder
}

func newACLReloadFixture(t *testing.T) aclReloadFixture {
	t.Helper()
	cr := standaloneRedis()
	rendered := "user default on #" + strings.Repeat("ab", 32) + " ~* +@all\nuser " + renderedACLMarker + " off\n"
	if builder.ACLFileMarker(rendered) != renderedACLMarker {
		t.Fatalf("the test's aclfile %q has no marker the builder reads", rendered)
	}
	node := &fakeNode{aclUsers: []string{"default", loadedACLMarker}}
	recorder := events.NewFakeRecorder(10)
	d := &Dependencies{Recorder: recorder, RedisNodes: fakeRedis{standalonePodIP + ":6379": node}}
	w := &workloadScope{memory: NewMemory(), spec: workloadSpec{owner: cr, kind: "Redis", port: 6379}}
	w.password = "s3cret"
	w.objects = &builder.Objects{Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: builder.ACLSecretName(cr.Name), Namespace: "ns"},
		Data: map[string][]byte{builder.ACLFileKey: []byte(rendered)}}}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cache-0", Namespace: "ns"},
		Status: corev1.PodStatus{PodIP: standalonePodIP, Phase: corev1.PodRunning}}
	return aclReloadFixture{d: d, w: w, pod: pod, node: node, recorder: recorder}
}

func (f aclReloadFixture) reload(t *testing.T) error {
	t.Helper()
	return f.d.reloadACLOn(context.Background(), f.w, []corev1.Pod{f.pod})
}

// A pod whose volume already holds the rendered file loads it with ACL LOAD, gets the
// operator's login back (the default user's password, replicas logging in as it), is dialled
// anew and found on the new file: one event, no retry.
func TestACLReloadLoadsTheRenderedFileInPlace(t *testing.T) {
	f := newACLReloadFixture(t)
	f.node.aclFile = []string{"default", renderedACLMarker}
	if err := f.reload(t); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("s3cret"))
	want := []string{"acl users", "acl load", "acl setuser default #" + hex.EncodeToString(sum[:]), "config set masteruser ", "acl users"}
	if !slices.Equal(f.node.sent, want) {
		t.Errorf("the pod received %q, want %q", f.node.sent, want)
	}
	if f.node.evictions != 1 {
		t.Errorf("connections dropped %d times after the load, want 1: none may stay on a user the file changed", f.node.evictions)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || got[0] != "Normal "+ReasonACLLoaded+" pods [cache-0] loaded the ACL Secret's users in place" {
		t.Errorf("events %q", got)
	}
	if f.w.Result.RequeueAfter != 0 {
		t.Errorf("requeue after %s once the pod has the file", f.w.Result.RequeueAfter)
	}
}

// A pod on the rendered file is only asked; one whose volume the kubelet has not refreshed
// yet reloads the old file, and the phase looks again shortly, without an event.
func TestACLReloadWaitsForTheKubeletToRefreshTheVolume(t *testing.T) {
	f := newACLReloadFixture(t)
	f.node.aclUsers = []string{"default", renderedACLMarker}
	if err := f.reload(t); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.node.sent, []string{"acl users"}) {
		t.Errorf("a pod on the rendered file received %q", f.node.sent)
	}

	f = newACLReloadFixture(t)
	f.node.aclFile = []string{"default", loadedACLMarker} // the volume still holds the old file
	if err := f.reload(t); err != nil {
		t.Fatal(err)
	}
	if f.w.Result.RequeueAfter != aclReloadRetry {
		t.Errorf("requeue after %s, want %s", f.w.Result.RequeueAfter, aclReloadRetry)
	}
	if got := drainEvents(f.recorder); len(got) != 0 {
		t.Errorf("events %q before the pod loaded the file", got)
	}
}

// A file the pod refuses is a Warning on the resource naming the pod, and the phase fails.
func TestACLReloadRefusedIsAWarning(t *testing.T) {
	f := newACLReloadFixture(t)
	f.node.loadErr = fakeServerError("ERR /data/acl/user.acl:1: Error in applying operation 'bogus': Syntax error")
	err := f.reload(t)
	if err == nil || !strings.Contains(err.Error(), "pod cache-0: ERR") {
		t.Fatalf("error %v, want the pod's refusal", err)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+ReasonACLLoadFailed+" pod cache-0: ERR") {
		t.Errorf("events %q", got)
	}
	if f.node.evictions != 0 || slices.Contains(f.node.sent, "config set masteruser ") {
		t.Errorf("after a refused load: %d evictions, sent %q", f.node.evictions, f.node.sent)
	}
}

// A pod that does not run is not asked.
func TestACLReloadSkipsAPodThatDoesNotRun(t *testing.T) {
	f := newACLReloadFixture(t)
	f.pod.Status.Phase = corev1.PodPending
	if err := f.reload(t); err != nil {
		t.Fatal(err)
	}
	if len(f.node.sent) != 0 {
		t.Errorf("a pending pod received %q", f.node.sent)
	}
}
