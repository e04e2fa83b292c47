// Package replicationplan decides, from what every pod of a RedisReplication reports, which pod
// is the master and the Redis commands that make every other pod its replica. It is pure:
// observations in, steps out, so that each rule is a table test; the controller runs the steps.
//
// The rules keep acknowledged writes where Redis can: the master that replicas follow stays
// master. A master that restarted has at most what it had written to disk, and nothing at all
// without a volume, while its replicas hold the stream up to the crash. It comes back as a
// replica waiting for its master (the pods start so, see redis.NoMasterHost), which refuses to
// sync the replicas that re-link to it, or, started by an older template, as a master at a new
// address while its replicas still point at the old one: either way the pod that processed
// most of the stream is promoted at once and the others follow it. A master that does not
// answer at all may only be partitioned away, so a replica is promoted only when the caller
// says it has been gone long enough (never when sentinels own failover). Only when no replica
// holds anything (every pod restarted together) does the recorded master lead with its disk.
// A replica is promoted once: a master that holds at least what every replica left holds was
// promoted already and leads, even while the recorded master (a cached status) is older.
package replicationplan

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Member is one pod: where it is, what ROLE it answered and what Kubernetes says of it.
type Member struct {
	Pod     string
	Ordinal int
	IP      string
	Port    int
	// Role is ROLE as the pod answered it; nil when it did not answer.
	Role *redis.Role
	// Ready: the pod passed its readiness probe.
	Ready bool
	// Outdated: the pod runs an old revision of a StatefulSet the operator rolls itself.
	Outdated bool
	// LinkDown is how long a replica's link to its master has been down, as the replica says
	// (INFO replication master_link_down_since_seconds); 0 when up or not told.
	LinkDown time.Duration
	// Terminating: the pod is being deleted gracefully; its process still runs.
	Terminating bool
}

// Design is what the caller knows beyond the pods' answers.
type Design struct {
	// Current is the pod the status names as master ("" before the first master is chosen).
	Current string
	// MayPromote allows promoting a replica when no master is left: the caller sets it once
	// the master has been unreachable for its grace period, and never when sentinels decide.
	MayPromote bool
	// Sentinels is set when sentinels watch the replication: they alone promote, and the
	// operator only points the other pods at the master they chose.
	Sentinels bool
	// Monitored is the master address the sentinels agree on, "" without sentinels or when
	// none answers. A pod at that address that is a master is the master, whatever else says.
	Monitored string
	// LinkDownBound is how long a replica that follows the master's current address may stay
	// unlinked before the plan calls it stuck instead of syncing; 0 waits without a bound.
	// (REPLICAOF of the address a replica already follows is a no-op in Redis, so there is
	// nothing left to re-point: a link that stays down is a network or master problem.)
	LinkDownBound time.Duration
	// FirstMaster, when set, is the pod that must be the first master: the pod a restore
	// filled with a backup's data (the others start empty). Before a master is recorded
	// (Current ""), no other pod leads, whatever offsets the pods report: the plan waits for
	// it. Once Current is set the usual rules apply, so a pod restored again later never wins
	// over a master that replicas follow or a replica that holds more.
	FirstMaster string
}

// StepKind names a Redis command the plan asks for.
type StepKind string

// The commands a plan may ask for.
const (
	// StepReplicaOf makes a pod a replica of the master (REPLICAOF host port).
	StepReplicaOf StepKind = "ReplicaOf"
	// StepPromote makes a replica the master (REPLICAOF NO ONE), keeping its data: a failover.
	StepPromote StepKind = "Promote"
	// StepLead makes a pod that waits for its master the master (REPLICAOF NO ONE) where no
	// master is left to fail over from: the first master, or the recorded master again after
	// every pod restarted. No role moves, so it is no failover.
	StepLead StepKind = "Lead"
)

// Step is one command on one pod.
type Step struct {
	Kind StepKind
	On   string
	// ReplicaOf: the master's address.
	Host string
	Port int
	// Reason says why, for events and logs.
	Reason string
}

