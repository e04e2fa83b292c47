package clusterplan

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// shard is a master that takes replicas: one that serves slots, or a leader pod designed to
// be a master that waits for slots (scale-out). A departing master is no shard: nothing is
// attached to what is about to leave.
type shard struct {
	master redis.Node
	// replicas are the designed members that replicate it, by node ID.
	replicas []string
	leader   *Member // the leader pod in the shard, master or replica
}

// replicate attaches nodes that serve nothing (new followers, pods that came back empty) as
// replicas: follower i to the shard of leader i mod n, unless that keeps it on its master's
// Kubernetes node while another shard on another node needs a replica; an empty leader to the
// shard that has no leader pod left (its follower was promoted). A replica whose master left
// or was emptied by a scale-in moves to a shard that lacks one, and so does a replica in
// excess of the design while another shard lacks one. Departing pods are left as they are.
func replicate(o *observed) Plan {
	shards := o.shards()
	perShard := 0
	if o.design.Leaders > 0 {
		perShard = o.design.Followers / o.design.Leaders
	}
	var plan Plan
	var waits []string
	parked := 0        // designed replicas still with a departing master that serves slots
	var attached []int // steps attaching an empty follower pod, whose targets may be exchanged
	for _, m := range o.members {
		if o.departing(&m) {
			continue
		}
		var p placement
		if o.self[m.Pod].IsReplica() {
			p = o.placeReplica(m, shards, perShard)
		} else {
			p = o.placeEmptyNode(m, shards, perShard)
		}
		switch {
		case p.step != nil:
			if p.step.Kind == StepReplicate && m.Role == Follower && !o.self[m.Pod].IsReplica() {
				attached = append(attached, len(plan.Steps))
			}
			plan.Steps = append(plan.Steps, *p.step)
		case p.wait != "":
			waits = append(waits, p.wait)
		case p.problem != "":
			plan.Problems = append(plan.Problems, p.problem)
		case p.parked:
			parked++
		}
	}
	if len(plan.Steps) > 0 {
		o.uncolocate(plan.Steps, attached)
		plan.Problems = nil
		return plan
	}
	if len(waits) > 0 {
		return Plan{Wait: strings.Join(firstWaits(waits), "; ")}
	}
	if len(plan.Problems) > 0 {
		return plan
	}
	if step, ok := o.moveSpareReplica(shards, perShard); ok {
		return Plan{Steps: []Step{step}}
	}
	if parked > 0 {
		return plan // the replicas come back once their departing master is emptied
	}
	// A shard short of replicas waits for one to attach (a returning node resyncs, a pod
	// restarts): no human is needed; while none is up the cluster reports it as an outage.
	var shortfalls []string
	for _, s := range shards {
		if len(s.replicas) < perShard {
			shortfalls = append(shortfalls, fmt.Sprintf("master %s (%s) has %d of %d replicas", short(s.master.ID), o.podOf(s.master.ID), len(s.replicas), perShard))
		}
	}
	if len(shortfalls) > 0 {
		return Plan{Wait: "waiting for replicas: " + strings.Join(firstWaits(shortfalls), "; ")}
	}
	return plan
}

// placement is what replicate decides for one member: at most one field is set, none when
// the member stays as it is.
type placement struct {
	step    *Step
	wait    string
	problem string
	// parked: a replica of a departing master that still serves slots.
	parked bool
}

// placeReplica leaves a replica with its master unless that master is leaving and serves
// nothing any more: then it moves to a shard that lacks a replica.
func (o *observed) placeReplica(m Member, shards []*shard, perShard int) placement {
	master := o.self[m.Pod].MasterID
	switch {
	case o.followsStaleAddress(m, master):
		// Its node table knows the master's new address, its replication link does not: the
		// link would stay down for ever. REPLICATE again points the link at the table's address.
		at := o.ids[master]
		return placement{step: &Step{Kind: StepReplicate, On: m.Pod, NodeID: master,
			Reason: fmt.Sprintf("replica %s still follows %s, its master %s (%s) is at %s now", m.Pod,
				net.JoinHostPort(m.Replication.MasterIP, strconv.Itoa(m.Replication.MasterPort)), short(master), at.Pod, hostPort(at))}}
	case !m.Replication.LinkUp() && o.forgottenByOthers(m, master):
		// Its master left the cluster (a scale-in, every other node forgot it) and a replica
		// cannot forget its own master: waiting for the link would wait for ever.
	case !m.Replication.LinkUp():
		return placement{wait: fmt.Sprintf("replica %s is syncing with its master", m.Pod)}
	case o.shardOf(shards, master) != nil:
		return placement{}
	case o.departingWithSlots(master):
		return placement{parked: true} // it keeps the leaving shard redundant until its slots have moved
	}
	if step, ok := o.attach(m, shards, perShard, fmt.Sprintf("its master %s (%s) is leaving the cluster", short(master), o.podOf(master))); ok {
		return placement{step: &step}
	}
	return placement{problem: fmt.Sprintf("replica %s follows %s, which is leaving, and no shard needs a replica", m.Pod, o.podOf(master))}
}

