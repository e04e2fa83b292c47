package clusterplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Outages lists what an established cluster does not serve as it should, as its answering
// members show it: running pods of its nodes whose Redis does not answer, nodes the cluster holds as failing
// (or the answering node suspects), slots no live master serves, and masters serving slots
// with no replica up when the design has replicas. A cluster whose slots are not all assigned
// yet (being bootstrapped) has nothing established to lose and no outage. Callers ask only
// about a cluster that has served: when none of its members answers, it serves nothing.
//
// A replica resyncing after a fail-back, a node joining or a slot moving are no outage: the
// cluster serves every slot and every shard keeps a replica that answers.
func Outages(design Design, members []Member) []string {
	var silent []string
	// By address, IP and port: behind NodePorts the pods of one Kubernetes node share an IP.
	answering := map[string]string{}  // address -> pod, of the members that answer
	answeringIDs := map[string]bool{} // node IDs of the members that answer
	podAt := map[string]string{}      // address -> pod, of every member
	addrOf := map[string]string{}     // pod -> address
	for i := range members {
		m := &members[i]
		podAt[hostPort(m)] = m.Pod
		addrOf[m.Pod] = hostPort(m)
		if m.View == nil {
			// A departing pod of a scale-in stops once it serves nothing: no outage.
			if !(&observed{design: design}).departing(m) {
				silent = append(silent, m.Pod)
			}
			continue
		}
		answering[hostPort(m)] = m.Pod
		if me, ok := m.View.Myself(); ok {
			answeringIDs[me.ID] = true
		}
	}
	view := clusterView(members)
	// Established means every slot has a master: a new cluster still being given its slots
	// (its first leader may serve some before the others run) has nothing to lose yet.
	if view == nil {
		if len(silent) == 0 {
			return nil
		}
		slices.Sort(silent)
		return []string{"no pod of the cluster answers (" + strings.Join(silent, ", ") + ")"}
	}
	if len(view.UnassignedSlots()) > 0 {
		return nil
	}
	name := func(n redis.Node) string {
		if pod, ok := podAt[n.Addr.HostPort()]; ok && n.Addr.IP != "" {
			return pod
		}
		return fmt.Sprintf("node %s (%s)", short(n.ID), n.Addr.HostPort())
	}
	var out []string
	slices.Sort(silent)
	for _, pod := range silent {
		// A pod the cluster does not know yet (a scale-out's, still starting) is joining.
		if _, member := view.NodeByAddr(addrOf[pod]); member {
			out = append(out, "pod "+pod+" does not answer")
		}
	}
	// A node is down when no member answers for it (by address, or by node ID: a pod back
	// with a new address before gossip has it) and the cluster holds it failing, or the
	// answering node suspects it (flags linger a moment after a node is back), or it is a
	// master serving slots: those go unserved before the node timeout flags it (every pod
	// restarted at once, some not running yet).
	down := func(n redis.Node) bool {
		if _, answers := answering[n.Addr.HostPort()]; answers || answeringIDs[n.ID] {
			return false
		}
		return n.Is(redis.FlagFail) || n.Is(redis.FlagPFail) || n.IsMaster() && n.SlotCount() > 0
	}
	unservedSlots, failing := failingNodes(*view, down, name)
	out = append(out, failing...)
	if design.Followers > 0 && !design.RollingUpdate {
		out = append(out, mastersWithoutReplica(*view, members, down, name)...)
	}
	// The clusters run with cluster-require-full-coverage no: the other shards keep serving.
	// Which slots do not is what a user must learn first, and what a summary keeps.
	if unservedSlots != "" {
		out = append([]string{unservedSlots}, out...)
	}
	return out
}

// failingNodes says which slots no live master serves, by shard, and lists the nodes the view
// holds as failing or suspects.
func failingNodes(view redis.Topology, down func(redis.Node) bool, name func(redis.Node) string) (unservedSlots string, nodes []string) {
	var out, shards []string
	unserved := 0
	for _, n := range view.Nodes {
		switch {
		case !down(n):
		case n.Is(redis.FlagFail):
			out = append(out, fmt.Sprintf("%s is failing (the cluster agreed)", name(n)))
		case n.Is(redis.FlagPFail):
			out = append(out, fmt.Sprintf("%s is suspected down", name(n)))
		default:
			out = append(out, fmt.Sprintf("master %s does not answer", name(n)))
		}
		if n.IsMaster() && down(n) && n.SlotCount() > 0 {
			unserved += n.SlotCount()
			shards = append(shards, fmt.Sprintf("%s (shard of master %s)", someSlots(n.Slots), name(n)))
		}
	}
	if unserved == 0 {
		return "", out
	}
	unservedSlots = fmt.Sprintf("%d of %d slots are not served: %s", unserved, redis.SlotCount, strings.Join(shards, ", "))
	if unserved < redis.SlotCount {
		unservedSlots += "; the other shards keep serving theirs"
	}
	return unservedSlots, out
}

// someSlots writes slot ranges as CLUSTER NODES does, the first few of a fragmented shard only.
func someSlots(ranges []redis.SlotRange) string {
	const shown = 3
	ranges = redis.NormalizeSlotRanges(ranges)
	if len(ranges) > shown {
		return fmt.Sprintf("slots %s and %d more ranges", formatRanges(ranges[:shown]), len(ranges)-shown)
	}
	return "slots " + formatRanges(ranges)
}

// mastersWithoutReplica lists the live masters serving slots with no replica up: a member whose
// own ROLE says it replicates that master (what the replica itself knows, ahead of gossip).
func mastersWithoutReplica(view redis.Topology, members []Member, down func(redis.Node) bool, name func(redis.Node) string) []string {
	var out []string
	for _, master := range view.Masters() {
		if master.SlotCount() == 0 || down(master) {
			continue
		}
		up := 0
		for _, m := range members {
			if m.View != nil && m.Replication.Kind == redis.RoleSlave && m.Replication.MasterIP == master.Addr.IP &&
				m.Replication.MasterPort == master.Addr.Port {
				up++
			}
		}
		if up == 0 {
			out = append(out, fmt.Sprintf("master %s has no replica up", name(master)))
		}
	}
	return out
}

// clusterView is the cluster as a member that is a master serving slots sees it (a node that
// just joined may not have learned who serves what yet), else as the first member that
// answers; nil when none answers.
func clusterView(members []Member) *redis.Topology {
	var first *redis.Topology
	for i := range members {
		v := members[i].View
		if v == nil {
			continue
		}
		if me, ok := v.Myself(); ok && me.IsMaster() && me.SlotCount() > 0 {
			return v
		}
		if first == nil {
			first = v
		}
	}
	return first
}

// OutageSummary joins outages into one message, the first few in full.
func OutageSummary(outages []string) string {
	if len(outages) > 4 {
		return strings.Join(outages[:4], "; ") + fmt.Sprintf("; and %d more", len(outages)-4)
	}
	return strings.Join(outages, "; ")
}