func (s Step) String() string {
	if s.Kind == StepReplicaOf {
		return fmt.Sprintf("%s %s -> %s", s.Kind, s.On, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
	}
	return fmt.Sprintf("%s %s", s.Kind, s.On)
}

// Plan is the outcome: the master (when there is one), the steps to run now, or what to wait for.
type Plan struct {
	// Master is the pod that is, or is being made, the master; "" when none can be chosen yet.
	Master string
	Steps  []Step
	// Wait explains why nothing can be done yet (or why the replication is not yet in sync).
	Wait string
	// MasterDown is set when no master answers: the caller starts its promotion clock.
	MasterDown bool
	// Stuck names what has waited past its bound and is not expected to change by itself (a
	// replica whose link to the master's current address stays down); "" otherwise.
	Stuck string
}

// Compute returns the next plan for the members.
func Compute(d Design, members []Member) Plan {
	answering := make([]*Member, 0, len(members))
	for i := range members {
		if members[i].Role != nil && members[i].Role.Kind != redis.RoleSentinel {
			answering = append(answering, &members[i])
		}
	}
	if len(answering) == 0 {
		return Plan{Wait: "no Redis pod answers yet", MasterDown: d.Current != ""}
	}
	master := restartedMaster(d, answering)
	if master != nil && master.Role.Kind == redis.RoleSlave {
		if master.Pod == d.Current {
			return Plan{Master: master.Pod, Steps: []Step{{Kind: StepLead, On: master.Pod,
				Reason: fmt.Sprintf("the master %s restarted and waits for its master; no pod holds more of the stream than it (offset %d), so it leads again",
					master.Pod, master.Role.ReplicationOffset)}}}
		}
		return Plan{Master: master.Pod, Steps: []Step{{Kind: StepPromote, On: master.Pod,
			Reason: fmt.Sprintf("the master %s restarted without the replication stream its replicas hold; %s processed the most of it (offset %d)",
				d.Current, master.Pod, master.Role.ReplicationOffset)}}}
	}
	if master == nil {
		master = chooseMaster(d, members, answering)
	}
	if master == nil {
		if plan, ok := leadWaiting(d, members, answering); ok {
			return plan
		}
	}
	if master == nil {
		promoted, plan := promote(d, answering)
		if promoted == nil || promoted.Role.Kind == redis.RoleSlave {
			return plan
		}
		master = promoted
	}
	plan := Plan{Master: master.Pod}
	for _, m := range answering {
		if m == master {
			continue
		}
		role := m.Role
		switch {
		case role.Kind != redis.RoleSlave || role.MasterIP != master.IP || role.MasterPort != master.Port:
			reason := fmt.Sprintf("%s is the master", master.Pod)
			if role.Kind == redis.RoleSlave {
				reason = fmt.Sprintf("%s follows %s, the master is %s at %s", m.Pod, net.JoinHostPort(role.MasterIP, strconv.Itoa(role.MasterPort)), master.Pod, net.JoinHostPort(master.IP, strconv.Itoa(master.Port)))
			}
			plan.Steps = append(plan.Steps, Step{Kind: StepReplicaOf, On: m.Pod, Host: master.IP, Port: master.Port, Reason: reason})
		case !role.LinkUp() && d.LinkDownBound > 0 && m.LinkDown >= d.LinkDownBound && plan.Stuck == "":
			plan.Stuck = fmt.Sprintf("the link of replica %s to the master %s at %s has been down for %s (state %s)", m.Pod, master.Pod,
				net.JoinHostPort(master.IP, strconv.Itoa(master.Port)), m.LinkDown.Round(time.Second), role.ReplicationState)
		case !role.LinkUp() && plan.Wait == "":
			plan.Wait = fmt.Sprintf("replica %s is syncing with %s (link %s)", m.Pod, master.Pod, role.ReplicationState)
		}
	}
	return plan
}

// chooseMaster returns the member that is the master, or nil when none may be assumed to be.
func chooseMaster(d Design, members []Member, answering []*Member) *Member {
	var masters []*Member
	for _, m := range answering {
		if m.Role.Kind == redis.RoleMaster {
			masters = append(masters, m)
		}
	}
	if len(masters) == 0 {
		return nil
	}
	// The sentinels' choice stands: they fail over, and the operator must not undo it. While
	// they move the master (their choice is not a master yet), nothing is re-pointed.
	if d.Monitored != "" && !slices.ContainsFunc(members, func(m Member) bool { return m.IP == d.Monitored }) {
		return ledPastBlindSentinels(d, answering, masters)
	}
	if d.Monitored != "" {
		for _, m := range masters {
			if m.IP == d.Monitored {
				return m
			}
		}
		return nil
	}
	// A master that replicas follow (synced or still syncing) was chosen as master by the
	// operator or the sentinels and holds the newest writes; the most followed one wins.
	followers := func(master *Member) int {
		n := 0
		for _, m := range answering {
			if m.Role.Kind == redis.RoleSlave && m.Role.MasterIP == master.IP && m.Role.MasterPort == master.Port {
				n++
			}
		}
		return n
	}
	best := slices.MaxFunc(masters, func(a, b *Member) int {
		return cmp.Or(cmp.Compare(followers(a), followers(b)), compareBool(a.Pod == d.Current, b.Pod == d.Current), cmp.Compare(b.Ordinal, a.Ordinal))
	})
	if followers(best) > 0 {
		return best
	}
	// No master serves anyone. Before the first choice, the lowest ordinal starts as master;
	// afterwards only the recorded master may be (it restarted and kept its data), not a
	// replica that restarted and came back empty-handed as a master.
	// Before the first choice (sentinels cannot monitor anything yet) the operator chooses.
	// After it, with sentinels that do not answer, a master nobody follows may be one that
	// restarted empty: following it could erase the replicas, so nothing is assumed.
	switch {
	case d.Current == "" && d.FirstMaster != "":
		// A restore: only the restored pod may start as the master, never an empty one.
		return firstMaster(d, masters)
	case d.Current == "":
		return best
	case d.Sentinels:
		return nil
	case best.Pod == d.Current:
		return best
	}
	return nil
}

// ledPastBlindSentinels returns the recorded master when the sentinels agree on an address no
// pod has: every pod restarted at a new address, the operator made the recorded master lead
// (StepLead) and the sentinels, knowing only the old addresses, can never see it nor fail
// over to anything. Their choice names no pod, so there is nothing of theirs to undo; the
// replicas follow the master the operator led, and the sentinels are started again from the
// seed (replicationplan.Reseed). Only while that master is the one master and every other pod
// still waits for its master or already follows it: a pod that follows anything else (a
// replica the sentinels may still promote, knowing it) leaves the choice to them.
func ledPastBlindSentinels(d Design, answering, masters []*Member) *Member {
	if len(masters) != 1 || masters[0].Pod != d.Current {
		return nil
	}
	led := masters[0]
	for _, m := range answering {
		if m == led || m.Role.WaitsForMaster() {
			continue
		}
		if m.Role.Kind != redis.RoleSlave || m.Role.MasterIP != led.IP || m.Role.MasterPort != led.Port {
			return nil
		}
	}
	return led
}

// restartedMaster returns the replica to promote when the recorded master answers as a master
// that no replica follows while a replica that processed more of the stream than the master's
// offset still points at an address no pod answers at: the master restarted and lost what that
// replica holds. When another master already holds that much, that one is returned instead (see
// promotedMaster): promoting the replica too would be a second promotion. Nil otherwise.
// With sentinels it is nil: they fail over.
func restartedMaster(d Design, answering []*Member) *Member {
	if d.Current == "" || d.Sentinels {
		return nil
	}
	var current *Member
	at := map[string]bool{}
	for _, m := range answering {
		at[net.JoinHostPort(m.IP, strconv.Itoa(m.Port))] = true
		if m.Pod == d.Current {
			current = m
		}
	}
	if current == nil {
		return nil
	}
	if current.Role.Kind == redis.RoleSlave {
		return restartedWaiting(d, answering, current)
	}
	if current.Role.Kind != redis.RoleMaster {
		return nil
	}
	var ahead []*Member
	for _, m := range answering {
		r := m.Role
		if r.Kind != redis.RoleSlave {
			continue
		}
		if at[net.JoinHostPort(r.MasterIP, strconv.Itoa(r.MasterPort))] {
			return nil // some master is followed: chooseMaster decides between masters
		}
		// Only a replica that processed more of the stream than the master now holds proves a
		// loss: a replica the operator just promoted keeps its offset, and the others, still
		// pointing at the old master, are behind it.
		if r.ReplicationOffset > current.Role.ReplicationOffset {
			ahead = append(ahead, m)
		}
	}
	need := current.Role.ReplicationOffset + 1
	best := BestReplica(ahead)
	if best != nil {
		need = best.Role.ReplicationOffset
	}
	if m := promotedMaster(answering, d.Current, need); m != nil {
		return m
	}
	return best
}

// restartedWaiting handles a recorded master that answers as a replica waiting for its master
// (redis.Role.WaitsForMaster): pods start so, and nothing but a restart turns the master the
// operator chose into a replica of nothing. The pod that holds the most of the stream (the
// restarted master with what it loaded from disk, or a replica that followed it) is promoted
// at once, the recorded master first among equals; another master holding that much already leads
// (promotedMaster). Replicas that followed the master at its address (it restarted in place)
// find a replica there, which refuses to sync them, and keep what they hold. Nil while the
// recorded master follows any address, or some pod follows a pod that answers as a master:
// chooseMaster decides.
func restartedWaiting(d Design, answering []*Member, current *Member) *Member {
	// A master handing its role over (FAILOVER TO) follows a pod: only one that follows no
	// master since it started restarted.
	if !current.Role.WaitsForMaster() {
		return nil
	}
	masterAt := map[string]bool{}
	for _, m := range answering {
		if m.Role.Kind == redis.RoleMaster {
			masterAt[net.JoinHostPort(m.IP, strconv.Itoa(m.Port))] = true
		}
	}
	var waiting []*Member
	for _, m := range answering {
		r := m.Role
		if r.Kind != redis.RoleSlave {
			continue
		}
		if masterAt[net.JoinHostPort(r.MasterIP, strconv.Itoa(r.MasterPort))] {
			return nil
		}
		waiting = append(waiting, m)
	}
	best := leader(waiting, d.Current)
	if m := promotedMaster(answering, d.Current, best.Role.ReplicationOffset); m != nil {
		return m
	}
	return best
}

// leadWaiting names the master when no pod is one and every pod that answers waits for its
// master as it started (redis.Role.WaitsForMaster): the first master, or, after every pod
// restarted, the pod that holds the most (the recorded master first among equals). Sentinels
// cannot choose here: they fail over only to a replica they learnt from a master. While the
// recorded master's pod does not answer yet, and its grace has not passed, it is waited for:
// its disk may hold the most. ok is false when the rule does not apply.
func leadWaiting(d Design, members []Member, answering []*Member) (plan Plan, ok bool) {
	for _, m := range answering {
		if !m.Role.WaitsForMaster() {
			return Plan{}, false
		}
	}
	if d.Current != "" && !d.MayPromote {
		for _, m := range members {
			if m.Pod == d.Current && m.Role == nil {
				return Plan{Wait: fmt.Sprintf("every pod that answers waits for its master; waiting for the master %s to answer, it may hold the most", d.Current),
					MasterDown: true}, true
			}
		}
	}
	best := leader(answering, d.Current)
	if d.Current == "" && d.FirstMaster != "" {
		if best = firstMaster(d, answering); best == nil {
			return Plan{Wait: fmt.Sprintf("waiting for %s, which holds the restored data, to answer: it starts as the master", d.FirstMaster)}, true
		}
		return Plan{Master: best.Pod, Steps: []Step{{Kind: StepLead, On: best.Pod,
			Reason: fmt.Sprintf("no pod is master yet; %s holds the restored data and starts as the master", best.Pod)}}}, true
	}
	reason := fmt.Sprintf("no pod is master yet; %s starts as the master", best.Pod)
	if d.Current != "" {
		reason = fmt.Sprintf("every pod restarted and waits for its master; %s holds the most of the stream (offset %d)", best.Pod, best.Role.ReplicationOffset)
	}
	return Plan{Master: best.Pod, Steps: []Step{{Kind: StepLead, On: best.Pod, Reason: reason}}}, true
}

// firstMaster returns the candidate that is d.FirstMaster, nil when none is.
func firstMaster(d Design, candidates []*Member) *Member {
	for _, m := range candidates {
		if m.Pod == d.FirstMaster {
			return m
		}
	}
	return nil
}

// leader is BestReplica of the candidates, except that the recorded master (current) wins
// among equals: it was the master, and its disk was written first.
func leader(candidates []*Member, current string) *Member {
	best := BestReplica(candidates)
	for _, m := range candidates {
		if m.Pod == current && m.Role.ReplicationOffset == best.Role.ReplicationOffset {
			return m
		}
	}
	return best
}

// promotedMaster returns the master other than the recorded one (current) that holds the most,
// when it holds at least need, the offset of the best replica left to promote; nil otherwise.
// The callers know that no replica follows it. Such a master is a replica promoted already: by
// a reconcile whose status write the caller has not read yet (the status comes from a cache),
// or before an operator restart lost that write. A promoted replica keeps its offset and only
// gains from the writes it takes, so it holds at least what its former peers hold: promoting
// one of them as well would drop the writes the first one acknowledged.
func promotedMaster(answering []*Member, current string, need int64) *Member {
	var masters []*Member
	for _, m := range answering {
		if m.Pod != current && m.Role.Kind == redis.RoleMaster && m.Role.ReplicationOffset >= need {
			masters = append(masters, m)
		}
	}
	return BestReplica(masters)
}

// promote picks the replica to promote once the caller allows it, with the plan that promotes
// it. When a master already holds at least what that replica holds (promotedMaster), that
// master is returned instead, and the caller makes it lead without a second promotion.
func promote(d Design, answering []*Member) (*Member, Plan) {
	if d.Current == "" && d.FirstMaster != "" {
		// No master was chosen yet and the restored pod is not one: nothing holds data to
		// fail over from, and no empty pod may take the restored one's place.
		return nil, Plan{Wait: fmt.Sprintf("waiting for %s, which holds the restored data, to start as the master", d.FirstMaster)}
	}
	down := fmt.Sprintf("the master %s does not answer", cmp.Or(d.Current, "(none yet)"))
	if d.Sentinels {
		return nil, Plan{Wait: down + "; the sentinels fail over", MasterDown: true}
	}
	if !d.MayPromote {
		return nil, Plan{Wait: down + "; waiting for it to come back before promoting a replica", MasterDown: true}
	}
	// A pod that is still a replica holds the old master's data; one that answers as a master
	// nobody follows restarted, possibly empty, and leads only when it holds at least as much
	// (it was promoted already, below) or no replica answers.
	var replicas []*Member
	for _, m := range answering {
		if m.Role.Kind == redis.RoleSlave {
			replicas = append(replicas, m)
		}
	}
	if len(replicas) == 0 {
		replicas = answering
	}
	best := BestReplica(replicas)
	if m := promotedMaster(answering, d.Current, best.Role.ReplicationOffset); m != nil {
		return m, Plan{}
	}
	return best, Plan{
		Master:     best.Pod,
		MasterDown: true,
		Steps: []Step{{Kind: StepPromote, On: best.Pod,
			Reason: fmt.Sprintf("%s; %s has the highest replication offset (%d)", down, best.Pod, best.Role.ReplicationOffset)}},
	}
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