// forgottenByOthers: no other member that answered knows the node masterID any more (and at
// least one answered), so it is gone from the cluster, not a master that is only restarting.
func (o *observed) forgottenByOthers(m Member, masterID string) bool {
	answered := 0
	for _, other := range o.members {
		if other.Pod == m.Pod || other.View == nil {
			continue
		}
		answered++
		if _, ok := other.View.NodeByID(masterID); ok {
			return false
		}
	}
	return answered > 0
}

// followsStaleAddress: the replica's link is down and points at an address that is not where
// the master it follows (in its own node table) is now.
func (o *observed) followsStaleAddress(m Member, masterID string) bool {
	at, ok := o.ids[masterID]
	if !ok || m.Replication.Kind != redis.RoleSlave || m.Replication.LinkUp() || m.Replication.MasterIP == "" || at.IP == "" {
		return false
	}
	return m.Replication.MasterIP != at.IP || m.Replication.MasterPort != at.Port
}

// placeEmptyNode attaches a master that serves nothing and has no replicas to a shard as its
// replica, after introducing the two if they do not know each other yet. An empty leader
// whose shard kept its leader pod stays a master: it is a new shard.
func (o *observed) placeEmptyNode(m Member, shards []*shard, perShard int) placement {
	if o.self[m.Pod].SlotCount() > 0 || o.replicaCount(o.idOf[m.Pod]) > 0 {
		return placement{}
	}
	if m.Role == Leader && o.leaderlessShard(m, shards) == nil {
		return placement{} // a new shard: rebalance gives it slots
	}
	meet, wait := o.introduce(m, shards, perShard)
	switch {
	case meet != nil:
		return placement{step: meet}
	case wait != "":
		return placement{wait: wait}
	}
	if step, ok := o.attach(m, shards, perShard, ""); ok {
		return placement{step: &step}
	}
	return placement{problem: fmt.Sprintf("pod %s serves no slots and no shard needs a replica", m.Pod)}
}

// introduce returns, when m does not know the master it would be attached to yet, the MEET
// that introduces them directly (gossip from the seed would take seconds), or a wait while
// their handshake runs.
func (o *observed) introduce(m Member, shards []*shard, perShard int) (*Step, string) {
	target := o.chooseShard(m, shards, perShard)
	if target == nil {
		return nil, ""
	}
	if known, ok := m.View.NodeByID(target.master.ID); ok && !known.Is(redis.FlagHandshake) {
		return nil, ""
	}
	master, ok := o.ids[target.master.ID]
	if !ok || handshaking(m.View, master) {
		return nil, fmt.Sprintf("%s does not know master %s yet (handshake)", m.Pod, short(target.master.ID))
	}
	step := meetStep(&m, master, fmt.Sprintf("introduce its master %s (%s) before it replicates it", short(target.master.ID), master.Pod))
	return &step, ""
}

// attach returns the step that makes m a replica of the shard chosen for it, and counts it
// there so the next member goes elsewhere.
func (o *observed) attach(m Member, shards []*shard, perShard int, why string) (Step, bool) {
	target := o.chooseShard(m, shards, perShard)
	if target == nil {
		return Step{}, false
	}
	target.replicas = append(target.replicas, o.idOf[m.Pod])
	if m.Role == Leader && target.leader == nil {
		target.leader = &m
	}
	reason := fmt.Sprintf("replicate master %s (%s)", short(target.master.ID), o.podOf(target.master.ID))
	if why != "" {
		reason += ": " + why
	}
	return Step{Kind: StepReplicate, On: m.Pod, NodeID: target.master.ID, Reason: reason}, true
}

// moveSpareReplica moves one replica from a shard that has more than the design asks for to
// one that has fewer (after a scale-in Redis gives an emptied master's replicas to the node
// that took its last slot). It takes a follower pod, preferably one off the needy master's node.
func (o *observed) moveSpareReplica(shards []*shard, perShard int) (Step, bool) {
	for _, needy := range shards {
		if len(needy.replicas) >= perShard {
			continue
		}
		for _, rich := range shards {
			if len(rich.replicas) <= perShard {
				continue
			}
			var best *Member
			for _, id := range rich.replicas {
				r := o.ids[id]
				if r.Role != Follower {
					continue
				}
				if best == nil || o.betterToMove(r, best, needy, rich) {
					best = r
				}
			}
			if best == nil {
				continue
			}
			return Step{Kind: StepReplicate, On: best.Pod, NodeID: needy.master.ID,
				Reason: fmt.Sprintf("replicate master %s (%s): %s has %d replicas, it has %d", short(needy.master.ID), o.podOf(needy.master.ID), o.podOf(rich.master.ID), len(rich.replicas), len(needy.replicas))}, true
		}
	}
	return Step{}, false
}

