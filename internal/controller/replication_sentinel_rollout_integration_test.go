//go:build integration

package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// A rolling update of a replication that RedisSentinels watch, their down-after period 30 s:
// the replicas are replaced first, then the master's role is handed over through the sentinels
// (writes paused, replicas caught up, SENTINEL FAILOVER, the old master made a replica) before
// its pod is replaced. A client that finds the master through the sentinels, as applications
// do, loses no write the master acknowledged and waits far less than the down-after period a
// replaced master would cost.
func TestSentinelWatchedRollingUpdateHandsOverThroughThem(t *testing.T) {
	t.Parallel()
	f, oldMaster, w := watchedBySlowSentinelsUnderWrites(t)

	const revision = "rev-2"
	sts := f.statefulSet()
	sts.Status.UpdateRevision, sts.Status.CurrentRevision = revision, "rev-1"
	if err := f.c.Status().Update(f.ctx, sts); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	waitUntil(t, 3*time.Minute, "every pod replaced by one of "+revision, func() error {
		f.replaceDeletedWithRevision("rr", revision)
		var pods corev1.PodList
		if err := f.c.List(f.ctx, &pods, client.InNamespace(f.cr.Namespace), client.MatchingLabels{builder.LabelApp: "rr"}); err != nil {
			return err
		}
		for i := range pods.Items {
			if got := pods.Items[i].Labels[appsv1.ControllerRevisionHashLabelKey]; got != revision {
				return fmt.Errorf("pod %s at revision %q", pods.Items[i].Name, got)
			}
		}
		return nil
	})
	t.Logf("every pod replaced %s after the update", time.Since(started).Round(time.Second))
	master := f.waitMasterMovedOff(oldMaster, 30*time.Second)
	f.waitReady(master)
	acknowledged, longest := w.stop()
	t.Logf("%d writes acknowledged; the longest wait between two of them %s", len(acknowledged), longest.Round(time.Millisecond))
	if len(acknowledged) < 100 {
		t.Fatalf("only %d writes acknowledged during the rolling update", len(acknowledged))
	}
	// The sentinels would hold the replaced master down only after 30 s: a hand-over waits far less.
	if longest > 10*time.Second {
		t.Errorf("writes waited %s during the rolling update, as long as the sentinels' own failover", longest.Round(time.Millisecond))
	}
	rdb := f.redis(master)
	for _, key := range acknowledged {
		if got, err := rdb.Get(f.ctx, key).Result(); err != nil || got != key {
			t.Errorf("acknowledged key %s on the new master %s: %q, %v", key, master, got, err)
		}
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	handedOver := 0
	for _, e := range events.Items {
		if e.Reason == ReasonSentinelHandOver {
			t.Logf("event %s: %s", e.Type, e.Note)
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Note, "from "+oldMaster+" to "+master) {
				handedOver++
			}
		}
		if e.Reason == "RollingUpdate" && strings.Contains(e.Note, "which the sentinels fail over") {
			t.Errorf("the master's pod was replaced while it was master: %s", e.Note)
		}
	}
	if handedOver != 1 {
		t.Errorf("%d events of a hand-over from %s to %s through the sentinels, want 1", handedOver, oldMaster, master)
	}
}

// The master's pod of a replication that RedisSentinels watch (down-after 30 s) is deleted
// gracefully, as a drain does: while its preStop hook holds the process up, the operator hands
// the role over through the sentinels, so a client that finds the master through them loses no
// acknowledged write and waits far less than the sentinels' own failover would make it.
func TestSentinelWatchedMasterDeletedHandsOverThroughThem(t *testing.T) {
	t.Parallel()
	f, oldMaster, w := watchedBySlowSentinelsUnderWrites(t)
	time.Sleep(time.Second)

	// Graceful: the pod stays terminating (no kubelet confirms it) and its process runs on.
	pod := &corev1.Pod{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: oldMaster}, pod); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Delete(f.ctx, pod, client.GracePeriodSeconds(30)); err != nil {
		t.Fatal(err)
	}
	var master string
	waitUntil(t, 30*time.Second, "the terminating "+oldMaster+" a replica of a promoted pod", func() error {
		role, err := f.redis(oldMaster).Do(f.ctx, "role").Slice()
		if err != nil {
			return err
		}
		if len(role) < 2 || role[0] != "slave" {
			return fmt.Errorf("ROLE %v", role)
		}
		for _, name := range []string{"rr-1", "rr-2"} {
			if f.kubelet.pod(name).ip == role[1] {
				master = name
				return nil
			}
		}
		return fmt.Errorf("%s follows %v", oldMaster, role[1])
	})
	time.Sleep(3 * time.Second) // writes find the new master through the sentinels
	acknowledged, longest := w.stop()
	t.Logf("%d writes acknowledged; the longest wait between two of them %s", len(acknowledged), longest.Round(time.Millisecond))
	if longest > 10*time.Second {
		t.Errorf("writes waited %s, as long as the sentinels' own failover", longest.Round(time.Millisecond))
	}
	rdb := f.redis(master)
	for _, key := range acknowledged {
		if got, err := rdb.Get(f.ctx, key).Result(); err != nil || got != key {
			t.Errorf("acknowledged key %s on the new master %s: %q, %v", key, master, got, err)
		}
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	handedOver := 0
	for _, e := range events.Items {
		if e.Reason == ReasonSentinelHandOver {
			t.Logf("event %s: %s", e.Type, e.Note)
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Note, "from "+oldMaster+" to "+master+" before its pod stops") {
				handedOver++
			}
		}
	}
	if handedOver != 1 {
		t.Errorf("%d events of a hand-over from %s to %s through the sentinels, want 1", handedOver, oldMaster, master)
	}
	f.replaceDeletedWithRevision("rr", "")
	f.waitReady(master)
	f.checkTopology(master, nil)
}

