package clusterplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// agree waits until every member knows every other, linked and healthy, by the hostname it
// announces (if it does), and no node that is no member; and until every member sees each master that serves slots as a master, and no
// replica as one (clients are sent where a node believes slots are). Which master a replica
// follows reaches the other members by gossip seconds later; clients are not routed by it, so
// that is not waited for (replicasListed checks each replica with its own master).
func agree(o *observed) Plan {
	for _, m := range o.members {
		for _, x := range o.members {
			if x.Pod == m.Pod {
				continue
			}
			want := o.self[x.Pod]
			seen, ok := m.View.NodeByID(want.ID)
			switch {
			case !ok:
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not know %s yet", m.Pod, x.Pod)}
			case seen.Link != redis.LinkConnected || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail):
				return Plan{Wait: fmt.Sprintf("waiting for %s to reach %s (link %s, flags %s)", m.Pod, x.Pod, seen.Link, seen.Flags)}
			case want.IsMaster() && want.SlotCount() > 0 && !seen.IsMaster(),
				want.IsReplica() && seen.IsMaster() && seen.SlotCount() > 0:
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not see %s's current role yet", m.Pod, x.Pod)}
			case want.Addr.Hostname != "" && seen.Addr.Hostname != want.Addr.Hostname:
				// With cluster-preferred-endpoint-type hostname, a node that does not know
				// another's hostname redirects clients to it as "?".
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not know %s's hostname %s yet", m.Pod, x.Pod, want.Addr.Hostname)}
			}
		}
		if extra := len(m.View.Nodes) - len(o.members); extra > 0 {
			return Plan{Wait: fmt.Sprintf("waiting for gossip: %s still lists %d node(s) that are no pod of this cluster", m.Pod, extra)}
		}
	}
	return Plan{}
}
