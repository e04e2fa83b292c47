package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCompatibleState: the state and reason for each situation a resource can be in, derived
// from the conditions alone (plus the cluster's stage), so that state Ready comes exactly with
// Ready=True and Failed exactly with what needs a human.
func TestCompatibleState(t *testing.T) {
	type want struct{ state, reason string }
	for _, tc := range []struct {
		name  string
		kind  string
		stage string
		set   func(conditionSet)
		want  want
	}{
		{"cluster ready", "RedisCluster", "", func(c conditionSet) { c.ready("all slots") }, want{"Ready", ClusterReasonReady}},
		{"replication ready", "RedisReplication", "", func(c conditionSet) { c.ready("master") }, want{"Ready", "RedisReplication is ready"}},
		{"sentinel ready", "RedisSentinel", "", func(c conditionSet) { c.ready("quorum") }, want{"Ready", "RedisSentinel is ready"}},
		{"standalone ready", "Redis", "", func(c conditionSet) { c.ready("answers") }, want{"Ready", "Redis is ready"}},

		// A new cluster, and a scale-out, in the reference's order.
		{"cluster leaders start", "RedisCluster", ClusterReasonInitializingLeaders,
			func(c conditionSet) { c.progressing(ReasonPodsNotReady, "1 of 3 leader pods are running") },
			want{ClusterStateInitializing, ClusterReasonInitializingLeaders}},
		{"cluster followers start", "RedisCluster", ClusterReasonInitializingFollowers,
			func(c conditionSet) { c.progressing(ReasonScalingOut, "4 of 6 follower pods are running") },
			want{ClusterStateInitializing, ClusterReasonInitializingFollowers}},
		{"cluster nodes join", "RedisCluster", "", func(c conditionSet) { c.progressing(ReasonBootstrapping, "meet") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},
		{"cluster slots move", "RedisCluster", "", func(c conditionSet) { c.progressing(ReasonResharding, "migrate") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},
		{"cluster rolling update", "RedisCluster", "", func(c conditionSet) { c.progressing(ReasonRollingUpdate, "pod 1 of 6") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},

		// Outages are Degraded, never Failed: Redis or the pods recover them.
		{"cluster outage", "RedisCluster", "", func(c conditionSet) { c.degraded(ReasonOutage, "pod x-leader-1 does not answer") },
			want{ClusterStateBootstrap, "pod x-leader-1 does not answer"}},
		{"replication outage", "RedisReplication", "", func(c conditionSet) { c.degraded(ReasonOutage, "master unreachable") },
			want{"Initializing", "master unreachable"}},
		{"pods restarting", "Redis", "", func(c conditionSet) { c.degraded(ReasonPodsNotReady, "pod r-0 not ready") },
			want{"Initializing", "pod r-0 not ready"}},

		// What needs a human is Failed, with its message.
		{"image cannot be pulled", "RedisCluster", ClusterReasonInitializingLeaders,
			func(c conditionSet) { c.degraded("ImagePullBackOff", "pod x-leader-0: ImagePullBackOff") },
			want{"Failed", "pod x-leader-0: ImagePullBackOff"}},
		{"invalid spec", "RedisReplication", "", func(c conditionSet) { c.degraded(ReasonInvalidSpec, "size") }, want{"Failed", "size"}},
		{"not owned", "Redis", "", func(c conditionSet) { c.degraded(ReasonNotOwned, "Service r") }, want{"Failed", "Service r"}},
		{"topology problem", "RedisCluster", "", func(c conditionSet) { c.degraded(ReasonTopologyProblem, "same node ID") },
			want{"Failed", "same node ID"}},

		// Nothing under way and nothing wrong, but nothing served: on its way.
		{"sentinel with nothing to monitor", "RedisSentinel", "", func(c conditionSet) { c.idle(ReasonNoMasterToMonitor, "set it") },
			want{"Initializing", "set it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conditions []metav1.Condition
			tc.set(conditionSet{conditions: &conditions, generation: 1})
			state, reason := compatibleState(stateFacts{kind: tc.kind, conditions: conditions, clusterStage: tc.stage, state: "Ready", reason: "was ready"})
			if (want{state, reason}) != tc.want {
				t.Errorf("got %q / %q, want %q / %q", state, reason, tc.want.state, tc.want.reason)
			}
			if (state == "Ready") != (conditions[0].Type == "Ready" && conditions[0].Status == metav1.ConditionTrue) {
				t.Errorf("state %q disagrees with the Ready condition %+v", state, conditions[0])
			}
		})
	}
}

// Before any condition is written (a resource skipped from its creation) the status stays.
func TestCompatibleStateKeepsWhatNothingContradicts(t *testing.T) {
	var conditions []metav1.Condition
	conditionSet{conditions: &conditions, generation: 1}.skipped("hands off")
	if state, reason := compatibleState(stateFacts{kind: "Redis", conditions: conditions, state: "", reason: ""}); state != "" || reason != "" {
		t.Errorf("got %q / %q for a skipped resource never reconciled", state, reason)
	}
}
