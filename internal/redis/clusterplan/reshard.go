package clusterplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// rebalanceTolerance is how far, in percent of its fair share, a master's slot count may be
// off before the slots are moved: slots moved by hand by a small amount stay where they are.
const rebalanceTolerance = 2

// departing reports whether the member is beyond the design: a scale-in removes it.
func (o *observed) departing(m *Member) bool {
	if m.Role == Leader {
		return m.Ordinal >= o.design.Leaders
	}
	return m.Ordinal >= o.design.Followers
}

// finishMigrations completes every slot move that was started and not finished (the operator
// stopped midway, or a move was started by hand): a move only ever goes forward, to the node
// that was importing the slot, so no key is left behind on a node that no longer serves it.
func finishMigrations(o *observed) Plan {
	moves := map[[2]string][]int{} // source pod, destination pod → slots
	var problems []string
	add := func(from, to *Member, slot int) {
		key := [2]string{from.Pod, to.Pod}
		if !slices.Contains(moves[key], slot) {
			moves[key] = append(moves[key], slot)
		}
	}
	for i := range o.members {
		m := &o.members[i]
		me := o.self[m.Pod]
		// Valkey 8 copies a primary's move states to its replicas; only a master's own are
		// moves to finish (a replica refuses SETSLOT).
		if !me.IsMaster() {
			continue
		}
		for _, mig := range me.Migrating {
			to, ok := o.ids[mig.NodeID]
			if !ok {
				problems = append(problems, fmt.Sprintf("pod %s is moving slot %d to node %s, which is no pod of this cluster", m.Pod, mig.Slot, short(mig.NodeID)))
				continue
			}
			add(m, to, mig.Slot)
		}
		for _, mig := range me.Importing {
			from, ok := o.ids[mig.NodeID]
			switch {
			case ok && (o.self[from.Pod].OwnsSlot(mig.Slot) || me.OwnsSlot(mig.Slot)):
				add(from, m, mig.Slot)
			case ok:
				problems = append(problems, fmt.Sprintf("pod %s is importing slot %d from %s, which does not serve it", m.Pod, mig.Slot, from.Pod))
			default:
				problems = append(problems, fmt.Sprintf("pod %s is importing slot %d from node %s, which is no pod of this cluster", m.Pod, mig.Slot, short(mig.NodeID)))
			}
		}
	}
	var plan Plan
	for _, key := range sortedKeys(moves) {
		from, to := o.byPod(key[0]), o.byPod(key[1])
		plan.Steps = append(plan.Steps, migrateStep(o, from, to, moves[key], "finish the move that was started"))
	}
	if len(plan.Steps) == 0 {
		plan.Problems = problems
	}
	return plan
}

// rebalance moves slots, with their keys, so that each designed leader serves its share: all
// the slots of departing masters (scale-in), and the surplus of others to leaders that have
// too few (scale-out). It runs only on a cluster that agrees on its shape. The plan holds every
// move: the steps go between distinct pairs of masters where the shares allow, so that they can
// run side by side, and the controller bounds the time one reconcile spends on them.
func rebalance(o *observed) Plan {
	receivers, held, ok := o.receivers()
	if !ok {
		return held
	}
	leaving, ok := o.leavingMasters()
	if !ok {
		return Plan{} // a follower pod is a master: failing back comes first
	}
	if len(leaving) == 0 && o.balanced(receivers) {
		return Plan{}
	}
	moves := o.assignMoves(receivers, o.givers(leaving, receivers))
	var plan Plan
	for _, key := range sortedKeys(moves) {
		from, to := o.byPod(key[0]), o.byPod(key[1])
		why := "rebalance"
		if o.departing(from) {
			why = from.Pod + " is leaving the cluster"
		} else if o.self[to.Pod].SlotCount() == 0 {
			why = to.Pod + " is a new master"
		}
		plan.Steps = append(plan.Steps, migrateStep(o, from, to, moves[key], why))
	}
	return plan
}

