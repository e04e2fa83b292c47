package clusterplan

import (
	"fmt"
	"slices"
	"time"
)

// Stuck is what the controller knows of masters stuck in a script: which pods answer BUSY and
// since when, and which shards Redis would not run another election of yet.
type Stuck struct {
	// Busy is, by pod, since when the pod has answered BUSY to every read (a script or a
	// function running past its busy-reply-threshold), without a break.
	Busy map[string]time.Time
	// Elections are, by shard (the master's node ID), until when Redis refuses another
	// election of it: a failover the operator asked recently (its failover log).
	Elections map[string]time.Time
	Now       time.Time
	// Grace is how long a master answers BUSY before its replica is asked to take over.
	Grace time.Duration
}

// StuckFailover asks Replica to take the shard of Master, busy for Busy, over.
type StuckFailover struct {
	Master, Replica string
	Busy            time.Duration
}

// StuckPlan is what to do about masters stuck in a script.
type StuckPlan struct {
	// Failover is the one replica to ask CLUSTER FAILOVER FORCE of, nil when none is: one
	// election at a time, as each master votes once per epoch.
	Failover *StuckFailover
	// Waits say which stuck master waits for what (its grace, an election's retry window,
	// its replica's electability).
	Waits []string
	// Problems name the stuck masters no replica can take over: their writes wait for the
	// kubelet's liveness probe to restart them. They hold no duration, so that a condition
	// saying them does not change on every reconcile.
	Problems []string
	// Recheck is when a master's grace ends, 0 when none is running.
	Recheck time.Duration
}

// PlanStuckMasters decides which shard of a master stuck in a script (a Lua busy loop, a long
// function) its replica takes over. Such a master answers its clients only BUSY, while its
// cluster bus still answers the other nodes (Redis runs its event loop during a long script),
// so no node flags it failing and Redis never fails it over by itself; its shard's writes
// wait until its liveness probe restarts it. Past the grace, the best replica of it (link
// up, the greatest replication offset, electable: see Electability) is asked to run CLUSTER
// FAILOVER FORCE: it does not wait for its master's handshake, which a stuck master cannot
// give, and the other masters still vote (a forced request carries the flag that makes them
// vote for a master not flagged failing). Never TAKEOVER: without a vote, the stuck master
// could wake up still claiming the slots. A busy replica, or a master that serves no slot
// (already taken over), needs nothing.
func PlanStuckMasters(stuck Stuck, members []Member) StuckPlan {
	var plan StuckPlan
	pods := make([]string, 0, len(stuck.Busy))
	for pod := range stuck.Busy {
		pods = append(pods, pod)
	}
	slices.Sort(pods)
	view := clusterView(members)
	for _, pod := range pods {
		m := memberOf(members, pod)
		if m == nil || m.View != nil || view == nil {
			continue // it answers after all, or nobody answers for it
		}
		node, ok := view.NodeByAddr(hostPort(m))
		if !ok || !node.IsMaster() || node.SlotCount() == 0 {
			continue
		}
		busy := stuck.Now.Sub(stuck.Busy[pod])
		if left := stuck.Grace - busy; left > 0 {
			plan.Waits = append(plan.Waits, fmt.Sprintf("master %s has answered BUSY for %s: its replica takes its shard over once it has for %s",
				pod, busy.Round(time.Second), stuck.Grace))
			if plan.Recheck == 0 || left < plan.Recheck {
				plan.Recheck = left
			}
			continue
		}
		if until, ok := stuck.Elections[node.ID]; ok && stuck.Now.Before(until) {
			plan.Waits = append(plan.Waits, fmt.Sprintf("master %s has answered BUSY for %s: an election of its shard was asked recently, Redis allows another in %s",
				pod, busy.Round(time.Second), until.Sub(stuck.Now).Round(time.Second)))
			continue
		}
		best, bestElectable := bestReplicas(members, node.ID)
		switch {
		case best == nil:
			plan.Problems = append(plan.Problems, fmt.Sprintf("master %s answers BUSY (stuck in a script) and no replica of it has its link up to take its shard over: its writes wait until its liveness probe restarts it",
				pod))
		case bestElectable == nil:
			plan.Waits = append(plan.Waits, fmt.Sprintf("master %s has answered BUSY for %s: %s takes its shard over once every master knows it: %s",
				pod, busy.Round(time.Second), best.Pod, electable(members, best).Reason()))
		case plan.Failover == nil:
			plan.Failover = &StuckFailover{Master: pod, Replica: bestElectable.Pod, Busy: busy}
		default:
			plan.Waits = append(plan.Waits, fmt.Sprintf("master %s has answered BUSY for %s: %s takes its shard over after the election of %s's",
				pod, busy.Round(time.Second), bestElectable.Pod, plan.Failover.Master))
		}
	}
	return plan
}

func memberOf(members []Member, pod string) *Member {
	for i := range members {
		if members[i].Pod == pod {
			return &members[i]
		}
	}
	return nil
}
