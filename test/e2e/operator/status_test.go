package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// clusterStatus is one distinct status a cluster showed.
type clusterStatus struct {
	state, reason   string
	ready, degraded metav1.ConditionStatus
	degradedBecause string
	at              time.Time
}

func (st clusterStatus) String() string {
	return fmt.Sprintf("%s %s / %s (Ready=%s Degraded=%s %s)", st.at.Format("15:04:05.0"), st.state, st.reason, st.ready, st.degraded, st.degradedBecause)
}

// recordStatus samples the cluster's status every 100 ms until the returned function is
// called, which returns the distinct statuses seen, in order.
func (c *cluster) recordStatus() func() []clusterStatus {
	stop, done := make(chan struct{}), make(chan struct{})
	var seen []clusterStatus
	go func() {
		defer close(done)
		for {
			cr := &v1beta2.RedisCluster{}
			if err := sb.Client.Get(c.ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cr); err == nil {
				st := clusterStatus{state: cr.Status.State, reason: cr.Status.Reason}
				if r := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady); r != nil {
					st.ready = r.Status
				}
				if d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded); d != nil {
					st.degraded, st.degradedBecause = d.Status, d.Reason+": "+d.Message
				}
				if n := len(seen); n == 0 || seen[n-1].state != st.state || seen[n-1].reason != st.reason ||
					seen[n-1].ready != st.ready || seen[n-1].degraded != st.degraded || seen[n-1].degradedBecause != st.degradedBecause {
					st.at = time.Now()
					seen = append(seen, st)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []clusterStatus {
		close(stop)
		<-done
		return seen
	}
}

// A leader cut off the network is an outage: within a minute the cluster says Degraded
// (Outage) naming the pod, with a Warning event, and never Failed (nothing needs a human).
// Once healed, the recovery (the old leader resyncing, the operator's fail-back) is progress:
// Degraded does not come back, and the cluster ends Ready with every key.
func TestClusterOutageIsDegradedAndItsRecoveryIsNot(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, strings.Replace(sample(t, "redis_v1beta2_rediscluster_minimal.yaml"), "name: redis-cluster", "name: cut", 1))
	c.waitReady(start)
	c.writeKeys("o", 300)
	statuses := c.recordStatus()
	victim := c.name + "-leader-1"
	if err := sb.Fault.Cut(c.ctx, c.ns, victim); err != nil {
		t.Fatal(err)
	}
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = sb.Fault.Heal(context.Background(), c.ns, victim)
		}
	})
	sb.WaitFor(t, c.ns, "the outage named on the cluster", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := c.get()
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		ok := d != nil && d.Status == metav1.ConditionTrue && d.Reason == "Outage" && strings.Contains(d.Message, victim)
		return ok, fmt.Sprintf("%s / %s; %+v", cr.Status.State, cr.Status.Reason, d), nil
	})
	time.Sleep(10 * time.Second) // the cluster fails the leader over meanwhile
	if err := sb.Fault.Heal(c.ctx, c.ns, victim); err != nil {
		t.Fatal(err)
	}
	healed = true
	healedAt := time.Now()
	c.waitReady(healedAt)
	time.Sleep(2 * time.Second)
	seen := statuses()
	c.assertShape()
	c.readKeys("o", 300)

	degradedSeen, recovered := false, false
	for _, st := range seen {
		t.Logf("status %s", st)
		if (st.state == "Ready") != (st.ready == metav1.ConditionTrue) {
			t.Errorf("state %q with Ready=%s", st.state, st.ready)
		}
		if st.state == "Failed" {
			t.Errorf("an outage that heals by itself showed Failed: %s", st)
		}
		if st.degraded == metav1.ConditionTrue {
			degradedSeen = true
			if recovered {
				t.Errorf("Degraded again during the recovery after the heal: %s", st)
			}
		}
		if st.at.After(healedAt) && st.degraded != metav1.ConditionTrue {
			recovered = true
		}
	}
	if !degradedSeen {
		t.Error("the outage never showed Degraded")
	}
	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	outageEvents := 0
	for _, e := range events.Items {
		if e.Reason == "Outage" && e.Type == "Warning" {
			outageEvents++
		}
	}
	if outageEvents == 0 || outageEvents > 6 {
		t.Errorf("%d Outage Warning events, want a few (one per distinct outage)", outageEvents)
	}
	// The operator could not dial the cut pod: go-redis said so, through the operator's logger.
	assertOperatorLogIsStructured(t, c.ctx, "go-redis")
}

// checkScaleStatus asserts what a scale shows: the reference's strings in its order
// (initializing leaders, initializing followers, bootstrapping, ready), state Ready exactly
// with Ready=True, and never Failed or Degraded (a scale is no outage).
func (c *cluster) checkScaleStatus(what string, seen []clusterStatus) {
	c.t.Helper()
	rank := map[string]int{"RedisCluster is initializing leaders": 1, "RedisCluster is initializing followers": 2,
		"RedisCluster is bootstrapping": 3, "RedisCluster is ready": 4}
	for len(seen) > 1 && seen[0].state == "Ready" { // before the resize reached the operator
		seen = seen[1:]
	}
	last := 0
	for i, st := range seen {
		c.t.Logf("%s status %d: %s", what, i, st)
		if (st.state == "Ready") != (st.ready == metav1.ConditionTrue) {
			c.t.Errorf("%s: state %q with Ready=%s", what, st.state, st.ready)
		}
		if st.state == "Failed" || st.degraded == metav1.ConditionTrue {
			c.t.Errorf("%s: showed %s", what, st)
		}
		r, known := rank[st.reason]
		if !known {
			c.t.Errorf("%s: reason %q is none of the reference's", what, st.reason)
			continue
		}
		if r < last {
			c.t.Errorf("%s: %q after %q, against the reference's order", what, st.reason, seen[i-1].reason)
		}
		last = r
	}
	if len(seen) < 2 || seen[0].state == "Ready" {
		c.t.Errorf("%s: the status never showed the scale under way: %v", what, seen)
	}
}