// receivers are the designed leader pods, in ordinal order, which must all be masters before
// slots move to them. When one is not, it returns false with the plan for that: nothing while
// it can still fail back from its follower, a problem when it cannot.
func (o *observed) receivers() ([]*Member, Plan, bool) {
	receivers := make([]*Member, 0, o.design.Leaders)
	for i := 0; i < o.design.Leaders; i++ {
		m := o.member(Leader, i)
		if !o.self[m.Pod].IsMaster() {
			if master, ok := o.ids[o.self[m.Pod].MasterID]; ok && master.Role == Follower {
				return nil, Plan{}, false // the leader pod takes its shard back first (or after its replacement)
			}
			return nil, Plan{Problems: []string{fmt.Sprintf("leader pod %s is a replica of %s, which is no follower it could fail back from: it can only become a master as an empty node (delete its PVC and pod)", m.Pod, o.podOf(o.self[m.Pod].MasterID))}}, false
		}
		receivers = append(receivers, m)
	}
	return receivers, Plan{}, true
}

// leavingMasters are the departing members that serve slots. It returns false when a designed
// follower pod serves slots: it must fail back before slots move.
func (o *observed) leavingMasters() ([]*Member, bool) {
	var leaving []*Member
	for i := range o.members {
		m := &o.members[i]
		if o.self[m.Pod].SlotCount() == 0 || (m.Role == Leader && !o.departing(m)) {
			continue
		}
		if !o.departing(m) {
			return nil, false
		}
		leaving = append(leaving, m)
	}
	return leaving, true
}

// fairShare is how many slots the i-th of n leaders serves: the remainder goes to the first.
func fairShare(i, n int) int {
	share := redis.SlotCount / n
	if i < redis.SlotCount%n {
		share++
	}
	return share
}

// balanced reports whether every receiver serves slots, within rebalanceTolerance of its share.
func (o *observed) balanced(receivers []*Member) bool {
	for i, m := range receivers {
		have, want := o.self[m.Pod].SlotCount(), fairShare(i, len(receivers))
		if have == 0 || abs(have-want)*100 > want*rebalanceTolerance {
			return false
		}
	}
	return true
}

// giver is a master with the slots it hands over, in the order they go.
type giver struct {
	m     *Member
	slots []int
}

// givers hand over, in order: every slot of a departing master, then the top of a leader's
// surplus (which keeps its lower ranges whole).
func (o *observed) givers(leaving, receivers []*Member) []giver {
	var givers []giver
	for _, m := range leaving {
		givers = append(givers, giver{m, slotList(o.self[m.Pod].Slots)})
	}
	for i, m := range receivers {
		slots := slotList(o.self[m.Pod].Slots)
		if surplus := len(slots) - fairShare(i, len(receivers)); surplus > 0 {
			givers = append(givers, giver{m, slots[len(slots)-surplus:]})
		}
	}
	return givers
}

// assignMoves fills each receiver up to its share from the givers in turn and returns the
// slots by source and destination pod.
func (o *observed) assignMoves(receivers []*Member, givers []giver) map[[2]string][]int {
	moves := map[[2]string][]int{}
	for i, m := range receivers {
		need := fairShare(i, len(receivers)) - o.self[m.Pod].SlotCount()
		for need > 0 && len(givers) > 0 {
			g := &givers[0]
			n := min(need, len(g.slots))
			key := [2]string{g.m.Pod, m.Pod}
			moves[key] = append(moves[key], g.slots[:n]...)
			g.slots = g.slots[n:]
			need -= n
			if len(g.slots) == 0 {
				givers = givers[1:]
			}
		}
	}
	return moves
}

