package clusterplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// blockSize is how many slots a move of the scale-in model hands over, unless it gives all
// but the last slot, or one slot.
const blockSize = 256

// scaleModel is a cluster during a scale-in as each pod sees it: the truth is what each master
// says of itself (its own line), and every pod has its own, possibly stale, map of who serves
// which slot, as a lost SETSLOT NODE or lagging gossip leaves it.
type scaleModel struct {
	leaders, followers int
	design             Design
	truth              []int   // slot → leader ordinal serving it by its own word
	views              [][]int // pod index (leaders then followers) → slot → leader ordinal
	silent             []bool  // pod index → does not answer this time
	// moving: a move started and not finished, from → to, on one slot.
	moving       bool
	moveSlot     int
	moveFrom, to int
}

func newScaleModel(leaders, followers, designed int) *scaleModel {
	m := &scaleModel{leaders: leaders, followers: followers, design: Design{Leaders: designed, Followers: followers}}
	m.truth = make([]int, redis.SlotCount)
	for i, r := range redis.SplitSlots(leaders) {
		for s := r.Start; s <= r.End; s++ {
			m.truth[s] = i
		}
	}
	for range leaders + followers {
		m.views = append(m.views, slices.Clone(m.truth))
	}
	m.silent = make([]bool, leaders+followers)
	return m
}

func (m *scaleModel) pod(i int) string {
	if i < m.leaders {
		return fmt.Sprintf("c-leader-%d", i)
	}
	return fmt.Sprintf("c-follower-%d", i-m.leaders)
}

// step applies one operation chosen by op and arg.
func (m *scaleModel) step(op, arg byte) {
	pods := m.leaders + m.followers
	switch op % 6 {
	case 0, 1: // a departing leader gives a block (op 1: one slot) to a designed one
		from := m.design.Leaders + int(arg)%max(m.leaders-m.design.Leaders, 1)
		to := int(arg/4) % m.design.Leaders
		var slots []int
		for s, owner := range m.truth {
			if owner == from {
				slots = append(slots, s)
			}
		}
		if len(slots) == 0 || from >= m.leaders {
			return
		}
		switch {
		case op%6 == 1 || len(slots) == 1:
			slots = slots[:1]
		case arg&0x80 != 0:
			slots = slots[:len(slots)-1] // all but the last, which a later move gives
		default:
			slots = slots[:min(blockSize, len(slots))]
		}
		for _, s := range slots {
			m.truth[s] = to
		}
		// The owner and the source know; each other pod is told unless arg's bits say the
		// message was lost.
		for p := range pods {
			if p == from || p == to || arg&(1<<(p%8)) == 0 {
				for _, s := range slots {
					m.views[p][s] = to
				}
			}
		}
	case 2: // gossip brings one pod's view up to date
		m.views[int(arg)%pods] = slices.Clone(m.truth)
	case 3: // a pod does not answer, or answers again
		m.silent[int(arg)%pods] = !m.silent[int(arg)%pods]
	case 4: // a move of one slot starts, or finishes
		if m.moving {
			m.truth[m.moveSlot] = m.to
			m.views[m.moveFrom][m.moveSlot], m.views[m.to][m.moveSlot] = m.to, m.to
			m.moving = false
			return
		}
		from := m.design.Leaders + int(arg)%max(m.leaders-m.design.Leaders, 1)
		if from >= m.leaders {
			return
		}
		if s := slices.Index(m.truth, from); s >= 0 {
			m.moving, m.moveSlot, m.moveFrom, m.to = true, s, from, int(arg/4)%m.design.Leaders
		}
	case 5: // a stale mapping comes back (SETSLOT NODE to the old owner, a lost UPDATE)
		p := int(arg) % pods
		s := int(arg) * 61 % redis.SlotCount
		if m.leaders > m.design.Leaders {
			m.views[p][s] = m.design.Leaders + int(arg)%(m.leaders-m.design.Leaders)
		}
	}
}