// watchedBySlowSentinelsUnderWrites is a Ready replication watched by a RedisSentinel whose
// down-after period is 30 s, so that a failover within the test is the operator's hand-over,
// and a writer through the sentinels; it returns the master.
func watchedBySlowSentinelsUnderWrites(t *testing.T) (*replicationFixture, string, *sentinelWriter) {
	t.Helper()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sn := f.createRedisSentinel(func(sn *v1beta2.RedisSentinel) {
		sn.Spec.RedisSentinelConfig.DownAfterMilliseconds = "30000"
		sn.Spec.RedisSentinelConfig.FailoverTimeout = "60000"
	})
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	f.waitSentinelsReadyOn(sn, f.kubelet.pod("rr-0").ip)
	f.waitReady("rr-0")
	var addrs []string
	for _, name := range sentinels.podNames() {
		addrs = append(addrs, sentinels.pod(name).addr(builder.DefaultSentinelPort))
	}
	return f, f.cr.Status.MasterNode, startSentinelWriter(t, addrs, f.password)
}

// replaceDeletedWithRevision does what the StatefulSet controller and the kubelet do for a
// pod of sts deleted in the API: a new pod of the same ordinal, of revision (unless ""), at a
// new address with an empty volume.
func (f *replicationFixture) replaceDeletedWithRevision(sts, revision string) {
	f.t.Helper()
	var set appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: sts}, &set); err != nil {
		f.t.Fatal(err)
	}
	for _, name := range f.kubelet.podNames() {
		var pod corev1.Pod
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod)
		if client.IgnoreNotFound(err) != nil {
			f.t.Fatal(err)
		}
		if err == nil && pod.DeletionTimestamp == nil {
			continue
		}
		ordinal, err := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
		if err != nil {
			f.t.Fatal(err)
		}
		f.kubelet.deletePod(f.ctx, f.cr.Namespace, name, syscall.SIGTERM)
		f.kubelet.startPod(f.ctx, &set, ordinal, "")
		if revision == "" {
			continue
		}
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
			f.t.Fatal(err)
		}
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
		if err := f.c.Update(f.ctx, &pod); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sentinelWriter writes keys through a client that finds the master by asking the sentinels,
// as applications do, and keeps those the master acknowledged.
type sentinelWriter struct {
	cancel func()
	done   chan struct{}

	mu           sync.Mutex
	acknowledged []string
	longest      time.Duration
}

func startSentinelWriter(t *testing.T, sentinels []string, password string) *sentinelWriter {
	t.Helper()
	rdb := goredis.NewFailoverClient(&goredis.FailoverOptions{
		MasterName: builder.DefaultMasterGroupName, SentinelAddrs: sentinels, Password: password,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	w := &sentinelWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := time.Now()
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("roll:%d", i)
			if err := rdb.Set(ctx, key, key, 0).Err(); err == nil {
				now := time.Now()
				w.mu.Lock()
				w.acknowledged = append(w.acknowledged, key)
				w.longest = max(w.longest, now.Sub(last))
				w.mu.Unlock()
				last = now
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the writes and returns the acknowledged keys and the longest wait between two
// acknowledged writes.
func (w *sentinelWriter) stop() ([]string, time.Duration) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acknowledged, w.longest
}
