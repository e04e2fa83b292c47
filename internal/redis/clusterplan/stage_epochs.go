package clusterplan

import (
	"fmt"
	"slices"

	"github.com/rediskube/redis-operator/internal/redis"
)

// distinctEpochs gives a new config epoch to a master that shares its own with another master.
// Masters given their slots with ADDSLOTS (a bootstrap) all start at config epoch 0, and Redis
// settles it only as the nodes ping each other: of two masters at the same epoch, the one with
// the smaller node ID takes a new epoch (currentEpoch + 1) when it next hears the other. The
// greater epoch then wins any claim of slots. Seen in the envtest
// TestKilledLeaderBackFromItsVolumeLosesNoAcknowledgedWrite: a master that stops while it still
// shares its epoch with a master of a greater ID (which never acts on it) keeps it in its
// nodes.conf; when it starts again, after Redis promoted its replica, the collision it settles
// first, if it hears that master before its promoted replica, gives it an epoch above the
// replica's promotion. Its stale claim to its old slots then wins, the promoted replica turns
// into its replica and full-syncs from it, and the writes the promoted replica took (and any its
// volume did not keep) are gone.
// So each collision is settled here, as Redis would: BUMPEPOCH on the member of the smaller
// node ID. This stage runs once every member agrees on who masters what, and only
// while no two masters claim the same slot: a bump makes a node's claims win. Then it waits
// until every member knows each master at the master's own epoch (see epochsUnheard).
func distinctEpochs(o *observed) Plan {
	var masters []*Member
	for i := range o.members {
		if o.self[o.members[i].Pod].IsMaster() {
			masters = append(masters, &o.members[i])
		}
	}
	if claimsOverlap(o, masters) {
		return Plan{}
	}
	slices.SortFunc(masters, func(a, b *Member) int {
		if o.idOf[a.Pod] < o.idOf[b.Pod] {
			return -1
		}
		return 1
	})
	var plan Plan
	bumped := map[string]bool{}
	for i, m := range masters {
		epoch := o.self[m.Pod].ConfigEpoch
		for _, other := range masters[i+1:] {
			if o.self[other.Pod].ConfigEpoch != epoch {
				continue
			}
			// Redis would bump m, the smaller ID; but a view that maps slots to m which m no
			// longer claims (a move or failover it has not heard of) would then win with the
			// new epoch, and send the true owner an UPDATE that takes the slots from it, and
			// Redis before 7.2 deletes the keys they held. Bumping the other settles the
			// collision as well.
			bump, why := m, fmt.Sprintf("it shares config epoch %d with master %s (%s), whose node ID is greater: a new epoch settles the collision before either stops with it",
				epoch, short(o.idOf[other.Pod]), other.Pod)
			if view := mapsUnclaimedSlotsTo(o, m); view != "" {
				if otherView := mapsUnclaimedSlotsTo(o, other); otherView != "" {
					if plan.Wait == "" {
						plan.Wait = fmt.Sprintf("waiting for gossip: masters %s and %s share config epoch %d, and views (%s's, %s's) map to each slots it does not claim, which a new epoch would make win",
							m.Pod, other.Pod, epoch, view, otherView)
					}
					break
				}
				bump, why = other, fmt.Sprintf("it shares config epoch %d with master %s, to which %s's view maps slots it does not claim: a new epoch for %s would make that view win",
					epoch, m.Pod, view, m.Pod)
			}
			if !bumped[bump.Pod] {
				bumped[bump.Pod] = true
				plan.Steps = append(plan.Steps, Step{Kind: StepBumpEpoch, On: bump.Pod, NodeID: o.idOf[bump.Pod], Reason: why})
			}
			break
		}
	}
	if len(plan.Steps) > 0 {
		plan.Wait = ""
	}
	if len(plan.Steps) == 0 && plan.Wait == "" {
		plan.Wait = epochsUnheard(o, masters)
	}
	return plan
}

// epochsUnheard says which member still knows a master at an older config epoch than the
// master's own, "" when none does. A replica that stops hearing its master before it hears the
// master's new epoch (a bump, a failover) claims the old one when it runs for election, and
// the masters that know the new one deny it their votes: Redis never fails that shard over.
// So a cluster is not converged until the gossip has carried every master's epoch.
func epochsUnheard(o *observed, masters []*Member) string {
	for _, m := range masters {
		me := o.self[m.Pod]
		for _, x := range o.members {
			if x.Pod == m.Pod {
				continue
			}
			if seen, ok := x.View.NodeByID(me.ID); ok && seen.ConfigEpoch != me.ConfigEpoch {
				return fmt.Sprintf("waiting for gossip: %s knows master %s at config epoch %d, it is at %d", x.Pod, m.Pod, seen.ConfigEpoch, me.ConfigEpoch)
			}
		}
	}
	return ""
}

// mapsUnclaimedSlotsTo names a member whose view maps to master m a slot that m does not claim
// in its own view, "" when none does.
func mapsUnclaimedSlotsTo(o *observed, m *Member) string {
	return viewMappingUnclaimedSlots(o.members, m)
}

// viewMappingUnclaimedSlots names a member whose view maps to master m a slot that m does not
// claim in its own view, "" when none does (or m's own view is unknown).
func viewMappingUnclaimedSlots(members []Member, m *Member) string {
	me, ok := myself(m)
	if !ok {
		return ""
	}
	for i := range members {
		v := &members[i]
		if v.Pod == m.Pod || v.View == nil {
			continue
		}
		seen, ok := v.View.NodeByID(me.ID)
		if !ok {
			continue
		}
		for _, r := range seen.Slots {
			if !slices.ContainsFunc(me.Slots, func(c redis.SlotRange) bool { return c.Start <= r.Start && r.End <= c.End }) {
				return v.Pod
			}
		}
	}
	return ""
}

// claimsOverlap: two masters claim one slot in their own views.
func claimsOverlap(o *observed, masters []*Member) bool {
	claims := make([][]redis.SlotRange, 0, len(masters))
	for _, m := range masters {
		claims = append(claims, o.self[m.Pod].Slots)
	}
	return slotClaimsOverlap(claims)
}

// slotClaimsOverlap: a slot is in two of the claims.
func slotClaimsOverlap(claims [][]redis.SlotRange) bool {
	var claimed []redis.SlotRange
	for _, ranges := range claims {
		for _, r := range ranges {
			if slices.ContainsFunc(claimed, func(c redis.SlotRange) bool { _, overlap := intersect(r, c); return overlap }) {
				return true
			}
		}
		claimed = append(claimed, ranges...)
	}
	return false
}
