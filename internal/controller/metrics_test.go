package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

func mustTopology(t *testing.T, text string) *redis.Topology {
	t.Helper()
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	return &topo
}

func TestObserveClusterMembers(t *testing.T) {
	cr := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-ns", Name: "shop"}}
	members := []clusterplan.Member{
		{Pod: "shop-leader-0", Replication: redis.Role{Kind: redis.RoleMaster},
			View: mustTopology(t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-8191\n")},
		{Pod: "shop-leader-1", Replication: redis.Role{Kind: redis.RoleMaster},
			View: mustTopology(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:6379@16379 myself,master - 0 0 2 connected 8192-10000 10002\n")},
		// A master without slots (just joined) is not counted.
		{Pod: "shop-leader-2", Replication: redis.Role{Kind: redis.RoleMaster},
			View: mustTopology(t, "cccccccccccccccccccccccccccccccccccccccc 10.0.0.3:6379@16379 myself,master - 0 0 3 connected\n")},
		{Pod: "shop-follower-0", Replication: redis.Role{Kind: redis.RoleSlave, ReplicationState: "connected"}},
		{Pod: "shop-follower-1", Replication: redis.Role{Kind: redis.RoleSlave, ReplicationState: "connecting"}},
		{Pod: "shop-follower-2"}, // did not answer
	}
	observeClusterMembers(cr, members)
	l := resourceLabelValues(cr)
	if l["kind"] != "RedisCluster" {
		t.Fatalf("kind label %q", l["kind"])
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"masters", testutil.ToFloat64(resourceMasters.With(l)), 2},
		{"replicas linked", testutil.ToFloat64(resourceReplicasLinked.With(l)), 1},
		{"slots served", testutil.ToFloat64(clusterSlotsServed.With(l)), 8192 + 1809 + 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	forgetResource(NewMemory(), "RedisCluster", "metrics-ns", "shop")
	// Delete says whether the series was still there (operators of other tests in this
	// package keep their own resources' series, so only this one's are looked at).
	for name, vec := range map[string]interface {
		Delete(prometheus.Labels) bool
	}{"masters": resourceMasters, "replicas linked": resourceReplicasLinked, "slots served": clusterSlotsServed} {
		if vec.Delete(l) {
			t.Errorf("the %s series is left after the cluster is gone", name)
		}
	}
}

func TestObserveReplicationMembers(t *testing.T) {
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-ns", Name: "cache"}}
	observeReplicationMembers(cr, []replicationplan.Member{
		{Pod: "cache-0", Role: &redis.Role{Kind: redis.RoleMaster, ReplicationOffset: 5000}},
		{Pod: "cache-1", Role: &redis.Role{Kind: redis.RoleSlave, ReplicationState: "connected", ReplicationOffset: 4900}},
		{Pod: "cache-2", Role: &redis.Role{Kind: redis.RoleSlave, ReplicationState: "connect", ReplicationOffset: 1000}},
	})
	l := resourceLabelValues(cr)
	if got := testutil.ToFloat64(resourceMasters.With(l)); got != 1 {
		t.Errorf("masters = %v", got)
	}
	if got := testutil.ToFloat64(resourceReplicasLinked.With(l)); got != 1 {
		t.Errorf("replicas linked = %v", got)
	}
	if got := testutil.ToFloat64(resourceReplicasDesired.With(l)); got != 0 {
		t.Errorf("replicas desired = %v without a size", got)
	}
	if got := testutil.ToFloat64(replicationLagBytes.With(l)); got != 4000 {
		t.Errorf("lag = %v, want 4000", got)
	}
	forgetResource(NewMemory(), "RedisReplication", "metrics-ns", "cache")
}

// The lags a master lists in INFO replication, by replica address; other keys are ignored.
func TestAcknowledgmentLags(t *testing.T) {
	got := acknowledgmentLags(map[string]string{
		"role":             "master",
		"connected_slaves": "2",
		"slave0":           "ip=10.0.0.2,port=6379,state=online,offset=8148,lag=0",
		"slave1":           "ip=fd00::3,port=6379,state=online,offset=8000,lag=7",
		"slave_read_repl":  "ip=10.0.0.9,port=6379,lag=99",
		"slave2":           "ip=10.0.0.4,port=6379,state=wait_bgsave,offset=0",
	})
	want := map[string]int64{"10.0.0.2:6379": 0, "[fd00::3]:6379": 7}
	if len(got) != len(want) {
		t.Fatalf("lags %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("lag of %s = %d, want %d", k, got[k], v)
		}
	}
}

// The kind label of the four resources' metrics is their kind as the API knows it, the names
// dashboards and the liveness watcher's owners use.
func TestKindName(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for want, obj := range map[string]client.Object{
		"Redis": &v1beta2.Redis{}, "RedisCluster": &v1beta2.RedisCluster{},
		"RedisReplication": &v1beta2.RedisReplication{}, "RedisSentinel": &v1beta2.RedisSentinel{},
	} {
		if got := kindName(obj); got != want {
			t.Errorf("kindName(%T) = %q, want %q", obj, got, want)
		}
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			t.Fatal(err)
		}
		if gvk.Kind != want {
			t.Errorf("%T is of kind %q in the scheme, labelled %q", obj, gvk.Kind, want)
		}
		if got := kindOf(scheme, obj); got != want {
			t.Errorf("kindOf(%T) = %q, want %q", obj, got, want)
		}
	}
	pod := &corev1.Pod{}
	if got := kindOf(runtime.NewScheme(), pod); got != "" {
		t.Errorf("kindOf of a type the scheme does not know = %q, want its TypeMeta's (none)", got)
	}
	pod.Kind = "Pod"
	if got := kindOf(runtime.NewScheme(), pod); got != "Pod" {
		t.Errorf("kindOf of a type the scheme does not know = %q, want its TypeMeta's", got)
	}
}
