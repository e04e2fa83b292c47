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
	// Clean: every member answered CLUSTER NODES and CLUSTER INFO, no view flags any
	// member's node fail? or fail, and no two members claim one slot in their own lines. Only
	// two clean sightings in a row can show a hand-made failover: a silent member may have
	// been the one that failed, and a second claimer is a master back from a stale nodes.conf.
	Clean bool
	// Masters: by leader pod, the pod whose node serves that leader's shard as master (the
	// leader itself, or the master it replicates), "" when its view does not say.
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
	if s.Clean && selfClaimsOverlap(self) {
		s.Clean = false
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
			s.Masters[m.Pod] = m.Pod
		case me.IsReplica():
			master := podOf[me.MasterID]
			if n, ok := self[master]; ok && n.IsMaster() && n.SlotCount() > 0 {
				s.Masters[m.Pod] = master
			} else {
				s.Masters[m.Pod] = ""
			}
		default:
			s.Masters[m.Pod] = ""
		}
	}
	return s
}

// selfClaimsOverlap: two members' own lines claim one slot. A master back from its nodes.conf
// after a failover it missed (a pod restarted while stuck in a script, or cut off) claims its
// old slots until gossip tells it the shard moved on, while the node that took the shard claims
// them too; a sighting taken then names the stale claimer its shard's master, and the next one
// would show a failover nobody flagged. Other members' views are not consulted: they lag behind
// any failover, a hand-made one too, for up to a gossip round, whereas a hand-made failover
// leaves two claimers only between the new master's election and its first message to the old.
func selfClaimsOverlap(self map[string]redis.Node) bool {
	var claims [][]redis.SlotRange
	for _, me := range self {
		if me.IsMaster() {
			claims = append(claims, me.Slots)
		}
	}
	return slotClaimsOverlap(claims)
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