// apply runs the plan's re-announce steps on the model: SETSLOT NODE fixes the laggard's view;
// a bumped epoch lets gossip bring every view that agreed on nothing else up to date later
// (step 2), which the model leaves to its operations.
func (m *scaleModel) apply(steps []Step) {
	for _, st := range steps {
		if st.Kind != StepSetSlotNode {
			continue
		}
		p := slices.IndexFunc(m.allPods(), func(pod string) bool { return pod == st.On })
		to := slices.IndexFunc(m.allPods(), func(pod string) bool { return pod == st.To })
		for _, s := range slotList(st.Slots) {
			m.views[p][s] = to
		}
	}
}

func (m *scaleModel) allPods() []string {
	var out []string
	for i := range m.leaders + m.followers {
		out = append(out, m.pod(i))
	}
	return out
}

// members renders every pod's CLUSTER NODES from its own map; each pod's own line is the truth.
func (m *scaleModel) members() []Member {
	var out []Member
	nodesFor := func(view []int) []node {
		var nodes []node
		for i := range m.leaders + m.followers {
			n := node{pod: m.pod(i), ip: fmt.Sprintf("10.0.1.%d", i+1)}
			if i >= m.leaders {
				n.master = m.pod((i - m.leaders) % m.design.Leaders)
			} else {
				var slots []int
				for s, owner := range view {
					if owner == i {
						slots = append(slots, s)
					}
				}
				parts := []string{}
				for _, r := range slotRanges(slots) {
					parts = append(parts, r.String())
				}
				n.slots = strings.Join(parts, " ")
			}
			nodes = append(nodes, n)
		}
		return nodes
	}
	for i := range m.leaders + m.followers {
		view := slices.Clone(m.views[i])
		if i < m.leaders { // what a master says of itself is current
			for s, owner := range m.truth {
				if owner == i || view[s] == i {
					view[s] = m.truth[s]
				}
			}
		}
		nodes := nodesFor(view)
		if m.moving && (i == m.moveFrom || i == m.to) {
			if i == m.moveFrom {
				nodes[i].migrating = map[int]string{m.moveSlot: m.pod(m.to)}
			} else {
				nodes[i].importing = map[int]string{m.moveSlot: m.pod(m.moveFrom)}
			}
		}
		c := cluster{known: nodes}
		role, ordinal := Leader, i
		if i >= m.leaders {
			role, ordinal = Follower, i-m.leaders
		}
		mem := Member{Pod: m.pod(i), Role: role, Ordinal: ordinal, IP: nodes[i].ip, Port: 6379, BusPort: 16379}
		if !m.silent[i] {
			mem.View = c.viewOf(nodes[i], nodes)
		}
		out = append(out, mem)
	}
	return out
}

// FuzzScaleIn runs scale-ins with lost SETSLOT messages, lagging and silent pods, and moves
// left half done, and checks every plan on every observation: PlanScaleIn never lets a
// departing pod go while any view maps a slot to it, any pod's own line shows a move with it,
// or any pod does not answer; and its steps are well formed.
func FuzzScaleIn(f *testing.F) {
	f.Add(uint8(4), uint8(0), uint8(3), []byte{0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff})
	// The e2e race: all but the last slot move, told to all; the last one's SETSLOT NODE to
	// leader-1 is lost (bit 1 of the argument).
	f.Add(uint8(2), uint8(0), uint8(3), []byte{0, 0x80, 1, 0x02, 3, 7})
	f.Add(uint8(4), uint8(4), uint8(3), []byte{1, 0x02, 2, 3, 5, 7, 4, 0, 4, 0})
	f.Add(uint8(6), uint8(2), uint8(3), []byte{0, 0x10, 0, 0x21, 3, 2, 1, 0x40, 5, 9, 2, 1})
	f.Fuzz(func(t *testing.T, leaders, followers, designed uint8, ops []byte) {
		nl := int(leaders%5) + 2
		d := int(designed)%(nl-1) + 1
		nf := int(followers % 4)
		m := newScaleModel(nl, nf, d)
		if len(ops) > 64 {
			ops = ops[:64]
		}
		for i := 0; i+1 < len(ops); i += 2 {
			m.step(ops[i], ops[i+1])
			if ops[i]%3 != 0 {
				continue // observe after some operations only: decisions interleave with them
			}
			members := m.members()
			plan := PlanScaleIn(m.design, members)
			checkScaleIn(t, m, members, plan)
			m.apply(plan.Steps)
		}
		// Drain everything, tell everybody: the pods may then go.
		for p := range m.silent {
			m.silent[p] = false
		}
		if m.moving {
			m.step(4, 0)
		}
		for s, owner := range m.truth {
			if owner >= d {
				m.truth[s] = s % d
			}
		}
		for p := range m.views {
			m.views[p] = slices.Clone(m.truth)
		}
		if plan := PlanScaleIn(m.design, m.members()); plan.Leaders != d || plan.Reason != "" || len(plan.Steps) != 0 {
			t.Fatalf("drained and agreed, PlanScaleIn = %d leaders (%q), steps %v; want %d", plan.Leaders, plan.Reason, plan.Steps, d)
		}
	})
}

