package clusterplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// forget removes nodes that no pod is any more (a pod replaced by an empty one, a follower
// scaled away) from every view, so that they are not counted as failed masters or replicas.
// A gone node that still serves slots is left alone until Redis fails its shard over.
func forget(o *observed) Plan {
	var plan Plan
	for _, m := range o.members {
		myMaster := ""
		if me, ok := m.View.Myself(); ok {
			myMaster = me.MasterID
		}
		for _, n := range m.View.Nodes {
			if _, member := o.ids[n.ID]; member || n.Is(redis.FlagHandshake) {
				continue
			}
			if n.SlotCount() > 0 {
				if hasReplicaAmong(o, m.View, n.ID) {
					plan.Wait = fmt.Sprintf("node %s (%s) is gone but still serves %d slots: waiting for its replica to take over", short(n.ID), n.Addr.HostPort(), n.SlotCount())
				} else {
					plan.Problems = appendOnce(plan.Problems, fmt.Sprintf("node %s (%s) is gone and serves %d slots with no replica left: its data is lost unless the pod comes back", short(n.ID), n.Addr.HostPort(), n.SlotCount()))
				}
				continue
			}
			if n.ID == myMaster {
				continue // replicate moves this member first
			}
			plan.Steps = append(plan.Steps, Step{Kind: StepForget, On: m.Pod, NodeID: n.ID,
				Reason: fmt.Sprintf("node %s (%s) is no pod of this cluster", short(n.ID), n.Addr.HostPort())})
		}
	}
	if len(plan.Steps) > 0 {
		plan.Wait, plan.Problems = "", nil
	}
	return plan
}

func hasReplicaAmong(o *observed, view *redis.Topology, masterID string) bool {
	for _, r := range view.ReplicasOf(masterID) {
		if _, member := o.ids[r.ID]; member {
			return true
		}
	}
	return false
}
