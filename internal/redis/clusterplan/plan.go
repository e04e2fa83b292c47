// Package clusterplan decides, from what every pod of a Redis Cluster reports, the next Redis
// commands that bring the cluster to its designed shape: every node knows every other at its
// current address, no node remembers pods that are gone, all 16384 slots are served, every
// shard has its replicas, and leader pods are the masters. It is pure: observations in, steps
// out, so that each healing rule is a table test; the controller runs the steps.
//
// A plan holds the steps of one stage only. Later stages depend on the effects of earlier ones
// (slots can be assigned only once nodes know each other), so the controller runs the steps,
// observes again and asks for the next plan.
//
// Files: plan.go holds the types, [Compute] with its list of stages, and the indexed
// observations the stages share. Each stage lives in a stage_*.go file, related stages share
// one; in the order Compute runs them:
//
//  1. readdress, stage_address.go: each node announces its right address.
//  2. meet, stage_meet.go: nodes know each other at their current addresses ([EarlyMeets]
//     too).
//  3. forget, stage_forget.go: no node remembers a pod that is gone.
//  4. finishMigrations, stage_reshard.go: a slot move that was started is finished.
//  5. assignSlots, stage_slots.go: every slot is served ([EarlySlots] too); slots no node
//     claims while a view maps them are adopted where their keys are (stage_slots_orphans.go).
//  6. replicate, stage_replicas.go: every shard has its replicas.
//  7. failBack, stage_failback.go: leader pods are the masters.
//  8. announce, stage_address.go: a node tells another the slots or role it missed.
//  9. agree, stage_agree.go: every member sees every other as it is.
//  10. distinctEpochs, stage_epochs.go: no two masters share a config epoch.
//  11. slotMapsAgree, stage_slotmaps.go: every view maps each slot to the master that claims
//     it, before anything moves.
//  12. rebalance, stage_reshard.go: each leader serves its share of the slots.
//  13. replicasListed, stage_replicas.go: each master lists its replicas.
//  14. depart, stage_reshard.go: departing pods serve nothing and wait to be removed.
//  15. spread, stage_spread.go: each shard spans two Kubernetes nodes.
//
// The other planners the controller asks, each from the members' observations: scalein.go
// ([PlanScaleIn]: which departing pods may go), roll.go ([Roll]: a rolling update's next
// move), requested.go ([PlanRequestedFailover]), stuck.go ([PlanStuckMasters]), handmade.go
// ([HandMadeFailovers]) and outage.go ([Outages]); electable.go says whether a replica can win
// a failover's election. format.go and slotranges.go hold the small helpers for messages and
// slot ranges.
package clusterplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// PodRole is the role a pod is designed for: the StatefulSet it belongs to.
type PodRole string

// Designed roles.
const (
	Leader   PodRole = "leader"
	Follower PodRole = "follower"
)

// Member is one pod of the cluster: what it is designed to be and what it reports.
type Member struct {
	Pod     string
	Role    PodRole
	Ordinal int
	// NodeName is the Kubernetes node the pod runs on; a follower is kept off its master's node.
	NodeName string
	// IP, Port and BusPort are the address the node should announce, at which the other nodes
	// and clients know it: the pod's, or behind NodePorts its Kubernetes node's IP and node ports.
	IP      string
	Port    int
	BusPort int
	// DialIP and DialPort, when set, are where the operator reaches the pod instead (its pod
	// IP and container port, behind NodePorts); the announced address is then also kept
	// current at run time (readdress).
	DialIP   string
	DialPort int
	// View is CLUSTER NODES as this member answers it; nil when it did not answer.
	View *redis.Topology
	// Busy: instead of its view the member answered BUSY (a script or function running past
	// its time limit); the controller clocks it into Stuck.Busy.
	Busy bool
	// Replication is ROLE as this member answers it.
	Replication redis.Role
	// Server is INFO server as this member answers it (zero when it did not): what the
	// operator may send it follows this, not the resource's clusterVersion.
	Server redis.ServerInfo
	// Outdated: the pod runs an old revision of its StatefulSet and waits to be replaced.
	Outdated bool
}

// Design is the shape the custom resource asks for. Pods beyond it (ordinals at or above the
// designed count, while a scale-in drains them) are departing: they hand their slots over and
// are then removed.
type Design struct {
	Leaders   int
	Followers int
	// KeepMasters are follower pods a user made master (a requested failover): their leader
	// pods do not take those shards back.
	KeepMasters []string
	// RollingUpdate: the operator is replacing pods one at a time for a new template. The
	// replica it replaces is missing by plan, so a master left without one meanwhile is
	// progress, not an outage (its shard keeps serving).
	RollingUpdate bool
}

// StepKind names a Redis command the plan asks for.
type StepKind string

// The commands a plan may ask for. There is deliberately no reset or flush.
const (
	StepMeet      StepKind = "Meet"
	StepForget    StepKind = "Forget"
	StepAddSlots  StepKind = "AddSlots"
	StepReplicate StepKind = "Replicate"
	StepFailover  StepKind = "Failover"
	// StepMigrate moves slots with their keys: SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE.
	StepMigrate StepKind = "Migrate"
	// StepAnnounce sets the address the node announces (CONFIG SET cluster-announce-*).
	StepAnnounce StepKind = "Announce"
	// StepBumpEpoch gives the owner of slots that a view still maps to a departing node the
	// greatest config epoch (CLUSTER BUMPEPOCH), so that its claim wins in every node's gossip.
	StepBumpEpoch StepKind = "BumpEpoch"
	// StepSetSlotNode tells a master whose view still maps the slots to a departing node who
	// owns them (CLUSTER SETSLOT slot NODE id): NodeID and To name the owner.
	StepSetSlotNode StepKind = "SetSlotNode"
	// StepAdoptSlots gives an owner to slots that no node claims while some view still maps
	// them to a node (see stage_slots_orphans.go): on a fresh read of every node, the one master holding
	// their keys takes them, else the pod the step is on; CLUSTER SETSLOT NODE on the taker,
	// its CLUSTER BUMPEPOCH, then SETSLOT NODE on the other masters.
	StepAdoptSlots StepKind = "AdoptSlots"
)

