package clusterplan

import (
	"maps"
	"slices"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Sighting is what one observation of the cluster says about who masters each shard, kept so
// that the next observation can tell how a shard's master changed in between. A failover that
// Redis makes after a failure always leaves traces between the two: the masters flag the old
// master fail? then fail, they broadcast FAIL (every node counts the FAIL messages it sends and
// receives), and the old master stops answering for at least the node timeout. A CLUSTER
// FAILOVER made by hand on a replica of a healthy master leaves none of them. A process
// identity (run_id) tells neither apart: a partitioned master keeps its own.
type Sighting struct {
	// Clean: every member answered CLUSTER NODES and CLUSTER INFO, and no view flags any
	// member's node fail? or fail. Only two clean sightings in a row can show a hand-made
	// failover: a silent member may have been the one that failed.
	Clean bool
	// Masters: by leader pod, the pod whose node serves that leader's shard as master (the
	// leader itself, or the master it replicates), "" when its view does not say. Where two
	// members claim the shard's slots in their own lines, the one at the greater config
	// epoch, as Redis decides.
	Masters map[string]string
	// Roles are the members' designed roles, by pod.
	Roles map[string]PodRole
	// FailMessages: by pod, the FAIL messages its node sent and received
	// (cluster_stats_messages_fail_sent + _received); pods whose CLUSTER INFO is unknown are
	// missing.
	FailMessages map[string]uint64
}

// Sight records what members show; failMessages are the FAIL message counts of the pods whose
// CLUSTER INFO was read.
func Sight(members []Member, failMessages map[string]uint64) Sighting {
	s := Sighting{Clean: true, Masters: map[string]string{}, Roles: map[string]PodRole{}, FailMessages: maps.Clone(failMessages)}
	if s.FailMessages == nil {
		s.FailMessages = map[string]uint64{}
	}
	podOf := map[string]string{} // node ID → pod, from each member's own line
	self := map[string]redis.Node{}
	for i := range members {
		m := &members[i]
		s.Roles[m.Pod] = m.Role
		me, ok := myself(m)
		if !ok {
			s.Clean = false
			continue
		}
		if _, read := failMessages[m.Pod]; !read {
			s.Clean = false
		}
		podOf[me.ID] = m.Pod
		self[m.Pod] = me
	}
	for i := range members {
		if members[i].View == nil {
			continue
		}
		for _, n := range members[i].View.Nodes {
			if _, member := podOf[n.ID]; member && (n.Is(redis.FlagPFail) || n.Is(redis.FlagFail)) {
				s.Clean = false
			}
		}
	}
	for i := range members {
		m := &members[i]
		if m.Role != Leader {
			continue
		}
		me, ok := self[m.Pod]
		switch {
		case !ok:
			s.Masters[m.Pod] = ""
		case me.IsMaster() && me.SlotCount() > 0:
			s.Masters[m.Pod] = claimWinner(self, m.Pod)
		case me.IsReplica():
			master := podOf[me.MasterID]
			if n, ok := self[master]; ok && n.IsMaster() && n.SlotCount() > 0 {
				s.Masters[m.Pod] = claimWinner(self, master)
			} else {
				s.Masters[m.Pod] = ""
			}
		default:
			s.Masters[m.Pod] = ""
		}
	}
	return s
}

// claimWinner is the member whose own line wins the slots that pod's own line claims: pod,
// unless another member claims some of them at a greater config epoch. Two members claim one
// slot in their own lines while one of them has not heard of a failover yet: the new master
// before its first message reaches the old one (a sighting reads the pods one after the
// other, so it can catch that moment), or a master back from its nodes.conf after a failover
// it missed (a pod restarted while stuck in a script, or cut off). In both the node that took
// the shard over holds the greater epoch, and the shard is its: a restarted claimer is not
// the shard's master before a failover nobody flagged, and a hand-made failover caught
// half-way is seen as done.
func claimWinner(self map[string]redis.Node, pod string) string {
	me := self[pod]
	winner, epoch := pod, me.ConfigEpoch
	for _, other := range slices.Sorted(maps.Keys(self)) {
		n := self[other]
		if other == pod || !n.IsMaster() || n.ConfigEpoch <= epoch {
			continue
		}
		if slotClaimsOverlap([][]redis.SlotRange{me.Slots, n.Slots}) {
			winner, epoch = other, n.ConfigEpoch
		}
	}
	return winner
}

// HandMade is a shard whose master moved to a follower pod by a failover made by hand.
type HandMade struct {
	// Leader is the shard's leader pod, Master the follower pod that masters it now, Before
	// the pod that mastered it at the previous sighting.
	Leader, Master, Before string
}

// HandMadeFailovers returns the shards whose master moved, between the sightings before and
// now, to a follower pod by a failover nobody but a user can have made: both sightings are
// clean, the same pods answered in both and no node sent or received a FAIL message in
// between (nor restarted, which resets its counts), the previous master still answers, and the
// operator did not ask the new master to take over (asked). Whatever is missing counts as a
// failure, whose failover the leader pod takes back: a fail-back runs CLUSTER FAILOVER, which
// loses no acknowledged write, whereas keeping a master the operator cannot vouch for would
// leave the shard where a failure put it.
func HandMadeFailovers(before, now Sighting, asked func(pod string) bool) []HandMade {
	if !before.Clean || !now.Clean || !maps.Equal(before.FailMessages, now.FailMessages) {
		return nil
	}
	var out []HandMade
	for _, leader := range slices.Sorted(maps.Keys(now.Masters)) {
		master, previous := now.Masters[leader], before.Masters[leader]
		switch {
		case master == "" || previous == "" || master == previous:
		case now.Roles[master] != Follower:
		case asked != nil && asked(master):
		default:
			if _, answers := now.FailMessages[previous]; answers {
				out = append(out, HandMade{Leader: leader, Master: master, Before: previous})
			}
		}
	}
	return out
}
