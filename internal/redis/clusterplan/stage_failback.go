package clusterplan

import (
	"fmt"
	"slices"
	"strings"
)

// failBack makes each leader pod the master of its shard again once it is a replica in sync
// and electable (see Electability): CLUSTER FAILOVER run on the replica swaps the roles
// without losing acknowledged writes. Where a master's view holds the leader at a stale
// address that meet left alone (a bus port, a handshake's other end), the same MEET comes
// first; the failovers of other shards then follow in the next plan, one stage at a time.
func failBack(o *observed) Plan {
	var plan Plan
	var waits []string
	for _, m := range o.members {
		if m.Role != Leader || o.departing(&m) || m.Outdated {
			continue // a leader pod about to be replaced takes its shard back once it is new
		}
		node := o.self[m.Pod]
		if !node.IsReplica() {
			continue
		}
		master, ok := o.ids[node.MasterID]
		if !ok || master.Role != Follower || o.self[master.Pod].SlotCount() == 0 || slices.Contains(o.design.KeepMasters, master.Pod) {
			continue
		}
		if !m.Replication.LinkUp() {
			waits = append(waits, fmt.Sprintf("leader %s is syncing from %s before it fails back", m.Pod, master.Pod))
			continue
		}
		// Redis refuses a failover while the replica itself counts its master as failing, and
		// the election fails while a voting master knows the leader at its old address.
		if e := electable(o.members, &m); !e.Ready() {
			plan.Steps = append(plan.Steps, e.Meets...)
			if len(e.Meets) == 0 {
				waits = append(waits, fmt.Sprintf("leader %s waits to fail back until every master knows it: %s", m.Pod, e.Reason()))
			}
			continue
		}
		plan.Steps = append(plan.Steps, Step{Kind: StepFailover, On: m.Pod,
			Reason: fmt.Sprintf("leader pod takes its shard back from %s", master.Pod)})
	}
	if slices.ContainsFunc(plan.Steps, func(s Step) bool { return s.Kind == StepMeet }) {
		plan.Steps = slices.DeleteFunc(plan.Steps, func(s Step) bool { return s.Kind == StepFailover })
	}
	if len(plan.Steps) == 0 && len(waits) > 0 {
		plan.Wait = strings.Join(waits, "; ")
	}
	return plan
}
