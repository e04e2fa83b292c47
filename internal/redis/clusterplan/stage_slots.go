package clusterplan

import (
	"fmt"
	"slices"

	"github.com/rediskube/redis-operator/internal/redis"
)

// assignSlots gives unserved slots to the leader designed for them: all of them on a new
// cluster, the rest after a bootstrap that was interrupted.
func assignSlots(o *observed) Plan {
	var owned []redis.SlotRange
	for _, me := range o.self {
		owned = append(owned, me.Slots...)
	}
	for _, n := range o.seed.View.Nodes {
		if _, member := o.ids[n.ID]; !member {
			owned = append(owned, n.Slots...)
		}
	}
	missing := redis.MissingSlots(owned)
	if len(missing) == 0 {
		return Plan{}
	}
	var plan Plan
	designed := redis.SplitSlots(o.design.Leaders)
	for i, want := range designed {
		leader := o.member(Leader, i)
		var take []redis.SlotRange
		for _, gap := range missing {
			if r, ok := intersect(want, gap); ok {
				take = append(take, r)
			}
		}
		if len(take) == 0 {
			continue
		}
		if !o.self[leader.Pod].IsMaster() {
			plan.Problems = append(plan.Problems, fmt.Sprintf("slots %s are unserved and their leader %s is a replica", formatRanges(take), leader.Pod))
			continue
		}
		free, orphans := o.orphaned(take)
		if len(free) > 0 {
			plan.Steps = append(plan.Steps, Step{Kind: StepAddSlots, On: leader.Pod, Slots: free,
				Reason: fmt.Sprintf("serve slots %s", formatRanges(free))})
		}
		if len(orphans) > 0 {
			plan.Steps = append(plan.Steps, adoptStep(o, leader, orphans))
		}
	}
	return plan
}

// EarlySlots gives each leader of a new cluster its designed slots as soon as it runs, alone,
// before it is met: a master that serves no slot counts itself in a minority, and Redis then
// holds it in cluster_state:fail for up to 5 s (min(cluster-node-timeout, 5 s)) after it gets
// some; taken within Redis's own first seconds, the slots cost no such wait. A leader met
// first and given slots afterwards also leaves the nodes that met it without its slots until
// it next pings them (a node learns a master's slots from that master's own messages), which
// gossip may take seconds to do. So every leader that knows no other node and serves nothing
// gets its range, whether the other members have met each other or answer yet, unless a
// member's view shows a node serving any of that range (a scale-out's new leader beside
// established ones, a leader pod back empty whose old node still holds its slots). The caller
// must also know the cluster is new (never bootstrapped), or an empty leader pod could claim
// slots its promoted follower serves while no pod that knows it answers.
func EarlySlots(design Design, members []Member) []Step {
	var served []redis.SlotRange
	for _, m := range members {
		if m.View == nil {
			continue
		}
		for _, n := range m.View.Nodes {
			served = append(served, n.Slots...)
			for _, mig := range append(slices.Clone(n.Importing), n.Migrating...) {
				served = append(served, redis.SlotRange{Start: mig.Slot, End: mig.Slot})
			}
		}
	}
	ranges := redis.SplitSlots(design.Leaders)
	var steps []Step
	for _, m := range members {
		if m.Role != Leader || m.Ordinal < 0 || m.Ordinal >= len(ranges) || m.View == nil || len(m.View.Nodes) != 1 {
			continue
		}
		me, ok := m.View.Myself()
		if !ok || !me.IsMaster() || me.SlotCount() > 0 || len(me.Importing) > 0 || len(me.Migrating) > 0 {
			continue
		}
		r := ranges[m.Ordinal]
		if slices.ContainsFunc(served, func(s redis.SlotRange) bool { _, overlap := intersect(r, s); return overlap }) {
			continue
		}
		steps = append(steps, Step{Kind: StepAddSlots, On: m.Pod, Slots: []redis.SlotRange{r},
			Reason: fmt.Sprintf("serve slots %s from the start", r)})
	}
	return steps
}
