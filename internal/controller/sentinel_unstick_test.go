package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// Sentinels that hold the master down but whose every replica lost its link too long ago
// for their own rule never fail over by themselves: one of them is asked to, with its
// down-after period raised until it selects a replica (8 s covers a link down for 40 s,
// with the detection lag), then set back, whatever the failover answered. Sentinels that
// are failing over already, or a master they do not hold down, are asked nothing.
func TestUnstickAsksOneSentinelToFailOverWithItsPeriodRaisedThenSetBack(t *testing.T) {
	const group = "mymaster"
	// The sentinel's state: the master held down for 5 s with down-after 3 s (35 s of link
	// allowed), its one replica's link down for 40 s.
	stuckMaster := func(flags string) map[string]string {
		return map[string]string{"ip": "10.0.3.1", "flags": flags, "s-down-time": "5000", "down-after-milliseconds": "3000"}
	}
	lostReplica := []map[string]string{{"ip": "10.0.3.2", "flags": "slave", "slave-priority": "100", "master-link-down-time": "40000"}}
	refused := fakeServerError("NOGOODSLAVE No suitable replica to promote")
	for _, tc := range []struct {
		name    string
		flags   string
		refuse  error
		sent    []string
		stuck   bool // the sentinels are reported stuck
		wantErr error
		warning bool
	}{
		{name: "stuck: asked, then set back", flags: "master,o_down", stuck: true, warning: true,
			sent: []string{"sentinel master " + group, "sentinel replicas " + group, "sentinel set " + group + " down-after-milliseconds 8000",
				"sentinel failover " + group, "sentinel master " + group, "sentinel set " + group + " down-after-milliseconds 3000"}},
		{name: "a refused failover still sets the period back", flags: "master,o_down", refuse: refused, wantErr: refused,
			sent: []string{"sentinel master " + group, "sentinel replicas " + group, "sentinel set " + group + " down-after-milliseconds 8000",
				"sentinel failover " + group, "sentinel set " + group + " down-after-milliseconds 3000"}},
		{name: "failing over already", flags: "master,o_down,failover_in_progress",
			sent: []string{"sentinel master " + group}},
		{name: "the master is not held down", flags: "master",
			sent: []string{"sentinel master " + group}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &fakeNode{masterState: map[string]map[string]string{group: stuckMaster(tc.flags)},
				replicas: map[string][]map[string]string{group: lostReplica},
				refuse:   map[string]error{"sentinel failover": tc.refuse}}
			owner := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "ns", UID: types.UID("replication-uid")}}
			recorder := events.NewFakeRecorder(10)
			u := sentinelUnstick{rec: recorder, waits: status.NewClocks()}

			stuck, err := u.unstick(context.Background(), owner, group, []sentinelPeer{{pod: "rr-s-0", client: &fakeConn{node: node}}})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if (stuck != "") != tc.stuck {
				t.Errorf("reported %q, want stuck: %v", stuck, tc.stuck)
			}
			if !slices.Equal(node.sent, tc.sent) {
				t.Errorf("the sentinel received %q, want %q", node.sent, tc.sent)
			}
			events := drainEvents(recorder)
			if warned := slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning "+ReasonSentinelFailoverUnstuck) }); warned != tc.warning {
				t.Errorf("events %q, want a %s warning: %v", events, ReasonSentinelFailoverUnstuck, tc.warning)
			}
		})
	}
}
