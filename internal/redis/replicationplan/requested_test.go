package replicationplan

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestPlanRequestedFailover(t *testing.T) {
	master := Member{Pod: "r-0", Ordinal: 0, IP: "10.0.0.1", Port: 6379, Ready: true, Role: &redis.Role{Kind: redis.RoleMaster, ReplicationOffset: 100}}
	replica := func(pod string, ordinal int, offset int64, state string, ready bool) Member {
		return Member{Pod: pod, Ordinal: ordinal, IP: "10.0.0.9", Port: 6379, Ready: ready,
			Role: &redis.Role{Kind: redis.RoleSlave, MasterIP: "10.0.0.1", MasterPort: 6379, ReplicationState: state, ReplicationOffset: offset}}
	}
	synced := []Member{master, replica("r-1", 1, 90, "connected", true), replica("r-2", 2, 100, "connected", true)}
	for _, c := range []struct {
		name    string
		members []Member
		target  string
		want    Requested
		refuse  string
	}{
		{"any picks the replica holding the most", synced, AnyReplica, Requested{To: "r-2"}, ""},
		{"a named in-sync replica", synced, "r-1", Requested{To: "r-1"}, ""},
		{"the master itself: done", synced, "r-0", Requested{Done: true}, ""},
		{"an unknown pod is invalid", synced, "r-9", Requested{Invalid: true}, "not a pod"},
		{"a replica whose link is down is refused", []Member{master, replica("r-1", 1, 90, "connect", true)}, "r-1", Requested{}, "could lose writes"},
		{"a replica not ready is refused", []Member{master, replica("r-1", 1, 90, "connected", false)}, "r-1", Requested{}, "could lose writes"},
		{"no replica in sync: refused", []Member{master, replica("r-1", 1, 90, "sync", true)}, AnyReplica, Requested{}, "no ready replica"},
		{"no master: refused", []Member{replica("r-1", 1, 90, "connect", true)}, AnyReplica, Requested{}, "no master"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := PlanRequestedFailover("r-0", c.members, c.target)
			if got.Done != c.want.Done || got.To != c.want.To || got.Invalid != c.want.Invalid || (got.Refuse == "") != (c.refuse == "") || !strings.Contains(got.Refuse, c.refuse) {
				t.Errorf("got %+v, want %+v refusing %q", got, c.want, c.refuse)
			}
		})
	}
}