// EarlyMeets introduces every running pod that knows no other node yet (a new pod of a
// scale-out, one that came back empty) to every master that serves slots, without waiting for
// the other pods to run. Redis holds a master that was ever alone (it counted itself in a
// minority) in cluster_state:fail for min(cluster-node-timeout, 5 s) after it learns the
// cluster, except within its first 2 s, when it does not judge its state yet: a new master met
// that early, by every master at once rather than one and then gossip, can take slots at once.
// members are the running pods, in any number.
func EarlyMeets(members []Member) []Step {
	var masters []*Member
	for i := range members {
		m := &members[i]
		if me, ok := myself(m); ok && me.IsMaster() && me.SlotCount() > 0 && len(m.View.Nodes) > 1 {
			masters = append(masters, m)
		}
	}
	var steps []Step
	for i := range members {
		m := &members[i]
		me, ok := myself(m)
		if !ok || !lone(m) || !me.IsMaster() || me.SlotCount() > 0 || m.IP == "" || knownToAny(members, m, me.ID) {
			continue
		}
		for _, master := range masters {
			steps = append(steps, meetStep(master, m, fmt.Sprintf("introduce new node %s at %s as soon as it runs", short(me.ID), hostPort(m))))
		}
	}
	return steps
}

// knownToAny: another member knows the node or is in handshake with it (a meet is under way).
func knownToAny(members []Member, m *Member, id string) bool {
	if id == "" {
		return false
	}
	for i := range members {
		other := &members[i]
		if other.Pod == m.Pod || other.View == nil {
			continue
		}
		if _, known := other.View.NodeByID(id); known || handshaking(other.View, m) {
			return true
		}
	}
	return false
}

// depart waits for the StatefulSets to remove the departing pods once they serve nothing.
func depart(o *observed) Plan {
	var leaving []string
	for i := range o.members {
		if o.departing(&o.members[i]) {
			leaving = append(leaving, o.members[i].Pod)
		}
	}
	if len(leaving) == 0 {
		return Plan{}
	}
	return Plan{Wait: "scale-in: " + strings.Join(leaving, ", ") + " serve no slots and wait to be removed"}
}

// Departing reports whether the member is beyond the design: a scale-in removes it once it
// serves nothing.
func Departing(design Design, m *Member) bool {
	return (&observed{design: design}).departing(m)
}

// Keep returns how many leader and follower pods the StatefulSets must keep for now (see
// PlanScaleIn, whose steps it leaves out).
func Keep(design Design, members []Member) (leaders, followers int, reason string) {
	p := PlanScaleIn(design, members)
	return p.Leaders, p.Followers, p.Reason
}

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
			if !bumped[owner.Pod] {
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

func myself(m *Member) (redis.Node, bool) {
	if m.View == nil {
		return redis.Node{}, false
	}
	return m.View.Myself()
}

func migrateStep(o *observed, from, to *Member, slots []int, why string) Step {
	ranges := slotRanges(slots)
	return Step{Kind: StepMigrate, On: from.Pod, To: to.Pod, NodeID: o.idOf[to.Pod], IP: to.IP, Port: to.Port, BusPort: to.BusPort,
		Slots: ranges, Reason: fmt.Sprintf("move %d slots (%s) to %s: %s", len(slots), formatRanges(ranges), to.Pod, why)}
}

func (o *observed) byPod(pod string) *Member {
	for i := range o.members {
		if o.members[i].Pod == pod {
			return &o.members[i]
		}
	}
	return nil
}

// slotList expands ranges into sorted, distinct slots.
func slotList(ranges []redis.SlotRange) []int {
	var out []int
	for _, r := range redis.NormalizeSlotRanges(ranges) {
		for s := r.Start; s <= r.End; s++ {
			out = append(out, s)
		}
	}
	return out
}

// slotRanges folds slots into sorted ranges.
func slotRanges(slots []int) []redis.SlotRange {
	ranges := make([]redis.SlotRange, 0, len(slots))
	for _, s := range slots {
		ranges = append(ranges, redis.SlotRange{Start: s, End: s})
	}
	return redis.NormalizeSlotRanges(ranges)
}

func sortedKeys(m map[[2]string][]int) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return keys
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
