package clusterplan

import (
	"fmt"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// meet introduces nodes that do not know each other, and nodes that know each other at an old
// address (pods recreated with new IPs keep their node ID in nodes.conf). A brand-new node is
// met by the seed only, and gossip spreads it while the next stages go on: they need only that
// the seed and each member know each other.
func meet(o *observed) Plan {
	var plan Plan
	var waits []string
	seedID := o.idOf[o.seed.Pod]
	for i := range o.members {
		from := &o.members[i]
		for j := range o.members {
			to := &o.members[j]
			if i == j {
				continue
			}
			toID := o.idOf[to.Pod]
			known, ok := from.View.NodeByID(toID)
			if ok && known.Addr.IP == to.IP && known.Addr.Port == to.Port && !known.Is(redis.FlagHandshake) {
				continue
			}
			involvesSeed := from == o.seed || to == o.seed
			if handshaking(from.View, to) {
				if involvesSeed {
					waits = append(waits, fmt.Sprintf("%s is in handshake with %s", from.Pod, to.Pod))
				}
				continue
			}
			switch {
			case ok:
				plan.Steps = append(plan.Steps, meetStep(from, to, fmt.Sprintf("knows node %s at %s, it is now at %s", short(toID), known.Addr.HostPort(), hostPort(to))))
			case from == o.seed:
				plan.Steps = append(plan.Steps, meetStep(from, to, fmt.Sprintf("introduce node %s at %s", short(toID), hostPort(to))))
			case lone(to) && o.servesSlots(from) && !knownToAny(o.members, to, toID):
				// A new node joining a running cluster: every master introduces it at once,
				// rather than gossip taking seconds to spread it (see EarlyMeets).
				plan.Steps = append(plan.Steps, meetStep(from, to, fmt.Sprintf("introduce new node %s at %s", short(toID), hostPort(to))))
			case i < j && o.knows(o.seed, from) && o.knows(o.seed, to) && !o.knows(to, from) && !handshaking(to.View, from):
				// Both are in the cluster and only gossip between them is missing, which in a
				// dozen nodes takes seconds; one direct meet introduces them both ways.
				plan.Steps = append(plan.Steps, meetStep(from, to, fmt.Sprintf("introduce node %s at %s directly", short(toID), hostPort(to))))
			case to == o.seed:
				if _, seedKnowsFrom := o.seed.View.NodeByID(o.idOf[from.Pod]); !seedKnowsFrom {
					continue // the seed's own meet comes first
				}
				waits = append(waits, fmt.Sprintf("%s does not know the seed %s yet (gossip)", from.Pod, short(seedID)))
			}
		}
	}
	if len(plan.Steps) == 0 && len(waits) > 0 {
		plan.Wait = "waiting for gossip: " + strings.Join(firstWaits(waits), "; ")
	}
	return plan
}

// lone: the member knows no node but itself (a new pod, or one that came back empty).
func lone(m *Member) bool { return m.View != nil && len(m.View.Nodes) == 1 }

// servesSlots: an established master of the cluster, which knows other nodes.
func (o *observed) servesSlots(m *Member) bool {
	return o.self[m.Pod].IsMaster() && o.self[m.Pod].SlotCount() > 0 && len(m.View.Nodes) > 1 && !o.departing(m)
}

func handshaking(view *redis.Topology, to *Member) bool {
	for _, n := range view.HandshakeNodes() {
		if n.Addr.IP == to.IP && n.Addr.Port == to.Port {
			return true
		}
	}
	return false
}

func meetStep(from, to *Member, reason string) Step {
	return Step{Kind: StepMeet, On: from.Pod, IP: to.IP, Port: to.Port, BusPort: to.BusPort, Reason: reason}
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