// betterToMove: r is a better replica than best to send from rich to needy: off needy's
// master's node first, then one sharing rich's master's node (see spread).
func (o *observed) betterToMove(r, best *Member, needy, rich *shard) bool {
	if o.sameNode(r, needy) != o.sameNode(best, needy) {
		return !o.sameNode(r, needy)
	}
	return o.sameNode(r, rich) && !o.sameNode(best, rich)
}

func (o *observed) sameNode(m *Member, s *shard) bool {
	master, ok := o.ids[s.master.ID]
	return ok && m.NodeName != "" && master.NodeName == m.NodeName
}

// replicaCount is the number of members that say they replicate the node.
func (o *observed) replicaCount(masterID string) int {
	n := 0
	for _, me := range o.self {
		if me.IsReplica() && me.MasterID == masterID {
			n++
		}
	}
	return n
}

func (o *observed) shards() []*shard {
	var out []*shard
	for _, m := range o.members {
		n := o.self[m.Pod]
		if !n.IsMaster() || o.departing(&m) {
			continue
		}
		if n.SlotCount() == 0 && m.Role != Leader {
			continue
		}
		s := &shard{master: n}
		if m.Role == Leader {
			s.leader = o.ids[n.ID]
		}
		for _, r := range o.members {
			me := o.self[r.Pod]
			if me.IsReplica() && me.MasterID == n.ID && !o.departing(&r) {
				s.replicas = append(s.replicas, me.ID)
				if r.Role == Leader {
					s.leader = o.ids[me.ID]
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func (o *observed) shardOf(shards []*shard, masterID string) *shard {
	for _, s := range shards {
		if s.master.ID == masterID {
			return s
		}
	}
	return nil
}

// departingWithSlots reports whether the node is a departing member that still serves slots.
func (o *observed) departingWithSlots(id string) bool {
	m, ok := o.ids[id]
	return ok && o.departing(m) && o.self[m.Pod].SlotCount() > 0
}

// leaderlessShard is the shard an empty leader belongs to: one whose follower was promoted and
// that has no leader pod left, preferably the one of its own ordinal.
func (o *observed) leaderlessShard(m Member, shards []*shard) *shard {
	var best *shard
	for _, s := range shards {
		if s.leader != nil || s.master.SlotCount() == 0 {
			continue
		}
		if master, ok := o.ids[s.master.ID]; ok && master.Role == Follower && master.Ordinal%o.design.Leaders == m.Ordinal {
			return s
		}
		if best == nil {
			best = s
		}
	}
	return best
}

func (o *observed) chooseShard(m Member, shards []*shard, perShard int) *shard {
	if m.Role == Leader {
		return o.leaderlessShard(m, shards)
	}
	designed := o.member(Leader, m.Ordinal%max(o.design.Leaders, 1))
	var candidates []*shard
	for _, s := range shards {
		if len(s.replicas) < perShard {
			candidates = append(candidates, s)
		}
	}
	score := func(s *shard) int {
		points := 0
		if s.leader != nil && s.leader.Pod == designed.Pod {
			points += 2
		}
		if master, ok := o.ids[s.master.ID]; !ok || master.NodeName == "" || master.NodeName != m.NodeName {
			points += 4 // never on its master's node when another choice exists
		}
		return points
	}
	var best *shard
	for _, s := range candidates {
		if best == nil || score(s) > score(best) {
			best = s
		}
	}
	return best
}

// replicasListed waits, once slots are where they belong, until each replica's link (ROLE)
// goes to the master it says it follows, which lists it among its replicas. Slot moves do not
// wait for it: a master learns of a new replica only when the two next exchange a ping, which
// in a cluster of a dozen nodes can take seconds.
func replicasListed(o *observed) Plan {
	for _, m := range o.members {
		if me := o.self[m.Pod]; me.IsReplica() {
			master, ok := o.ids[me.MasterID]
			if !ok || !m.Replication.LinkUp() || m.Replication.MasterIP != master.IP || m.Replication.MasterPort != master.Port {
				return Plan{Wait: fmt.Sprintf("waiting for replica %s's link to its master %s", m.Pod, o.podOf(me.MasterID))}
			}
			if seen, ok := master.View.NodeByID(me.ID); !ok || !seen.IsReplica() || seen.MasterID != me.MasterID {
				return Plan{Wait: fmt.Sprintf("waiting for gossip: master %s does not list its replica %s yet", master.Pod, m.Pod)}
			}
		}
	}
	return Plan{}
}
