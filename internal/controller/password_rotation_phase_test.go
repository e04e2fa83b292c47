package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

const (
	oldPassword = "old-secret"
	newPassword = "new-secret"
)

// rotationFixture is the password-rotation phase of a RedisReplication of two pods, both
// started with oldPassword (the auth Secret says so), whose password Secret now holds
// newPassword; with sentinels when the test adds them. Every node writes to one journal.
type rotationFixture struct {
	d         *Dependencies
	w         *workloadScope
	cr        *v1beta2.RedisReplication
	pods      []*fakeNode
	sentinels []*fakeNode
	journal   *[]string
	recorder  *events.FakeRecorder
}

func newRotationFixture(t *testing.T, sentinels int) rotationFixture {
	t.Helper()
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: types.UID("rr-uid"), Generation: 1}}
	authSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: builder.AuthSecretName(cr.Name), Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "redis.redis.opstreelabs.in/v1beta2", Kind: "RedisReplication",
			Name: cr.Name, UID: cr.UID, Controller: ptr.To(true)}}},
		Data: map[string][]byte{builder.RedisAuthKey: []byte(`requirepass "` + oldPassword + `"` + "\n" + `masterauth "` + oldPassword + `"` + "\n")}}
	journal := &[]string{}
	nodes := fakeRedis{}
	objects := []client.Object{authSecret}
	var redisPods []corev1.Pod
	var pods []*fakeNode
	for i := range 2 {
		pod := statefulSetPod(cr.Name, i, fmt.Sprintf("10.0.3.%d", i+1))
		objects = append(objects, pod)
		redisPods = append(redisPods, *pod)
		node := &fakeNode{passwords: []string{oldPassword}, config: map[string]string{"requirepass": oldPassword, "masterauth": oldPassword}, journal: journal}
		nodes[pod.Status.PodIP+":6379"] = node
		pods = append(pods, node)
	}
	var watching []watchingSentinels
	var sentinelNodes []*fakeNode
	if sentinels > 0 {
		group := watchingSentinels{name: "watch", masterGroup: "mymaster", password: "sentinel-secret"}
		for i := range sentinels {
			pod := statefulSetPod("watch-sentinel", i, fmt.Sprintf("10.0.4.%d", i+1))
			group.pods = append(group.pods, *pod)
			node := &fakeNode{passwords: []string{"sentinel-secret"}, authPass: map[string]string{"mymaster": oldPassword}, journal: journal}
			nodes[fmt.Sprintf("%s:%d", pod.Status.PodIP, builder.DefaultSentinelPort)] = node
			sentinelNodes = append(sentinelNodes, node)
		}
		watching = append(watching, group)
	}
	kube := fake.NewClientBuilder().WithObjects(objects...).Build()
	recorder := events.NewFakeRecorder(10)
	d := &Dependencies{Client: kube, Recorder: recorder, RedisNodes: nodes}
	w := &workloadScope{memory: NewMemory(), spec: workloadSpec{owner: cr, kind: "RedisReplication", port: 6379,
		pods: func(context.Context) ([]corev1.Pod, error) { return slices.Clone(redisPods), nil }}}
	if sentinels > 0 {
		w.spec.sentinels = func(context.Context) ([]watchingSentinels, error) { return watching, nil }
	}
	w.password = newPassword
	w.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
	return rotationFixture{d: d, w: w, cr: cr, pods: pods, sentinels: sentinelNodes, journal: journal, recorder: recorder}
}

// changes are the journal's commands that change a password, in order.
func (f rotationFixture) changes() []string {
	var out []string
	for _, line := range *f.journal {
		if strings.Contains(line, " config set ") || strings.Contains(line, " acl setuser ") || strings.Contains(line, " sentinel set ") {
			out = append(out, line)
		}
	}
	return out
}

// Without sentinels each pod, found on the old password, changes masterauth then
// requirepass, one pod after the other, and requires the new password alone afterwards.
func TestPasswordRotationChangesPodByPod(t *testing.T) {
	f := newRotationFixture(t, 0)
	if stop, err := f.d.rotatePassword(context.Background(), f.w); stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	want := []string{
		"10.0.3.1:6379 config set masterauth " + newPassword, "10.0.3.1:6379 config set requirepass " + newPassword,
		"10.0.3.2:6379 config set masterauth " + newPassword, "10.0.3.2:6379 config set requirepass " + newPassword,
	}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	for i, n := range f.pods {
		if !slices.Equal(n.passwords, []string{newPassword}) {
			t.Errorf("pod %d accepts %q, want the new password alone", i, n.passwords)
		}
	}
	if got := drainEvents(f.recorder); len(got) != 1 || got[0] != "Normal PasswordRotated 2 pod(s) changed to the password of the Secret in place, 0 already had it" {
		t.Errorf("events %q", got)
	}
}

