package clusterplan

import (
	"maps"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Behind NodePorts a pod's address (its Kubernetes node's IP and its Service's node ports)
// outlives the pod: a pod recreated without its nodes.conf (no volume for it) is a new, empty
// node at the very address where the cluster knows the old one. Redis then goes wrong in two
// ways, both seen on real servers: the other nodes, finding another node ID there, mark the
// old one noaddr, which Redis never flags failing, so its replica never takes its shard over;
// and that replica, which re-links to its master's address, full-syncs from the empty node
// and drops every key of the shard. So a pod that starts without a node identity waits,
// before Redis listens, while its address still belongs to a master serving slots that a
// replica could take over (builder's address-holder gate): its address stays dark, the master
// is flagged failing in the node timeout, and its replica is elected as after any crash.

// AddressHolders says, by pod, which node holds the pod's address for the gate: the master
// serving slots each answering pod is, and, for a pod that does not answer (stopped, or
// waiting at the gate), the node previous named for it while some answering view still
// shows that node serving slots and a replica of it that is not failing (data the gate
// protects). With no member answering nothing is known, and previous stands.
func AddressHolders(members []Member, previous map[string]string) map[string]string {
	var views []*redis.Topology
	holders := map[string]string{}
	answers := map[string]bool{}
	for i := range members {
		m := &members[i]
		if m.View == nil {
			continue
		}
		views = append(views, m.View)
		answers[m.Pod] = true
		if me, ok := m.View.Myself(); ok && me.IsMaster() && me.SlotCount() > 0 {
			holders[m.Pod] = me.ID
		}
	}
	if len(views) == 0 {
		return maps.Clone(previous)
	}
	for pod, id := range previous {
		if answers[pod] {
			continue // its own line says what it is now
		}
		if servesWithReplica(views, id) {
			holders[pod] = id
		}
	}
	return holders
}

// servesWithReplica reports whether some view shows node id as a master serving slots and
// some view a replica of it that is not failing.
func servesWithReplica(views []*redis.Topology, id string) bool {
	serves, replicated := false, false
	for _, v := range views {
		if n, ok := v.NodeByID(id); ok && n.IsMaster() && n.SlotCount() > 0 {
			serves = true
		}
		for _, r := range v.ReplicasOf(id) {
			if !r.Is(redis.FlagFail) {
				replicated = true
			}
		}
	}
	return serves && replicated
}
