//go:build integration

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// A master pod that is back within its sentinels' down-after period answers as a replica
// waiting for its master (every replication pod starts so), and refuses its replicas a sync.
// The sentinels hold it down only once it has reported a replica for down-after plus two INFO
// periods: by then (1 s down-after here) every replica's link has been down longer than the
// ten down-after periods a sentinel allows, so they abort every failover, for good. The
// operator asks one sentinel to fail over with a longer down-after for the moment: a replica
// becomes master with every key, the old master its replica, and the period is set back.
func TestSentinelsThatCanPromoteNoReplicaAreAskedToFailOver(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "unstuck")
	sn := f.createRedisSentinel()
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	f.waitSentinelsReadyOn(sn, f.kubelet.pod("rr-0").ip)

	// As a master pod started again within down-after is: a replica of the address where
	// nothing listens, whose replicas have lost their link and cannot sync from it. (A real
	// restart here, with 1 s down-after, often misses a sentinel PING, which holds it down at
	// once while the replicas' links are young: a failover the sentinels can make.)
	m := f.redis("rr-0")
	if err := m.Do(f.ctx, "replicaof", redis.NoMasterHost, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(f.ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}

	promoted := f.waitMasterMovedOff("rr-0", 2*time.Minute)
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "unstuck"})
	f.waitSentinelsReadyOn(sn, f.kubelet.pod(promoted).ip)

	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, e := range events.Items {
		if e.Reason == ReasonSentinelFailoverUnstuck {
			asked++
			t.Logf("event: %s", e.Note)
			if !strings.Contains(e.Note, "sn-sentinel-") || !strings.Contains(e.Note, "asked sentinel") {
				t.Errorf("the event does not say which sentinel was asked: %s", e.Note)
			}
		}
	}
	if asked == 0 {
		t.Errorf("no %s event: the sentinels failed over by themselves, and the test proved nothing", ReasonSentinelFailoverUnstuck)
	}
	// Every sentinel keeps the down-after period the RedisSentinel sets.
	for _, name := range sentinels.podNames() {
		c := goredis.NewClient(&goredis.Options{Addr: sentinels.pod(name).addr(builder.DefaultSentinelPort)})
		waitUntil(t, 10*time.Second, name+"'s down-after period", func() error {
			fields, err := c.Do(f.ctx, "sentinel", "master", builder.DefaultMasterGroupName).Result()
			if err != nil {
				return err
			}
			if s := fmt.Sprint(fields); !strings.Contains(s, "down-after-milliseconds:1000") && !strings.Contains(s, "down-after-milliseconds 1000") {
				return fmt.Errorf("SENTINEL MASTER: %s", s)
			}
			return nil
		})
		_ = c.Close()
	}
}