// Under sentinels the pods accept both passwords and replicate with the new one before any
// sentinel is told it, and require it alone only once every sentinel has it: no sentinel ever
// holds a password a pod refuses.
func TestPasswordRotationUnderSentinelsKeepsTheirLogins(t *testing.T) {
	f := newRotationFixture(t, 3)
	if stop, err := f.d.rotatePassword(context.Background(), f.w); stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	want := []string{
		"10.0.3.1:6379 acl setuser default >" + newPassword, "10.0.3.2:6379 acl setuser default >" + newPassword,
		"10.0.3.1:6379 config set masterauth " + newPassword, "10.0.3.2:6379 config set masterauth " + newPassword,
		"10.0.4.1:26379 sentinel set mymaster auth-pass " + newPassword,
		"10.0.4.2:26379 sentinel set mymaster auth-pass " + newPassword,
		"10.0.4.3:26379 sentinel set mymaster auth-pass " + newPassword,
		"10.0.3.1:6379 config set requirepass " + newPassword, "10.0.3.2:6379 config set requirepass " + newPassword,
	}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("changes\n%q\nwant\n%q", got, want)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.HasSuffix(got[0], "0 already had it; 3 sentinel(s) authenticate with it") {
		t.Errorf("events %q", got)
	}
}

// A pod already on the new password alone (a rotation stopped halfway) is left as it is; the
// others are changed and the event says how many were.
func TestPasswordRotationResumesWherePodsStand(t *testing.T) {
	f := newRotationFixture(t, 0)
	f.pods[0].passwords = []string{newPassword}
	f.pods[0].config = map[string]string{"requirepass": newPassword, "masterauth": newPassword}
	if _, err := f.d.rotatePassword(context.Background(), f.w); err != nil {
		t.Fatal(err)
	}
	if got := f.changes(); len(got) != 2 || !strings.HasPrefix(got[0], "10.0.3.2:6379") || !strings.HasPrefix(got[1], "10.0.3.2:6379") {
		t.Errorf("changes %q, want the second pod's alone", got)
	}
	if got := drainEvents(f.recorder); len(got) != 1 || !strings.Contains(got[0], "1 pod(s) changed to the password of the Secret in place, 1 already had it") {
		t.Errorf("events %q", got)
	}
}

// A pod that refuses both passwords fails the phase, naming it, before any pod is changed.
func TestPasswordRotationRefusedByBothPasswordsChangesNothing(t *testing.T) {
	f := newRotationFixture(t, 0)
	f.pods[1].passwords = []string{"someone-elses"}
	_, err := f.d.rotatePassword(context.Background(), f.w)
	if err == nil || !strings.Contains(err.Error(), "pod rr-1: neither the new nor the old password is accepted") {
		t.Fatalf("error %v, want pod rr-1 refusing both passwords", err)
	}
	if got := f.changes(); len(got) != 0 {
		t.Errorf("changes %q before every pod was reached", got)
	}
}

// A pod that does not run holds the rotation: Progressing, and nothing is sent.
func TestPasswordRotationWaitsForEveryPodToRun(t *testing.T) {
	f := newRotationFixture(t, 0)
	pods, _ := f.w.spec.pods(context.Background())
	pods[1].Status.Phase = corev1.PodPending
	f.w.spec.pods = func(context.Context) ([]corev1.Pod, error) { return pods, nil }
	if stop, err := f.d.rotatePassword(context.Background(), f.w); !stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	progressing := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionProgressing)
	if progressing == nil || progressing.Reason != ReasonPasswordRotation || progressing.Message != "the password changes once pod rr-1 runs" {
		t.Errorf("Progressing %+v", progressing)
	}
	if len(*f.journal) != 0 {
		t.Errorf("sent %q while a pod does not run", *f.journal)
	}
}
