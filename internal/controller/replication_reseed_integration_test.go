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
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// An embedded sentinel that monitors an address where no pod runs and knows no replica can
// never learn where the master is: the replication says so instead of Ready, the operator
// starts that sentinel's pod again, once, and the new one, seeded with the current master,
// joins the others. No Redis pod is touched (the sentinels run in a StatefulSet of their own),
// the master stays where it was with every key, and the other sentinels are left alone.
func TestBlindEmbeddedSentinelStartsAgainFromTheSeed(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "reseed")
	sentinels := f.addEmbeddedSentinels()
	masterIP := f.kubelet.pod("rr-0").ip
	uids := map[string]string{}
	for _, name := range append(f.kubelet.podNames(), sentinels.podNames()...) {
		var pod corev1.Pod
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		uids[name] = string(pod.UID)
	}

	// rr-s-2 forgets the group and monitors an address nothing listens on.
	blind := sentinels.pod("rr-s-2")
	c := goredis.NewClient(&goredis.Options{Addr: blind.addr(builder.DefaultSentinelPort)})
	defer func() { _ = c.Close() }()
	group := builder.EmbeddedMasterGroupName
	nowhere := fmt.Sprintf("127.%d.%d.250", processNet, f.kubelet.net)
	for _, cmd := range [][]any{{"sentinel", "remove", group}, {"sentinel", "monitor", group, nowhere, 6379, 2}} {
		if err := c.Do(f.ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}

	// Found at the next sentinel poll (5 s while Ready), deleted sentinelReseedGrace later;
	// meanwhile the replication is not Ready and names the blind sentinel.
	toldBlind := false
	waitUntil(t, 60*time.Second, "the blind sentinel's pod deleted", func() error {
		var cr v1beta2.RedisReplication
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), &cr); err != nil {
			return err
		}
		if ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady); ready != nil &&
			strings.Contains(ready.Message, "rr-s-2 cannot learn where the master is") {
			toldBlind = true
		}
		var pod corev1.Pod
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "rr-s-2"}, &pod)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && pod.DeletionTimestamp == nil {
			return fmt.Errorf("rr-s-2 still running; RedisReplication conditions %s", describeConditions(cr.Status.Conditions))
		}
		return nil
	})
	if !toldBlind {
		t.Error("the replication never said that rr-s-2 cannot learn where the master is")
	}
	sentinels.replaceDeleted(f.ctx, f.cr.Namespace, "rr-s")
	f.waitReady("rr-0")
	if ip := sentinels.pod("rr-s-2").ip; ip == blind.ip {
		t.Fatalf("rr-s-2 was not started again (still at %s)", ip)
	}

	// Every sentinel, the new one included, monitors the master and counts the two others.
	for _, name := range sentinels.podNames() {
		sc, err := f.op.pool.Client(sentinels.pod(name).endpoint(builder.DefaultSentinelPort, redis.Auth{}))
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, name+" on the master with its two peers", func() error {
			state, err := sc.SentinelMaster(f.ctx, group)
			if err != nil {
				return err
			}
			if state["ip"] != masterIP || state["num-other-sentinels"] != "2" {
				return fmt.Errorf("SENTINEL MASTER %s = ip %s others %s", group, state["ip"], state["num-other-sentinels"])
			}
			return nil
		})
	}
	for name, uid := range uids {
		if name == "rr-s-2" {
			continue
		}
		var pod corev1.Pod
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		if string(pod.UID) != uid {
			t.Errorf("%s was replaced too", name)
		}
	}
	f.checkTopology("rr-0", map[string]string{"before": "reseed"})

	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	reseeded := 0
	for _, e := range events.Items {
		switch e.Reason {
		case ReasonSentinelReseeded:
			reseeded++
			if e.Regarding.Kind != "RedisReplication" || !strings.Contains(e.Note, "rr-s-2") ||
				!strings.Contains(e.Note, nowhere) || !strings.Contains(e.Note, masterIP) {
				t.Errorf("the event is not the replication's or does not say which sentinel, what it monitored and where the master is: %s %s", e.Regarding.Kind, e.Note)
			}
		case "Promote":
			t.Errorf("the master moved: %s", e.Note)
		}
	}
	if reseeded != 1 {
		t.Errorf("%d %s events, want 1", reseeded, ReasonSentinelReseeded)
	}
}
