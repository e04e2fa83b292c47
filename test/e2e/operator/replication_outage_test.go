package operator

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// The master of the RedisReplication sample cut off the network while its pod keeps running:
// within a minute the resource says Degraded (Outage) naming the master, with one Warning event,
// never Failed; the operator promotes a replica, and once the old master is back the
// replication ends Ready with every key, the old master a replica.
func TestReplicationMasterCutOffIsAnOutage(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "replication-cut")
	sb.Apply(t, ns, sample(t, "redis_v1beta2_redisreplication_minimal.yaml"))
	ctx := context.Background()
	const name = "redis-replication"
	get := func(ctx context.Context) (*v1beta2.RedisReplication, error) {
		cr := &v1beta2.RedisReplication{}
		return cr, sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr)
	}
	ready := func(since time.Time) *v1beta2.RedisReplication {
		t.Helper()
		var cr *v1beta2.RedisReplication
		sb.WaitFor(t, ns, "RedisReplication Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			var err error
			if cr, err = get(ctx); err != nil {
				return false, "", err
			}
			r := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			ok := cr.Status.State == "Ready" && r != nil && r.Status == metav1.ConditionTrue &&
				!r.LastTransitionTime.Time.Before(since.Truncate(time.Second)) && cr.Status.ReadyReplicas == 3
			return ok, fmt.Sprintf("%s master %q: %s", cr.Status.State, cr.Status.MasterNode, cr.Status.Reason), nil
		})
		return cr
	}
	cr := ready(time.Time{})
	master := getPod(t, ns, cr.Status.MasterNode)
	rdb := sb.Redis(t, master)
	for i := range 50 {
		if err := rdb.Set(ctx, "key-"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rdb.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v", n, err)
	}

	var states []string
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // every state the resource shows, to check it never reads Failed
		defer close(sampled)
		for {
			if cr, err := get(ctx); err == nil && (len(states) == 0 || states[len(states)-1] != cr.Status.State) {
				states = append(states, cr.Status.State)
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	heal := cutOff(t, ns, master.Name)
	sb.WaitFor(t, ns, "the outage named on the resource", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr, err := get(ctx)
		if err != nil {
			return false, "", err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		ok := d != nil && d.Status == metav1.ConditionTrue && d.Reason == "Outage" && strings.Contains(d.Message, master.Name)
		return ok, fmt.Sprintf("%s; %+v", cr.Status.State, d), nil
	})
	promoted := ""
	sb.WaitFor(t, ns, "a replica promoted", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr, err := get(ctx)
		if err != nil {
			return false, "", err
		}
		promoted = cr.Status.MasterNode
		return promoted != master.Name, promoted, nil
	})
	heal()
	cr = ready(faultTime())
	close(stop)
	<-sampled
	if cr.Status.MasterNode != promoted {
		t.Errorf("master %s, want the promoted %s", cr.Status.MasterNode, promoted)
	}
	newMaster := sb.Redis(t, getPod(t, ns, cr.Status.MasterNode))
	for i := range 50 {
		if v, err := newMaster.Get(ctx, "key-"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("key-%d = %d, %v", i, v, err)
		}
	}
	if role, err := sb.Redis(t, getPod(t, ns, master.Name)).Do(ctx, "ROLE").Slice(); err != nil || role[0] != "slave" {
		t.Errorf("the old master after the heal: ROLE %v, %v", role, err)
	}
	t.Logf("states: %v", states)
	for _, st := range states {
		if st == "Failed" {
			t.Errorf("an outage that heals by itself read Failed: %v", states)
		}
	}
	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	outages := 0
	for _, e := range events.Items {
		if e.Reason == "Outage" && e.Type == "Warning" {
			outages++
			if e.Series != nil && e.Series.Count > 1 {
				t.Errorf("the Outage event was sent %d times", e.Series.Count)
			}
		}
	}
	if outages != 1 {
		t.Errorf("%d Outage Warning events, want 1 for the one outage", outages)
	}
}

// cutOff cuts the pod off the network and returns what heals it; the test's end heals it too
// when the test did not.
func cutOff(t *testing.T, ns, pod string) (heal func()) {
	t.Helper()
	if err := sb.Fault.Cut(context.Background(), ns, pod); err != nil {
		t.Fatal(err)
	}
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = sb.Fault.Heal(context.Background(), ns, pod)
		}
	})
	return func() {
		t.Helper()
		if err := sb.Fault.Heal(context.Background(), ns, pod); err != nil {
			t.Fatal(err)
		}
		healed = true
	}
}
