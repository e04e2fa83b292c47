package replicationplan

import (
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestBestReplica(t *testing.T) {
	cases := []struct {
		name       string
		candidates []Member
		want       string
	}{
		{name: "no candidate", want: ""},
		{
			name:       "the most advanced offset wins over a lower ordinal",
			candidates: []Member{pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90)), pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 95))},
			want:       "rr-2",
		},
		{
			name:       "equal offsets: the lowest ordinal, whatever the order given",
			candidates: []Member{pod(3, "10.0.0.4", replica("10.0.0.1", "connected", 95)), pod(10, "10.0.0.5", replica("10.0.0.1", "connected", 95)), pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 95))},
			want:       "rr-2",
		},
		{
			name:       "a pod that did not answer never ranks, even with the lowest ordinal",
			candidates: []Member{pod(0, "10.0.0.1", nil), pod(4, "10.0.0.5", replica("10.0.0.1", "connect", 1))},
			want:       "rr-4",
		},
		{
			name:       "only pods that did not answer",
			candidates: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", nil)},
			want:       "",
		},
		{
			name:       "link status does not rank: the link-down replica that got further wins",
			candidates: []Member{pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90)), pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 91))},
			want:       "rr-2",
		},
		{
			name:       "readiness does not rank",
			candidates: []Member{ready(pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90))), pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 91))},
			want:       "rr-2",
		},
		{
			name:       "a role is not a rank: a master that got further is chosen if offered",
			candidates: []Member{pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)), pod(2, "10.0.0.3", &redis.Role{Kind: redis.RoleMaster, ReplicationOffset: 91})},
			want:       "rr-2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var candidates []*Member
			for i := range c.candidates {
				candidates = append(candidates, &c.candidates[i])
			}
			got := ""
			if best := BestReplica(candidates); best != nil {
				got = best.Pod
			}
			if got != c.want {
				t.Errorf("BestReplica = %q, want %q", got, c.want)
			}
		})
	}
}

func ready(m Member) Member {
	m.Ready = true
	return m
}

func outdated(m Member) Member {
	m.Outdated = true
	return m
}
