package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The tests in this file pin facts of the compatibility contract that users' runbooks,
// dashboards and scripts depend on (see DEVELOPERS.md): each one names the fact it checks.

// TestContainerNames: the Redis or sentinel container is named after its StatefulSet (runbooks
// run kubectl exec/logs -c <statefulset name>), the exporter container is redis-exporter.
func TestContainerNames(t *testing.T) {
	tests := []struct {
		name  string
		build func() (*Objects, error)
		// want maps each StatefulSet to the names of its containers, in order.
		want map[string][]string
	}{{
		name:  "standalone with exporter",
		build: func() (*Objects, error) { return BuildRedis(RedisInput{CR: fullRedis(), Password: testPassword}) },
		want:  map[string][]string{"cache": {"cache", "redis-exporter", "log-shipper"}},
	}, {
		name:  "standalone without exporter",
		build: func() (*Objects, error) { return BuildRedis(RedisInput{CR: minimalRedis()}) },
		want:  map[string][]string{"cache": {"cache"}},
	}, {
		name: "cluster",
		build: func() (*Objects, error) {
			return BuildRedisCluster(RedisClusterInput{CR: fullCluster(), Password: testPassword})
		},
		want: map[string][]string{
			"shards-leader":   {"shards-leader", "redis-exporter", "log-shipper"},
			"shards-follower": {"shards-follower", "redis-exporter", "log-shipper"},
		},
	}, {
		name: "replication with embedded sentinels",
		build: func() (*Objects, error) {
			return BuildRedisReplication(RedisReplicationInput{CR: fullReplication(), Password: testPassword,
				SentinelPassword: testSentinelPassword, MasterHost: testMasterHost})
		},
		want: map[string][]string{
			"repl":          {"repl", "redis-exporter", "log-shipper"},
			"repl-sentinel": {"repl-sentinel"},
		},
	}, {
		name: "sentinel",
		build: func() (*Objects, error) {
			return BuildRedisSentinel(RedisSentinelInput{CR: fullSentinel(), Password: testSentinelPassword,
				MasterPassword: testPassword, MasterHost: testMasterHost})
		},
		want: map[string][]string{"watch-sentinel": {"watch-sentinel", "redis-exporter", "log-shipper"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := mustBuild(t)(tc.build())
			if len(o.StatefulSets) != len(tc.want) {
				t.Errorf("StatefulSets %v, want %d", names(o.StatefulSets), len(tc.want))
			}
			for sts, want := range tc.want {
				s := o.StatefulSet(sts)
				if s == nil {
					t.Fatalf("no StatefulSet %s", sts)
				}
				wantEqual(t, sts+" containers", containerNames(s.Spec.Template.Spec.Containers), want)
			}
		})
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
