package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// operatorEvents lists the operator's own events in a namespace (the kubelet's and the
// StatefulSet controller's are theirs to repeat).
func operatorEvents(t *testing.T, ns string) []eventsv1.Event {
	t.Helper()
	var events eventsv1.EventList
	if err := sb.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var ours []eventsv1.Event
	for _, e := range events.Items {
		if e.ReportingController == "redis-operator" {
			ours = append(ours, e)
		}
	}
	return ours
}

func describeEvent(e eventsv1.Event) string {
	return fmt.Sprintf("%s %s/%s %s: %s", e.Type, e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
}

// The samples of every kind brought up together: the
// operator's events tell each step once (no series, no duplicate), and once every resource is
// Ready, half a minute alone (through a periodic health check of each) tells nothing more.
func TestEventsReadAsATimeline(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "timeline")
	for _, file := range []string{"redis_v1beta2_redisreplication_minimal.yaml", "redis_v1beta2_redissentinel_minimal.yaml",
		"redis_v1beta2_redis_minimal.yaml", "redis_v1beta2_rediscluster_minimal.yaml"} {
		sb.Apply(t, ns, sample(t, file))
	}
	resources := []client.Object{
		&v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "redis-replication"}},
		&v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Name: "redis-sentinel"}},
		&v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "redis-standalone"}},
		&v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "redis-cluster"}},
	}
	sb.WaitFor(t, ns, "every sample Ready", clusterReadyTimeout, func(ctx context.Context) (bool, string, error) {
		for _, obj := range resources {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj); err != nil {
				return false, "", err
			}
			var conditions []metav1.Condition
			switch cr := obj.(type) {
			case *v1beta2.RedisReplication:
				conditions = cr.Status.Conditions
			case *v1beta2.RedisSentinel:
				conditions = cr.Status.Conditions
			case *v1beta2.Redis:
				conditions = cr.Status.Conditions
			case *v1beta2.RedisCluster:
				conditions = cr.Status.Conditions
			}
			if !meta.IsStatusConditionTrue(conditions, v1beta2.ConditionReady) {
				return false, obj.GetName() + " not Ready", nil
			}
		}
		return true, "", nil
	})
	time.Sleep(2 * time.Second) // the last Ready's event reaches the API
	assertOnce := func(events []eventsv1.Event) {
		t.Helper()
		seen := map[string]bool{}
		for _, e := range events {
			if e.Series != nil && e.Series.Count > 1 {
				t.Errorf("told %d times: %s", e.Series.Count, describeEvent(e))
			}
			if seen[describeEvent(e)] {
				t.Errorf("told twice: %s", describeEvent(e))
			}
			seen[describeEvent(e)] = true
		}
	}
	bootstrap := operatorEvents(t, ns)
	if len(bootstrap) == 0 {
		t.Fatal("the operator told nothing of the bootstrap")
	}
	for _, e := range bootstrap {
		t.Logf("bootstrap: %s", describeEvent(e))
	}
	assertOnce(bootstrap)
	time.Sleep(35 * time.Second) // a periodic health check of each is every 30 s at most
	idle := operatorEvents(t, ns)
	told := map[string]bool{}
	for _, e := range bootstrap {
		told[string(e.UID)] = true
	}
	for _, e := range idle {
		if !told[string(e.UID)] {
			t.Errorf("told while Ready and idle: %s", describeEvent(e))
		}
	}
	assertOnce(idle)
}
