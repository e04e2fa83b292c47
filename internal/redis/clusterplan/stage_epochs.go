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
	for i, m := range masters {
		epoch := o.self[m.Pod].ConfigEpoch
		for _, other := range masters[i+1:] {
			if o.self[other.Pod].ConfigEpoch != epoch {
				continue
			}
			plan.Steps = append(plan.Steps, Step{Kind: StepBumpEpoch, On: m.Pod, NodeID: o.idOf[m.Pod],
				Reason: fmt.Sprintf("it shares config epoch %d with master %s (%s), whose node ID is greater: a new epoch settles the collision before either stops with it",
					epoch, short(o.idOf[other.Pod]), other.Pod)})
			break
		}
	}
	if len(plan.Steps) == 0 {
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

// claimsOverlap: two masters claim one slot in their own views.
func claimsOverlap(o *observed, masters []*Member) bool {
	var claimed []redis.SlotRange
	for _, m := range masters {
		for _, r := range o.self[m.Pod].Slots {
			if slices.ContainsFunc(claimed, func(c redis.SlotRange) bool { _, overlap := intersect(r, c); return overlap }) {
				return true
			}
		}
		claimed = append(claimed, o.self[m.Pod].Slots...)
	}
	return false
}