// Step is one command to run on one pod.
type Step struct {
	Kind StepKind
	// On is the pod that runs the command.
	On string
	// Meet: the address to meet; Announce: the address to announce.
	IP      string
	Port    int
	BusPort int
	// AddSlots: the ranges to take; Migrate: the ranges to move; SetSlotNode: the ranges to give.
	Slots []redis.SlotRange
	// Replicate: the master to follow; Forget: the node to forget; Migrate: the destination;
	// SetSlotNode: the owner.
	NodeID string
	// Migrate: the destination pod (IP and Port are its address); SetSlotNode: the owner's pod.
	To string
	// Reason says why, for events and logs.
	Reason string
}

func (s Step) String() string { return fmt.Sprintf("%s on %s: %s", s.Kind, s.On, s.Reason) }

// Dial is where the operator reaches the member's Redis.
func (m *Member) Dial() (string, int) {
	if m.DialIP != "" {
		return m.DialIP, m.DialPort
	}
	return m.IP, m.Port
}

// Plan is what to do next.
type Plan struct {
	Steps []Step
	// Wait, when there are no steps, says what the cluster is converging on by itself
	// (gossip, a handshake, a replica's sync) or which pod is missing.
	Wait string
	// Problems are what the operator will not mend by itself, each naming the node.
	Problems []string
}

// Converged reports whether the cluster has its designed shape.
func (p Plan) Converged() bool { return len(p.Steps) == 0 && p.Wait == "" && len(p.Problems) == 0 }

// observed is the input indexed once.
type observed struct {
	design  Design
	members []Member
	seed    *Member
	ids     map[string]*Member // node ID → member
	idOf    map[string]string  // pod → node ID
	// self is each member's own line of CLUSTER NODES: what it says of itself (role, master,
	// slots) is current, while what others say of it may lag behind gossip.
	self map[string]redis.Node // pod → node
}

// Compute returns the next steps for the cluster. members must list every pod of the design,
// those that did not answer with a nil View.
func Compute(design Design, members []Member) Plan {
	o, plan, ok := index(design, members)
	if !ok {
		return plan
	}
	stages := []func(*observed) Plan{readdress, meet, forget, finishMigrations, assignSlots, replicate, failBack, announce, agree, distinctEpochs, slotMapsAgree, rebalance, replicasListed, depart, spread}
	for _, stage := range stages {
		if p := stage(o); len(p.Steps) > 0 || p.Wait != "" || len(p.Problems) > 0 {
			return p
		}
	}
	return Plan{}
}

func index(design Design, members []Member) (*observed, Plan, bool) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int {
		if a.Role != b.Role {
			if a.Role == Leader {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Ordinal, b.Ordinal)
	})
	o := &observed{design: design, members: sorted, ids: map[string]*Member{}, idOf: map[string]string{}, self: map[string]redis.Node{}}
	designed := 0
	for i := range sorted {
		if !o.departing(&sorted[i]) {
			designed++
		}
	}
	if want := design.Leaders + design.Followers; designed != want {
		return nil, Plan{Wait: fmt.Sprintf("waiting for pods: %d of %d are running", designed, want)}, false
	}
	var silent []string
	for i := range o.members {
		m := &o.members[i]
		if m.View == nil {
			silent = append(silent, m.Pod)
			continue
		}
		me, ok := m.View.Myself()
		if !ok {
			return nil, Plan{Problems: []string{fmt.Sprintf("pod %s: CLUSTER NODES has no myself line", m.Pod)}}, false
		}
		if other, dup := o.ids[me.ID]; dup {
			return nil, Plan{Problems: []string{fmt.Sprintf("pods %s and %s report the same node ID %s (a copied nodes.conf?)", other.Pod, m.Pod, me.ID)}}, false
		}
		o.ids[me.ID] = m
		o.idOf[m.Pod] = me.ID
		o.self[m.Pod] = me
	}
	if len(silent) > 0 {
		return nil, Plan{Wait: "waiting for Redis to answer on pods " + strings.Join(silent, ", ")}, false
	}
	o.seed = &o.members[0]
	return o, Plan{}, true
}

// departing reports whether the member is beyond the design: a scale-in removes it.
func (o *observed) departing(m *Member) bool {
	if m.Role == Leader {
		return m.Ordinal >= o.design.Leaders
	}
	return m.Ordinal >= o.design.Followers
}

func (o *observed) member(role PodRole, ordinal int) *Member {
	for i := range o.members {
		if o.members[i].Role == role && o.members[i].Ordinal == ordinal {
			return &o.members[i]
		}
	}
	return nil
}

func (o *observed) podOf(id string) string {
	if m, ok := o.ids[id]; ok {
		return m.Pod
	}
	return "no pod"
}

func (o *observed) byPod(pod string) *Member {
	for i := range o.members {
		if o.members[i].Pod == pod {
			return &o.members[i]
		}
	}
	return nil
}

// knows: a's node table has b's node, past its handshake.
func (o *observed) knows(a, b *Member) bool {
	if a == b {
		return true
	}
	n, ok := a.View.NodeByID(o.idOf[b.Pod])
	return ok && !n.Is(redis.FlagHandshake)
}

func myself(m *Member) (redis.Node, bool) {
	if m.View == nil {
		return redis.Node{}, false
	}
	return m.View.Myself()
}
