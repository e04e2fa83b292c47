package replicationplan

import "cmp"

// BestReplica is the one rule for which pod's data becomes the master's, whatever the reason
// (a promotion after the master is gone, a master that restarted without its data, a hand-over
// before the master's pod goes): the most advanced replication offset, which lost the fewest
// writes, then the lowest ordinal, so that every reconcile makes the same choice among equals.
// It returns nil when no candidate ranks.
//
// Which pods are candidates is the situation's rule, applied by the caller:
//   - A member that did not answer (nil Role) never ranks: its offset is unknown, and no
//     command could reach it.
//   - Link status does not rank. A hand-over needs the link up (FAILOVER TO waits for the
//     replica to hold every write, which only a connected one can), so link-down replicas are
//     not its candidates; after the master is gone every link is down, and the offset a
//     replica kept is what counts.
//   - Pod readiness does not rank either: a hand-over takes only ready pods (the new master
//     must be reachable through the Services), a promotion takes any that answers.
func BestReplica(candidates []*Member) *Member {
	var best *Member
	for _, m := range candidates {
		if m == nil || m.Role == nil {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(m.Role.ReplicationOffset, best.Role.ReplicationOffset), cmp.Compare(best.Ordinal, m.Ordinal)) > 0 {
			best = m
		}
	}
	return best
}
