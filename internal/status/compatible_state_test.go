package status

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
		set   func(Conditions)
		want  want
	}{
		{"cluster ready", "RedisCluster", "", func(c Conditions) { c.Ready("all slots") }, want{"Ready", ClusterReasonReady}},
		{"replication ready", "RedisReplication", "", func(c Conditions) { c.Ready("master") }, want{"Ready", "RedisReplication is ready"}},
		{"sentinel ready", "RedisSentinel", "", func(c Conditions) { c.Ready("quorum") }, want{"Ready", "RedisSentinel is ready"}},
		{"standalone ready", "Redis", "", func(c Conditions) { c.Ready("answers") }, want{"Ready", "Redis is ready"}},

		// A new cluster, and a scale-out, in the reference's order.
		{"cluster leaders start", "RedisCluster", ClusterReasonInitializingLeaders,
			func(c Conditions) { c.Progressing(ReasonPodsNotReady, "1 of 3 leader pods are running") },
			want{ClusterStateInitializing, ClusterReasonInitializingLeaders}},
		{"cluster followers start", "RedisCluster", ClusterReasonInitializingFollowers,
			func(c Conditions) { c.Progressing("ScalingOut", "4 of 6 follower pods are running") },
			want{ClusterStateInitializing, ClusterReasonInitializingFollowers}},
		{"cluster nodes join", "RedisCluster", "", func(c Conditions) { c.Progressing(ReasonBootstrapping, "meet") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},
		{"cluster slots move", "RedisCluster", "", func(c Conditions) { c.Progressing(ReasonResharding, "migrate") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},
		{"cluster rolling update", "RedisCluster", "", func(c Conditions) { c.Progressing(ReasonRollingUpdate, "pod 1 of 6") },
			want{ClusterStateBootstrap, ClusterReasonBootstrapping}},

		// Outages are Degraded, never Failed: Redis or the pods recover them.
		{"cluster outage", "RedisCluster", "", func(c Conditions) { c.Degraded(ReasonOutage, "pod x-leader-1 does not answer") },
			want{ClusterStateBootstrap, "pod x-leader-1 does not answer"}},
		{"replication outage", "RedisReplication", "", func(c Conditions) { c.Degraded(ReasonOutage, "master unreachable") },
			want{"Initializing", "master unreachable"}},
		{"pods restarting", "Redis", "", func(c Conditions) { c.Degraded(ReasonPodsNotReady, "pod r-0 not ready") },
			want{"Initializing", "pod r-0 not ready"}},

		// What needs a human is Failed, with its message.
		{"image cannot be pulled", "RedisCluster", ClusterReasonInitializingLeaders,
			func(c Conditions) { c.Degraded("ImagePullBackOff", "pod x-leader-0: ImagePullBackOff") },
			want{"Failed", "pod x-leader-0: ImagePullBackOff"}},
		{"invalid spec", "RedisReplication", "", func(c Conditions) { c.Degraded(ReasonInvalidSpec, "size") }, want{"Failed", "size"}},
		{"not owned", "Redis", "", func(c Conditions) { c.Degraded(ReasonNotOwned, "Service r") }, want{"Failed", "Service r"}},
		{"topology problem", "RedisCluster", "", func(c Conditions) { c.Degraded(ReasonTopologyProblem, "same node ID") },
			want{"Failed", "same node ID"}},

		// Nothing under way and nothing wrong, but nothing served: on its way.
		{"sentinel with nothing to monitor", "RedisSentinel", "", func(c Conditions) { c.Idle("NoMasterToMonitor", "set it") },
			want{"Initializing", "set it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conditions []metav1.Condition
			tc.set(NewConditions(&conditions, 1))
			state, reason := CompatibleState(StateFacts{Kind: tc.kind, Conditions: conditions, ClusterStage: tc.stage, State: "Ready", Reason: "was ready"})
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
	NewConditions(&conditions, 1).Skipped("hands off")
	if state, reason := CompatibleState(StateFacts{Kind: "Redis", Conditions: conditions, State: "", Reason: ""}); state != "" || reason != "" {
		t.Errorf("got %q / %q for a skipped resource never reconciled", state, reason)
	}
}