func checkScaleIn(t *testing.T, m *scaleModel, members []Member, plan ScaleIn) {
	t.Helper()
	if plan.Leaders < m.design.Leaders || plan.Leaders > m.leaders || plan.Followers != m.followers {
		t.Fatalf("PlanScaleIn keeps %d leaders, %d followers of %d, %d", plan.Leaders, plan.Followers, m.leaders, m.followers)
	}
	ids := map[string]string{}
	for _, mem := range members {
		if me, ok := myself(&mem); ok {
			ids[mem.Pod] = me.ID
		}
	}
	for ordinal := plan.Leaders; ordinal < m.leaders; ordinal++ {
		freed := m.pod(ordinal)
		id, ok := ids[freed]
		if !ok {
			t.Fatalf("%s goes though it does not answer", freed)
		}
		for _, v := range members {
			if v.View == nil {
				t.Fatalf("%s goes while %s does not answer", freed, v.Pod)
			}
			n, _ := v.View.NodeByID(id)
			if n.SlotCount() > 0 {
				t.Fatalf("%s goes while %s's view maps %d slots to it", freed, v.Pod, n.SlotCount())
			}
			me, _ := v.View.Myself()
			for _, mig := range append(slices.Clone(me.Migrating), me.Importing...) {
				if mig.NodeID == id || v.Pod == freed {
					t.Fatalf("%s goes while %s shows a move of slot %d with it", freed, v.Pod, mig.Slot)
				}
			}
		}
	}
	bumps := true
	for _, st := range plan.Steps {
		switch st.Kind {
		case StepBumpEpoch:
			if !bumps {
				t.Fatalf("a bump after a SETSLOT: %v", plan.Steps)
			}
			if !slices.ContainsFunc(members, func(mem Member) bool { me, _ := myself(&mem); return mem.Pod == st.On && me.SlotCount() > 0 }) {
				t.Fatalf("bump on %s, which serves nothing", st.On)
			}
		case StepSetSlotNode:
			bumps = false
			owner := slices.IndexFunc(members, func(mem Member) bool { return mem.Pod == st.To })
			on := slices.IndexFunc(members, func(mem Member) bool { return mem.Pod == st.On })
			if owner < 0 || on < 0 || ids[st.To] != st.NodeID || st.On == st.To || len(st.Slots) == 0 {
				t.Fatalf("SETSLOT NODE must name a pod and the owner by its ID: %+v", st)
			}
			ownerSelf, _ := myself(&members[owner])
			onSelf, _ := myself(&members[on])
			if !onSelf.IsMaster() {
				t.Fatalf("SETSLOT NODE on replica %s", st.On)
			}
			for _, s := range slotList(st.Slots) {
				if !ownerSelf.OwnsSlot(s) {
					t.Fatalf("SETSLOT %d NODE %s, which does not serve it by its own word", s, st.To)
				}
				if seen, ok := members[on].View.SlotOwner(s); !ok || !Departing(m.design, &members[slices.IndexFunc(members, func(mem Member) bool { return ids[mem.Pod] == seen.ID })]) {
					t.Fatalf("SETSLOT %d on %s, which does not map it to a departing pod", s, st.On)
				}
			}
		default:
			t.Fatalf("unexpected step %v", st)
		}
	}
}
