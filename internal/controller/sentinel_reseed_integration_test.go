//go:build integration

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// A sentinel that monitors an address where no pod runs and knows no replica (one started
// from a seed naming a master whose pod went before it connected) can never learn where the
// master is: the operator starts its pod again, once, and the new one, seeded with the
// current master, joins the others. The two sentinels that follow the master are left alone.
func TestBlindSentinelStartsAgainFromTheSeed(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sn := f.createRedisSentinel()
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	masterIP := f.kubelet.pod("rr-0").ip
	f.waitSentinelsReadyOn(sn, masterIP)
	uids := map[string]string{}
	for _, name := range sentinels.podNames() {
		var pod corev1.Pod
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		uids[name] = string(pod.UID)
	}

	// sn-sentinel-2 forgets the group and monitors an address nothing listens on.
	blind := sentinels.pod("sn-sentinel-2")
	c := goredis.NewClient(&goredis.Options{Addr: blind.addr(builder.DefaultSentinelPort)})
	defer func() { _ = c.Close() }()
	group := builder.DefaultMasterGroupName
	nowhere := fmt.Sprintf("127.%d.%d.250", processNet, f.kubelet.net)
	for _, cmd := range [][]any{{"sentinel", "remove", group}, {"sentinel", "monitor", group, nowhere, 6379, 2}} {
		if err := c.Do(f.ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}

	// Found at the next health check (every 30 s while Ready), deleted sentinelReseedGrace later.
	waitUntil(t, 90*time.Second, "the blind sentinel's pod deleted", func() error {
		var pod corev1.Pod
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "sn-sentinel-2"}, &pod)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && pod.DeletionTimestamp == nil {
			return fmt.Errorf("sn-sentinel-2 still running; RedisSentinel conditions %s", describeConditions(sn.Status.Conditions))
		}
		return nil
	})
	sentinels.replaceDeleted(f.ctx, f.cr.Namespace, "sn-sentinel")
	f.waitSentinelsReadyOn(sn, masterIP)
	if ip := sentinels.pod("sn-sentinel-2").ip; ip == blind.ip {
		t.Fatalf("sn-sentinel-2 was not started again (still at %s)", ip)
	}

	for _, name := range []string{"sn-sentinel-0", "sn-sentinel-1"} {
		var pod corev1.Pod
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		if string(pod.UID) != uids[name] {
			t.Errorf("%s, which followed the master, was replaced too", name)
		}
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	reseeded := 0
	for _, e := range events.Items {
		if e.Reason == ReasonSentinelReseeded {
			reseeded++
			if !strings.Contains(e.Note, "sn-sentinel-2") || !strings.Contains(e.Note, nowhere) || !strings.Contains(e.Note, masterIP) {
				t.Errorf("the event does not say which sentinel, what it monitored and where the master is: %s", e.Note)
			}
		}
	}
	if reseeded != 1 {
		t.Errorf("%d %s events, want 1", reseeded, ReasonSentinelReseeded)
	}
}
