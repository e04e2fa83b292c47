package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// A rolling update is under way while a pod runs an old revision, and after the last one is
// deleted for its replacement until the cluster is Ready again (or the grace runs out): the
// replica it was is missing by plan then, which the status must not call an outage.
func TestRollingUpdateLastsUntilTheReplacedPodIsBack(t *testing.T) {
	pod := func(name, revision string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: revision},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "c-leader"}}}}
	}
	now := time.Now()
	s := &clusterScope{workloadScope: workloadScope{memory: NewMemory()},
		cr:        &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uid-c"}},
		revisions: map[string]string{"c-leader": "new"}}
	s.leaders = []corev1.Pod{pod("c-leader-0", "new"), pod("c-leader-1", "new")}
	if s.rollingUpdateOn(now) {
		t.Error("every pod at the update revision and none replaced: no rolling update")
	}
	s.leaders = append(s.leaders, pod("c-leader-2", "old"))
	if !s.rollingUpdateOn(now) {
		t.Error("a pod at an old revision: a rolling update")
	}

	// The last old pod deleted for its replacement: none is old any more.
	s.leaders = s.leaders[:2]
	s.memory.waits.Started(s.cr.UID, replacementKey, now)
	if !s.rollingUpdateOn(now.Add(30 * time.Second)) {
		t.Error("30 s after the last pod was deleted for its replacement: still a rolling update")
	}
	if s.rollingUpdateOn(now.Add(replacementGrace + time.Second)) {
		t.Error("past the grace, a replacement that is not back is what it looks like")
	}
	s.memory.waits.Stopped(s.cr.UID, replacementKey) // Ready again
	if s.rollingUpdateOn(now.Add(time.Second)) {
		t.Error("Ready again: the rolling update is over")
	}
}

// A master the rolling update handed over keeps running, as a replica answering MOVED, for
// handOverSettle before its pod is replaced: clients whose slot maps still name it follow the
// redirect instead of waiting out a dial to a pod that is gone.
func TestHandedOverMasterSettlesBeforeItsReplacement(t *testing.T) {
	now := time.Now()
	s := &clusterScope{workloadScope: workloadScope{memory: NewMemory()},
		cr: &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uid-c"}}}
	if wait := s.handOverSettling("c-leader-1", now); wait != 0 {
		t.Errorf("a pod never handed over waits %s, want none", wait)
	}
	s.memory.waits.Started(s.cr.UID, handOverKey("c-leader-1"), now)
	if wait := s.handOverSettling("c-leader-1", now.Add(time.Second)); wait != handOverSettle-time.Second {
		t.Errorf("a second after the hand-over it waits %s, want %s", wait, handOverSettle-time.Second)
	}
	if wait := s.handOverSettling("c-leader-0", now.Add(time.Second)); wait != 0 {
		t.Errorf("another pod waits %s, want none", wait)
	}
	if wait := s.handOverSettling("c-leader-1", now.Add(handOverSettle)); wait != 0 {
		t.Errorf("once settled it waits %s, want none", wait)
	}
}
