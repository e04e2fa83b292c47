package v1beta2

import "testing"

// statusAccess is what the reconcilers' shell reaches every kind's status through.
type statusAccess interface {
	GetCommonStatus() *CommonStatus
	CompatibleState() (state, reason *string)
}

// TestStatusAccessorsReachTheResourcesOwnStatus: what the shell writes through the accessors
// lands in the resource's status, which is what the status patch sends; an accessor that
// wrote a copy would lose it silently.
func TestStatusAccessorsReachTheResourcesOwnStatus(t *testing.T) {
	redis, cluster, replication, sentinel := &Redis{}, &RedisCluster{}, &RedisReplication{}, &RedisSentinel{}
	for _, tc := range []struct {
		obj    statusAccess
		stored func() (observedGeneration int64, state, reason string)
	}{
		{redis, func() (int64, string, string) {
			return redis.Status.ObservedGeneration, redis.Status.State, redis.Status.Reason
		}},
		{cluster, func() (int64, string, string) {
			return cluster.Status.ObservedGeneration, cluster.Status.State, cluster.Status.Reason
		}},
		{replication, func() (int64, string, string) {
			return replication.Status.ObservedGeneration, replication.Status.State, replication.Status.Reason
		}},
		{sentinel, func() (int64, string, string) {
			return sentinel.Status.ObservedGeneration, sentinel.Status.State, sentinel.Status.Reason
		}},
	} {
		tc.obj.GetCommonStatus().ObservedGeneration = 7
		statePtr, reasonPtr := tc.obj.CompatibleState()
		*statePtr, *reasonPtr = "Failed", "quota"
		generation, state, reason := tc.stored()
		if generation != 7 || state != "Failed" || reason != "quota" {
			t.Errorf("%T: status holds observedGeneration %d, state %q, reason %q; want 7, Failed, quota", tc.obj, generation, state, reason)
		}
	}
}

// TestSetStatusFromTakesTheWholeStatus: the status patch is computed against the status last
// written, which SetStatusFrom restores whole, the kind's own fields included.
func TestSetStatusFromTakesTheWholeStatus(t *testing.T) {
	redis := &Redis{}
	redis.SetStatusFrom(&Redis{Status: RedisStatus{ReadyReplicas: 1, State: "Ready"}})
	cluster := &RedisCluster{}
	cluster.SetStatusFrom(&RedisCluster{Status: RedisClusterStatus{ReadyFollowerReplicas: 2, State: "Ready"}})
	replication := &RedisReplication{}
	replication.SetStatusFrom(&RedisReplication{Status: RedisReplicationStatus{MasterNode: "r-0", State: "Ready"}})
	sentinel := &RedisSentinel{}
	sentinel.SetStatusFrom(&RedisSentinel{Status: RedisSentinelStatus{ReadyReplicas: 3, State: "Ready"}})
	if redis.Status.ReadyReplicas != 1 || cluster.Status.ReadyFollowerReplicas != 2 ||
		replication.Status.MasterNode != "r-0" || sentinel.Status.ReadyReplicas != 3 {
		t.Errorf("statuses not taken whole: %+v %+v %+v %+v", redis.Status, cluster.Status, replication.Status, sentinel.Status)
	}
	for _, obj := range []statusAccess{redis, cluster, replication, sentinel} {
		if state, _ := obj.CompatibleState(); *state != "Ready" {
			t.Errorf("%T: state %q after SetStatusFrom, want Ready", obj, *state)
		}
	}
}
