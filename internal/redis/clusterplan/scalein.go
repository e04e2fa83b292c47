package clusterplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// ScaleIn is what a scale-in may do now, decided on one read of every pod's view.
type ScaleIn struct {
	// Leaders and Followers are how many pods the StatefulSets keep for now.
	Leaders, Followers int
	// Reason names the first pod kept back and why; empty when the design's counts apply.
	Reason string
	// Steps re-announce the slots that a view still maps to a departing node which, by its
	// own word, gave them away: BUMPEPOCH on each slot's owner (its claim then wins over the
	// departing node's in every node's gossip, replicas' too), then SETSLOT NODE on each
	// master that lags. Bump steps come first.
	Steps []Step
}

// PlanScaleIn decides which departing pods may go: a scale-in removes the highest ordinals,
// and a pod goes only once every view agrees it serves nothing: it serves no slot by its own
// word, no member's view maps a slot to it, it takes part in no slot move (its own, or one
// another member shows with it), and every member answers (a master that does not may still
// map slots to it). A departing pod that does not answer is kept: what it holds is unknown. A
// departing replica is kept while its master serves slots and has no other replica to stay (a
// departing master's replica, most often): a shard keeps its redundancy until it serves
// nothing. A view that maps slots to a departing node that gave them away would, once the
// pod is gone, show them served by a gone node with no replica: its data lost, and a node
// with a greater config epoch would take the slots from their owner. The steps mend it.
func PlanScaleIn(design Design, members []Member) ScaleIn {
	o := &observed{design: design}
	out := ScaleIn{Leaders: design.Leaders, Followers: design.Followers}
	nodes := map[string]redis.Node{} // node ID → what the member says of itself
	silent := ""                     // the first member whose view is unknown
	for i := range members {
		if me, ok := myself(&members[i]); ok {
			nodes[me.ID] = me
		} else if silent == "" {
			silent = members[i].Pod
		}
	}
	var stale []staleMapping
	for i := range members {
		m := &members[i]
		if !o.departing(m) {
			continue
		}
		why := ""
		me, ok := myself(m)
		var mapped []staleMapping
		if ok {
			mapped = staleMappings(members, m, me.ID)
			stale = append(stale, mapped...)
		}
		switch {
		case !ok:
			why = m.Pod + " does not answer"
		case me.SlotCount() > 0:
			why = fmt.Sprintf("%s still serves %d slots", m.Pod, me.SlotCount())
		case len(me.Migrating) > 0 || len(me.Importing) > 0:
			why = m.Pod + " takes part in a slot move"
		case movesWith(members, m, me.ID) != "":
			why = movesWith(members, m, me.ID)
		case len(mapped) > 0:
			why = fmt.Sprintf("%s's view still maps %d slots (%s) to %s, which serves none", mapped[0].view.Pod, len(mapped[0].slots), formatRanges(slotRanges(mapped[0].slots)), m.Pod)
		case silent != "" && me.IsMaster():
			why = fmt.Sprintf("%s does not answer: whether its view still maps slots to %s is unknown", silent, m.Pod)
		case me.IsReplica() && o.lastReplicaOfServingMaster(members, nodes, m, me):
			why = fmt.Sprintf("%s is the replica of %s, which still serves %d slots", m.Pod, podWithID(members, me.MasterID), nodes[me.MasterID].SlotCount())
		}
		if why == "" {
			continue
		}
		if m.Role == Leader && m.Ordinal+1 > out.Leaders {
			out.Leaders = m.Ordinal + 1
		}
		if m.Role == Follower && m.Ordinal+1 > out.Followers {
			out.Followers = m.Ordinal + 1
		}
		if out.Reason == "" {
			out.Reason = why
		}
	}
	out.Steps = reannounce(members, stale)
	return out
}

// Keep returns how many leader and follower pods the StatefulSets must keep for now (see
// PlanScaleIn, whose steps it leaves out).
func Keep(design Design, members []Member) (leaders, followers int, reason string) {
	p := PlanScaleIn(design, members)
	return p.Leaders, p.Followers, p.Reason
}

// Departing reports whether the member is beyond the design: a scale-in removes it once it
// serves nothing.
func Departing(design Design, m *Member) bool {
	return (&observed{design: design}).departing(m)
}

// staleMapping is a view that maps slots to a departing node which serves none of them by its
// own word (a SETSLOT NODE that did not reach that member, gossip that lost to the departing
// node's config epoch).
type staleMapping struct {
	view      *Member
	departing *Member
	slots     []int
}

// staleMappings are the other members' views that map slots to the departing member m (node id).
func staleMappings(members []Member, m *Member, id string) []staleMapping {
	var out []staleMapping
	for i := range members {
		v := &members[i]
		if v.Pod == m.Pod || v.View == nil {
			continue
		}
		if n, ok := v.View.NodeByID(id); ok && n.SlotCount() > 0 {
			out = append(out, staleMapping{view: v, departing: m, slots: slotList(n.Slots)})
		}
	}
	return out
}

