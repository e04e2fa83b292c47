package clusterplan

import (
	"fmt"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Electability is whether a replica can win the election a CLUSTER FAILOVER starts. The
// masters that serve slots vote, and each sends its vote over its own cluster-bus link to
// the node at the address its node table holds: a master that still knows the candidate at
// an old address (a pod back from its volume with a new IP) grants its vote to nobody, the
// election times out, and Redis refuses another for twice its auth timeout (4 × the node
// timeout) while every manual attempt pauses the shard's writes. So a failover is asked only
// once every voting master knows the candidate at its current address, linked and healthy,
// and the candidate so knows every voting master (its request goes over its own links).
// A master also denies its vote to a node it still takes for a master, or for the replica of
// another master (a pod just told to CLUSTER REPLICATE, before the gossip carries it), and
// when it knows the candidate's master at a greater config epoch
// than the candidate claims (a failover or a resharding bumped it and the gossip has not
// reached the candidate yet): that is waited for too.
type Electability struct {
	// Meets introduce the candidate anew where a view holds a stale address: from the master
	// that holds it to the candidate, or from the candidate to the master it holds stale.
	Meets []Step
	// Waits say, naming the master, which view has not converged yet (a handshake, a link
	// down, the node suspected).
	Waits []string
}

// Ready reports whether the candidate can be elected now.
func (e Electability) Ready() bool { return len(e.Meets) == 0 && len(e.Waits) == 0 }

// Reason says in one line why the candidate cannot be elected yet.
func (e Electability) Reason() string {
	var parts []string
	for _, s := range e.Meets {
		parts = append(parts, s.On+" "+s.Reason)
	}
	return strings.Join(firstWaits(append(parts, e.Waits...)), "; ")
}

// electable judges the member candidate (a replica) against the views of members: see
// Electability. A member without a view is not judged (the planners wait for it anyway).
func electable(members []Member, candidate *Member) Electability {
	var e Electability
	me, ok := myself(candidate)
	if !ok {
		return Electability{Waits: []string{candidate.Pod + " does not answer CLUSTER NODES"}}
	}
	for i := range members {
		x := &members[i]
		if x.Pod == candidate.Pod {
			continue
		}
		xme, ok := myself(x)
		if !ok || !xme.IsMaster() || xme.SlotCount() == 0 {
			continue // only masters that serve slots vote
		}
		if step, wait := judgeView(x, candidate, me.ID, "master "+x.Pod); step != nil {
			e.Meets = append(e.Meets, *step)
		} else if wait != "" {
			e.Waits = append(e.Waits, wait)
		}
		if step, wait := judgeView(candidate, x, xme.ID, "candidate "+candidate.Pod); step != nil {
			e.Meets = append(e.Meets, *step)
		} else if wait != "" {
			e.Waits = append(e.Waits, wait)
		}
		if wait := staleRole(x, candidate, me); wait != "" {
			e.Waits = append(e.Waits, wait)
		}
		if wait := staleConfigEpoch(candidate, x, me.MasterID); wait != "" {
			e.Waits = append(e.Waits, wait)
		}
	}
	return e
}

// staleRole says why voter would deny candidate (whose own line is me) its vote for the role
// it knows it in, "" when it would not: Redis votes only for a node it knows as a replica, of
// the master the candidate follows.
func staleRole(voter, candidate *Member, me redis.Node) string {
	if !me.IsReplica() {
		return ""
	}
	seen, ok := voter.View.NodeByID(me.ID)
	if !ok || (seen.IsReplica() && seen.MasterID == me.MasterID) {
		return "" // unknown: judgeView waits for it
	}
	if !seen.IsReplica() {
		return fmt.Sprintf("master %s still sees %s as a master: it would deny its vote until the gossip says %s replicates node %s",
			voter.Pod, candidate.Pod, candidate.Pod, short(me.MasterID))
	}
	return fmt.Sprintf("master %s sees %s as the replica of node %s, not of node %s: it would deny its vote until the gossip catches up",
		voter.Pod, candidate.Pod, short(seen.MasterID), short(me.MasterID))
}

// staleConfigEpoch says why voter would deny candidate its vote for the config epoch of the
// shard's master (id masterID) candidate claims, "" when it would not: Redis refuses a replica
// whose master's slots it knows at a greater config epoch than the request carries.
func staleConfigEpoch(candidate, voter *Member, masterID string) string {
	claimed, ok := candidate.View.NodeByID(masterID)
	if !ok {
		return ""
	}
	known, ok := voter.View.NodeByID(masterID)
	if !ok || known.ConfigEpoch <= claimed.ConfigEpoch {
		return ""
	}
	return fmt.Sprintf("master %s knows the shard's master (node %s) at config epoch %d, candidate %s still at %d: its vote would be denied until the gossip reaches %s",
		voter.Pod, short(masterID), known.ConfigEpoch, candidate.Pod, claimed.ConfigEpoch, candidate.Pod)
}

// judgeView checks from's view of the node id of member to: at to's current address (IP,
// port, bus port), linked, not suspected or failing. A stale or missing address is mended with
// a MEET from from to to's address (unless the handshake of one runs); the rest is waited for.
func judgeView(from, to *Member, id, who string) (*Step, string) {
	seen, ok := from.View.NodeByID(id)
	if !ok || staleAddress(seen.Addr, to) {
		if handshaking(from.View, to) {
			return nil, fmt.Sprintf("%s is in handshake with %s at %s", who, to.Pod, hostPort(to))
		}
		reason := fmt.Sprintf("does not know %s (node %s)", to.Pod, short(id))
		if ok {
			reason = fmt.Sprintf("knows %s (node %s) at %s@%d, it is now at %s@%d", to.Pod, short(id), seen.Addr.HostPort(), seen.Addr.BusPort, hostPort(to), to.BusPort)
		}
		step := meetStep(from, to, reason+": a failover waits until it knows it there")
		return &step, ""
	}
	if seen.Link != redis.LinkConnected || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail) {
		return nil, fmt.Sprintf("%s sees %s with link %s, flags %s", who, to.Pod, seen.Link, seen.Flags)
	}
	return nil, ""
}

// staleAddress: a view's address of the member is not the member's current one. Bus ports are
// compared when both are known (CLUSTER NODES of Redis before 4 shows none).
func staleAddress(a redis.Address, m *Member) bool {
	if a.IP != m.IP || a.Port != m.Port {
		return true
	}
	return a.BusPort != 0 && m.BusPort != 0 && a.BusPort != m.BusPort
}
