package clusterplan

import "fmt"

// spread keeps each shard across two Kubernetes nodes at least. The scheduler places leader
// and follower pods independently, so a follower can end up on its master's node (a pod
// rescheduled, the last follower of a bootstrap left one choice): draining or losing that node
// would then take the whole shard, master and replica at once, and the hand-over of a planned
// deletion has no replica to go to. On a converged cluster (the stages before it have left
// every pod answering and every replica in sync), a replica sharing its master's node swaps with a replica of another shard when that puts each
// off its master's node: first the other replica joins this shard (the colocated one still
// covers it while the newcomer syncs), then moveSpareReplica sends the colocated one to the
// shard left short. One swap at a time; nothing is done while a node name is unknown.
func spread(o *observed) Plan {
	if o.design.Followers == 0 {
		return Plan{}
	}
	shards := o.shards()
	for _, crowded := range shards {
		master := o.ids[crowded.master.ID]
		colocated := o.followerOn(crowded, master.NodeName)
		if colocated == nil {
			continue
		}
		for _, other := range shards {
			if other == crowded {
				continue
			}
			otherMaster := o.ids[other.master.ID]
			if otherMaster.NodeName == "" || otherMaster.NodeName == colocated.NodeName {
				continue // the colocated replica would be no better off there
			}
			for _, id := range other.replicas {
				r := o.ids[id]
				if r.Role != Follower || r.NodeName == "" || r.NodeName == master.NodeName || r.NodeName == otherMaster.NodeName {
					continue
				}
				return Plan{Steps: []Step{{Kind: StepReplicate, On: r.Pod, NodeID: crowded.master.ID,
					Reason: fmt.Sprintf("replicate master %s (%s): its replica %s runs on its node %s, %s takes its place",
						short(crowded.master.ID), master.Pod, colocated.Pod, master.NodeName, r.Pod)}}}
			}
		}
	}
	return Plan{}
}

// followerOn is a follower pod replicating the shard's master on the given node, nil if none.
func (o *observed) followerOn(s *shard, nodeName string) *Member {
	if nodeName == "" {
		return nil
	}
	for _, id := range s.replicas {
		if r := o.ids[id]; r.Role == Follower && r.NodeName == nodeName {
			return r
		}
	}
	return nil
}

// uncolocate exchanges the masters of two new followers' attachments when one would follow
// a master on its own node and the exchange puts both off their master's node: followers are
// attached one by one, so the last may find only its own node's shard left (which spread
// would then have to undo with two full syncs). Each follower must already know its new
// master, or REPLICATE would be refused.
func (o *observed) uncolocate(steps []Step, attached []int) {
	for _, i := range attached {
		if !o.colocated(steps[i]) {
			continue
		}
		for _, j := range attached {
			a, b := steps[i], steps[j]
			a.NodeID, b.NodeID, a.Reason, b.Reason = b.NodeID, a.NodeID, b.Reason, a.Reason
			if i == j || o.colocated(a) || o.colocated(b) || !o.knowsMaster(a) || !o.knowsMaster(b) {
				continue
			}
			steps[i], steps[j] = a, b
			break
		}
	}
}

// colocated: the step makes its pod replicate a master on the pod's own node.
func (o *observed) colocated(step Step) bool {
	m, master := o.byPod(step.On), o.ids[step.NodeID]
	return m != nil && master != nil && master.NodeName != "" && m.NodeName == master.NodeName
}

// knowsMaster: the step's pod already knows the master it is to replicate.
func (o *observed) knowsMaster(step Step) bool {
	m, master := o.byPod(step.On), o.ids[step.NodeID]
	return m != nil && master != nil && m.View != nil && o.knows(m, master)
}