// movesWith says which other member shows a slot move from or to the node id (only a node's own
// line shows its moves), "" when none does.
func movesWith(members []Member, m *Member, id string) string {
	for i := range members {
		v := &members[i]
		if v.Pod == m.Pod {
			continue
		}
		me, ok := myself(v)
		if !ok {
			continue
		}
		for _, mig := range me.Migrating {
			if mig.NodeID == id {
				return fmt.Sprintf("%s is moving slot %d to %s", v.Pod, mig.Slot, m.Pod)
			}
		}
		for _, mig := range me.Importing {
			if mig.NodeID == id {
				return fmt.Sprintf("%s is importing slot %d from %s", v.Pod, mig.Slot, m.Pod)
			}
		}
	}
	return ""
}

// reannounce returns the steps that bring stale views in line with the slots' owners: the
// member whose own line claims a slot, as a master, owns it. A slot no member claims has no
// owner to announce (a move interrupted, which finishMigrations completes first): the pod
// stays, with no step. A lagging replica takes no SETSLOT: the owner's bumped epoch reaches it
// by gossip.
func reannounce(members []Member, stale []staleMapping) []Step {
	if len(stale) == 0 {
		return nil
	}
	owners := map[int]*Member{} // slot → member that claims it
	for i := range members {
		if me, ok := myself(&members[i]); ok && me.IsMaster() {
			for _, slot := range slotList(me.Slots) {
				owners[slot] = &members[i]
			}
		}
	}
	var bumps, sets []Step
	bumped := map[string]bool{}
	for _, st := range stale {
		bySlotOwner := map[string][]int{}
		var order []*Member
		for _, slot := range st.slots {
			owner, ok := owners[slot]
			if !ok || owner.Pod == st.departing.Pod {
				continue
			}
			if _, seen := bySlotOwner[owner.Pod]; !seen {
				order = append(order, owner)
			}
			bySlotOwner[owner.Pod] = append(bySlotOwner[owner.Pod], slot)
		}
		lagger, _ := myself(st.view)
		for _, owner := range order {
			slots := bySlotOwner[owner.Pod]
			ownerID := mustID(owner)
			// A new epoch for an owner to which some view still maps slots it gave away would
			// make that view win: it would take those slots from their owner with an UPDATE,
			// and Redis before 7.2 deletes their keys there. The owner is bumped once the views
			// agree (slotMapsAgree corrects them); the departing pod waits meanwhile.
			if !bumped[owner.Pod] && viewMappingUnclaimedSlots(members, owner) == "" {
				bumped[owner.Pod] = true
				bumps = append(bumps, Step{Kind: StepBumpEpoch, On: owner.Pod, NodeID: ownerID,
					Reason: fmt.Sprintf("%s's view still maps slots %s to departing %s: the owner's claim must win", st.view.Pod, formatRanges(slotRanges(slots)), st.departing.Pod)})
			}
			if lagger.IsMaster() {
				sets = append(sets, Step{Kind: StepSetSlotNode, On: st.view.Pod, NodeID: ownerID, To: owner.Pod, Slots: slotRanges(slots),
					Reason: fmt.Sprintf("its view maps slots %s to departing %s, they are %s's", formatRanges(slotRanges(slots)), st.departing.Pod, owner.Pod)})
			}
		}
	}
	return append(bumps, sets...)
}

func mustID(m *Member) string {
	me, _ := myself(m)
	return me.ID
}

// lastReplicaOfServingMaster: the departing replica m follows a master that serves slots and
// that no designed member replicates.
func (o *observed) lastReplicaOfServingMaster(members []Member, nodes map[string]redis.Node, m *Member, me redis.Node) bool {
	master, ok := nodes[me.MasterID]
	if !ok || master.SlotCount() == 0 {
		return false
	}
	if o.design.Leaders == 0 || o.design.Followers < o.design.Leaders {
		// The design gives some shards no replica: only a departing master keeps one.
		if owner := memberWithID(members, me.MasterID); owner == nil || !o.departing(owner) {
			return false
		}
	}
	for i := range members {
		other := &members[i]
		if other.Pod == m.Pod || o.departing(other) {
			continue
		}
		if n, ok := myself(other); ok && n.IsReplica() && n.MasterID == me.MasterID {
			return false
		}
	}
	return true
}

func memberWithID(members []Member, id string) *Member {
	for i := range members {
		if me, ok := myself(&members[i]); ok && me.ID == id {
			return &members[i]
		}
	}
	return nil
}

func podWithID(members []Member, id string) string {
	if m := memberWithID(members, id); m != nil {
		return m.Pod
	}
	return "node " + short(id)
}
