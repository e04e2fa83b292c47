// Package clusterplan decides, from what every pod of a Redis Cluster reports, the next Redis
// commands that bring the cluster to its designed shape: every node knows every other at its
// current address, no node remembers pods that are gone, all 16384 slots are served, every
// shard has its replicas, and leader pods are the masters. It is pure: observations in, steps
// out, so that each healing rule is a table test; the controller runs the steps.
//
// A plan holds the steps of one stage only. Later stages depend on the effects of earlier ones
// (slots can be assigned only once nodes know each other), so the controller runs the steps,
// observes again and asks for the next plan.
package clusterplan

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
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
	// them to a node (see orphans.go): on a fresh read of every node, the one master holding
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
	stages := []func(*observed) Plan{readdress, meet, forget, finishMigrations, assignSlots, replicate, failBack, announce, agree, rebalance, replicasListed, depart, spread}
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

// readdress has each node that announces another address than it should announce the right
// one at run time. Behind NodePorts (a member with a dial address of its own): the node ports
// of a Service that was recreated, the IP of a Kubernetes node that changed under a running
// container; a restarted node reads them from its pod's file and environment
// (builder/cluster_network.go), this covers the time between. In either mode, a node that
// announces another IP than its own: the cluster was switched between NodePort and
// in-cluster addresses and its pod still runs the old template, which the rolling update
// replaces later, while the Services of the old mode are already gone. (In-cluster, ports
// alone are left as they are: a user's configuration may set them.) It comes first: the
// other nodes learn the address from the node's own messages, and meet then introduces it
// anew to those that keep the old one.
func readdress(o *observed) Plan {
	var plan Plan
	for i := range o.members {
		m := &o.members[i]
		if m.IP == "" {
			continue
		}
		me := o.self[m.Pod]
		samePorts := me.Addr.Port == m.Port && me.Addr.BusPort == m.BusPort
		if me.Addr.IP == m.IP && (samePorts || m.DialIP == "") {
			continue
		}
		plan.Steps = append(plan.Steps, Step{Kind: StepAnnounce, On: m.Pod, IP: m.IP, Port: m.Port, BusPort: m.BusPort,
			Reason: fmt.Sprintf("it announces %s@%d, its address is %s@%d", me.Addr.HostPort(), me.Addr.BusPort, hostPort(m), m.BusPort)})
	}
	return plan
}

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

// knows: a's node table has b's node, past its handshake.
func (o *observed) knows(a, b *Member) bool {
	if a == b {
		return true
	}
	n, ok := a.View.NodeByID(o.idOf[b.Pod])
	return ok && !n.Is(redis.FlagHandshake)
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

// forget removes nodes that no pod is any more (a pod replaced by an empty one, a follower
// scaled away) from every view, so that they are not counted as failed masters or replicas.
// A gone node that still serves slots is left alone until Redis fails its shard over.
func forget(o *observed) Plan {
	var plan Plan
	for _, m := range o.members {
		myMaster := ""
		if me, ok := m.View.Myself(); ok {
			myMaster = me.MasterID
		}
		for _, n := range m.View.Nodes {
			if _, member := o.ids[n.ID]; member || n.Is(redis.FlagHandshake) {
				continue
			}
			if n.SlotCount() > 0 {
				if hasReplicaAmong(o, m.View, n.ID) {
					plan.Wait = fmt.Sprintf("node %s (%s) is gone but still serves %d slots: waiting for its replica to take over", short(n.ID), n.Addr.HostPort(), n.SlotCount())
				} else {
					plan.Problems = appendOnce(plan.Problems, fmt.Sprintf("node %s (%s) is gone and serves %d slots with no replica left: its data is lost unless the pod comes back", short(n.ID), n.Addr.HostPort(), n.SlotCount()))
				}
				continue
			}
			if n.ID == myMaster {
				continue // replicate moves this member first
			}
			plan.Steps = append(plan.Steps, Step{Kind: StepForget, On: m.Pod, NodeID: n.ID,
				Reason: fmt.Sprintf("node %s (%s) is no pod of this cluster", short(n.ID), n.Addr.HostPort())})
		}
	}
	if len(plan.Steps) > 0 {
		plan.Wait, plan.Problems = "", nil
	}
	return plan
}

func hasReplicaAmong(o *observed, view *redis.Topology, masterID string) bool {
	for _, r := range view.ReplicasOf(masterID) {
		if _, member := o.ids[r.ID]; member {
			return true
		}
	}
	return false
}

// assignSlots gives unserved slots to the leader designed for them: all of them on a new
// cluster, the rest after a bootstrap that was interrupted.
func assignSlots(o *observed) Plan {
	var owned []redis.SlotRange
	for _, me := range o.self {
		owned = append(owned, me.Slots...)
	}
	for _, n := range o.seed.View.Nodes {
		if _, member := o.ids[n.ID]; !member {
			owned = append(owned, n.Slots...)
		}
	}
	missing := redis.MissingSlots(owned)
	if len(missing) == 0 {
		return Plan{}
	}
	var plan Plan
	designed := redis.SplitSlots(o.design.Leaders)
	for i, want := range designed {
		leader := o.member(Leader, i)
		var take []redis.SlotRange
		for _, gap := range missing {
			if r, ok := intersect(want, gap); ok {
				take = append(take, r)
			}
		}
		if len(take) == 0 {
			continue
		}
		if !o.self[leader.Pod].IsMaster() {
			plan.Problems = append(plan.Problems, fmt.Sprintf("slots %s are unserved and their leader %s is a replica", formatRanges(take), leader.Pod))
			continue
		}
		free, orphans := o.orphaned(take)
		if len(free) > 0 {
			plan.Steps = append(plan.Steps, Step{Kind: StepAddSlots, On: leader.Pod, Slots: free,
				Reason: fmt.Sprintf("serve slots %s", formatRanges(free))})
		}
		if len(orphans) > 0 {
			plan.Steps = append(plan.Steps, adoptStep(o, leader, orphans))
		}
	}
	return plan
}

// shard is a master that takes replicas: one that serves slots, or a leader pod designed to
// be a master that waits for slots (scale-out). A departing master is no shard: nothing is
// attached to what is about to leave.
type shard struct {
	master redis.Node
	// replicas are the designed members that replicate it, by node ID.
	replicas []string
	leader   *Member // the leader pod in the shard, master or replica
}

// replicate attaches nodes that serve nothing (new followers, pods that came back empty) as
// replicas: follower i to the shard of leader i mod n, unless that keeps it on its master's
// Kubernetes node while another shard on another node needs a replica; an empty leader to the
// shard that has no leader pod left (its follower was promoted). A replica whose master left
// or was emptied by a scale-in moves to a shard that lacks one, and so does a replica in
// excess of the design while another shard lacks one. Departing pods are left as they are.
func replicate(o *observed) Plan {
	shards := o.shards()
	perShard := 0
	if o.design.Leaders > 0 {
		perShard = o.design.Followers / o.design.Leaders
	}
	var plan Plan
	var waits []string
	parked := 0        // designed replicas still with a departing master that serves slots
	var attached []int // steps attaching an empty follower pod, whose targets may be exchanged
	for _, m := range o.members {
		if o.departing(&m) {
			continue
		}
		var p placement
		if o.self[m.Pod].IsReplica() {
			p = o.placeReplica(m, shards, perShard)
		} else {
			p = o.placeEmptyNode(m, shards, perShard)
		}
		switch {
		case p.step != nil:
			if p.step.Kind == StepReplicate && m.Role == Follower && !o.self[m.Pod].IsReplica() {
				attached = append(attached, len(plan.Steps))
			}
			plan.Steps = append(plan.Steps, *p.step)
		case p.wait != "":
			waits = append(waits, p.wait)
		case p.problem != "":
			plan.Problems = append(plan.Problems, p.problem)
		case p.parked:
			parked++
		}
	}
	if len(plan.Steps) > 0 {
		o.uncolocate(plan.Steps, attached)
		plan.Problems = nil
		return plan
	}
	if len(waits) > 0 {
		return Plan{Wait: strings.Join(firstWaits(waits), "; ")}
	}
	if len(plan.Problems) > 0 {
		return plan
	}
	if step, ok := o.moveSpareReplica(shards, perShard); ok {
		return Plan{Steps: []Step{step}}
	}
	if parked > 0 {
		return plan // the replicas come back once their departing master is emptied
	}
	// A shard short of replicas waits for one to attach (a returning node resyncs, a pod
	// restarts): no human is needed; while none is up the cluster reports it as an outage.
	var shortfalls []string
	for _, s := range shards {
		if len(s.replicas) < perShard {
			shortfalls = append(shortfalls, fmt.Sprintf("master %s (%s) has %d of %d replicas", short(s.master.ID), o.podOf(s.master.ID), len(s.replicas), perShard))
		}
	}
	if len(shortfalls) > 0 {
		return Plan{Wait: "waiting for replicas: " + strings.Join(firstWaits(shortfalls), "; ")}
	}
	return plan
}

// placement is what replicate decides for one member: at most one field is set, none when
// the member stays as it is.
type placement struct {
	step    *Step
	wait    string
	problem string
	// parked: a replica of a departing master that still serves slots.
	parked bool
}

// placeReplica leaves a replica with its master unless that master is leaving and serves
// nothing any more: then it moves to a shard that lacks a replica.
func (o *observed) placeReplica(m Member, shards []*shard, perShard int) placement {
	master := o.self[m.Pod].MasterID
	switch {
	case o.followsStaleAddress(m, master):
		// Its node table knows the master's new address, its replication link does not: the
		// link would stay down for ever. REPLICATE again points the link at the table's address.
		at := o.ids[master]
		return placement{step: &Step{Kind: StepReplicate, On: m.Pod, NodeID: master,
			Reason: fmt.Sprintf("replica %s still follows %s, its master %s (%s) is at %s now", m.Pod,
				net.JoinHostPort(m.Replication.MasterIP, strconv.Itoa(m.Replication.MasterPort)), short(master), at.Pod, hostPort(at))}}
	case !m.Replication.LinkUp() && o.forgottenByOthers(m, master):
		// Its master left the cluster (a scale-in, every other node forgot it) and a replica
		// cannot forget its own master: waiting for the link would wait for ever.
	case !m.Replication.LinkUp():
		return placement{wait: fmt.Sprintf("replica %s is syncing with its master", m.Pod)}
	case o.shardOf(shards, master) != nil:
		return placement{}
	case o.departingWithSlots(master):
		return placement{parked: true} // it keeps the leaving shard redundant until its slots have moved
	}
	if step, ok := o.attach(m, shards, perShard, fmt.Sprintf("its master %s (%s) is leaving the cluster", short(master), o.podOf(master))); ok {
		return placement{step: &step}
	}
	return placement{problem: fmt.Sprintf("replica %s follows %s, which is leaving, and no shard needs a replica", m.Pod, o.podOf(master))}
}

// forgottenByOthers: no other member that answered knows the node masterID any more (and at
// least one answered), so it is gone from the cluster, not a master that is only restarting.
func (o *observed) forgottenByOthers(m Member, masterID string) bool {
	answered := 0
	for _, other := range o.members {
		if other.Pod == m.Pod || other.View == nil {
			continue
		}
		answered++
		if _, ok := other.View.NodeByID(masterID); ok {
			return false
		}
	}
	return answered > 0
}

// followsStaleAddress: the replica's link is down and points at an address that is not where
// the master it follows (in its own node table) is now.
func (o *observed) followsStaleAddress(m Member, masterID string) bool {
	at, ok := o.ids[masterID]
	if !ok || m.Replication.Kind != redis.RoleSlave || m.Replication.LinkUp() || m.Replication.MasterIP == "" || at.IP == "" {
		return false
	}
	return m.Replication.MasterIP != at.IP || m.Replication.MasterPort != at.Port
}

// placeEmptyNode attaches a master that serves nothing and has no replicas to a shard as its
// replica, after introducing the two if they do not know each other yet. An empty leader
// whose shard kept its leader pod stays a master: it is a new shard.
func (o *observed) placeEmptyNode(m Member, shards []*shard, perShard int) placement {
	if o.self[m.Pod].SlotCount() > 0 || o.replicaCount(o.idOf[m.Pod]) > 0 {
		return placement{}
	}
	if m.Role == Leader && o.leaderlessShard(m, shards) == nil {
		return placement{} // a new shard: rebalance gives it slots
	}
	meet, wait := o.introduce(m, shards, perShard)
	switch {
	case meet != nil:
		return placement{step: meet}
	case wait != "":
		return placement{wait: wait}
	}
	if step, ok := o.attach(m, shards, perShard, ""); ok {
		return placement{step: &step}
	}
	return placement{problem: fmt.Sprintf("pod %s serves no slots and no shard needs a replica", m.Pod)}
}

// introduce returns, when m does not know the master it would be attached to yet, the MEET
// that introduces them directly (gossip from the seed would take seconds), or a wait while
// their handshake runs.
func (o *observed) introduce(m Member, shards []*shard, perShard int) (*Step, string) {
	target := o.chooseShard(m, shards, perShard)
	if target == nil {
		return nil, ""
	}
	if known, ok := m.View.NodeByID(target.master.ID); ok && !known.Is(redis.FlagHandshake) {
		return nil, ""
	}
	master, ok := o.ids[target.master.ID]
	if !ok || handshaking(m.View, master) {
		return nil, fmt.Sprintf("%s does not know master %s yet (handshake)", m.Pod, short(target.master.ID))
	}
	step := meetStep(&m, master, fmt.Sprintf("introduce its master %s (%s) before it replicates it", short(target.master.ID), master.Pod))
	return &step, ""
}

// attach returns the step that makes m a replica of the shard chosen for it, and counts it
// there so the next member goes elsewhere.
func (o *observed) attach(m Member, shards []*shard, perShard int, why string) (Step, bool) {
	target := o.chooseShard(m, shards, perShard)
	if target == nil {
		return Step{}, false
	}
	target.replicas = append(target.replicas, o.idOf[m.Pod])
	if m.Role == Leader && target.leader == nil {
		target.leader = &m
	}
	reason := fmt.Sprintf("replicate master %s (%s)", short(target.master.ID), o.podOf(target.master.ID))
	if why != "" {
		reason += ": " + why
	}
	return Step{Kind: StepReplicate, On: m.Pod, NodeID: target.master.ID, Reason: reason}, true
}

// moveSpareReplica moves one replica from a shard that has more than the design asks for to
// one that has fewer (after a scale-in Redis gives an emptied master's replicas to the node
// that took its last slot). It takes a follower pod, preferably one off the needy master's node.
func (o *observed) moveSpareReplica(shards []*shard, perShard int) (Step, bool) {
	for _, needy := range shards {
		if len(needy.replicas) >= perShard {
			continue
		}
		for _, rich := range shards {
			if len(rich.replicas) <= perShard {
				continue
			}
			var best *Member
			for _, id := range rich.replicas {
				r := o.ids[id]
				if r.Role != Follower {
					continue
				}
				if best == nil || o.betterToMove(r, best, needy, rich) {
					best = r
				}
			}
			if best == nil {
				continue
			}
			return Step{Kind: StepReplicate, On: best.Pod, NodeID: needy.master.ID,
				Reason: fmt.Sprintf("replicate master %s (%s): %s has %d replicas, it has %d", short(needy.master.ID), o.podOf(needy.master.ID), o.podOf(rich.master.ID), len(rich.replicas), len(needy.replicas))}, true
		}
	}
	return Step{}, false
}

// betterToMove: r is a better replica than best to send from rich to needy: off needy's
// master's node first, then one sharing rich's master's node (see spread).
func (o *observed) betterToMove(r, best *Member, needy, rich *shard) bool {
	if o.sameNode(r, needy) != o.sameNode(best, needy) {
		return !o.sameNode(r, needy)
	}
	return o.sameNode(r, rich) && !o.sameNode(best, rich)
}

func (o *observed) sameNode(m *Member, s *shard) bool {
	master, ok := o.ids[s.master.ID]
	return ok && m.NodeName != "" && master.NodeName == m.NodeName
}

// replicaCount is the number of members that say they replicate the node.
func (o *observed) replicaCount(masterID string) int {
	n := 0
	for _, me := range o.self {
		if me.IsReplica() && me.MasterID == masterID {
			n++
		}
	}
	return n
}

func (o *observed) shards() []*shard {
	var out []*shard
	for _, m := range o.members {
		n := o.self[m.Pod]
		if !n.IsMaster() || o.departing(&m) {
			continue
		}
		if n.SlotCount() == 0 && m.Role != Leader {
			continue
		}
		s := &shard{master: n}
		if m.Role == Leader {
			s.leader = o.ids[n.ID]
		}
		for _, r := range o.members {
			me := o.self[r.Pod]
			if me.IsReplica() && me.MasterID == n.ID && !o.departing(&r) {
				s.replicas = append(s.replicas, me.ID)
				if r.Role == Leader {
					s.leader = o.ids[me.ID]
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func (o *observed) shardOf(shards []*shard, masterID string) *shard {
	for _, s := range shards {
		if s.master.ID == masterID {
			return s
		}
	}
	return nil
}

// departingWithSlots reports whether the node is a departing member that still serves slots.
func (o *observed) departingWithSlots(id string) bool {
	m, ok := o.ids[id]
	return ok && o.departing(m) && o.self[m.Pod].SlotCount() > 0
}

// leaderlessShard is the shard an empty leader belongs to: one whose follower was promoted and
// that has no leader pod left, preferably the one of its own ordinal.
func (o *observed) leaderlessShard(m Member, shards []*shard) *shard {
	var best *shard
	for _, s := range shards {
		if s.leader != nil || s.master.SlotCount() == 0 {
			continue
		}
		if master, ok := o.ids[s.master.ID]; ok && master.Role == Follower && master.Ordinal%o.design.Leaders == m.Ordinal {
			return s
		}
		if best == nil {
			best = s
		}
	}
	return best
}

func (o *observed) chooseShard(m Member, shards []*shard, perShard int) *shard {
	if m.Role == Leader {
		return o.leaderlessShard(m, shards)
	}
	designed := o.member(Leader, m.Ordinal%max(o.design.Leaders, 1))
	var candidates []*shard
	for _, s := range shards {
		if len(s.replicas) < perShard {
			candidates = append(candidates, s)
		}
	}
	score := func(s *shard) int {
		points := 0
		if s.leader != nil && s.leader.Pod == designed.Pod {
			points += 2
		}
		if master, ok := o.ids[s.master.ID]; !ok || master.NodeName == "" || master.NodeName != m.NodeName {
			points += 4 // never on its master's node when another choice exists
		}
		return points
	}
	var best *shard
	for _, s := range candidates {
		if best == nil || score(s) > score(best) {
			best = s
		}
	}
	return best
}

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

func intersect(a, b redis.SlotRange) (redis.SlotRange, bool) {
	r := redis.SlotRange{Start: max(a.Start, b.Start), End: min(a.End, b.End)}
	return r, r.Start <= r.End
}

func formatRanges(ranges []redis.SlotRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func hostPort(m *Member) string { return net.JoinHostPort(m.IP, strconv.Itoa(m.Port)) }

// short abbreviates a node ID for messages, as redis-cli does.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// waitsNamed is how many waits a message names before it counts the rest.
const waitsNamed = 3

// firstWaits keeps the first waitsNamed items of s and says how many more there are.
func firstWaits(s []string) []string {
	if len(s) > waitsNamed {
		return append(s[:waitsNamed:waitsNamed], fmt.Sprintf("and %d more", len(s)-waitsNamed))
	}
	return s
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// announce has a member tell another what it is now when that one's view of it is stale in a
// way only the member's own messages correct: a node learns a master's slots, and a master
// its new replica, from that node's pings, which with a handful of nodes can be seconds
// apart (a ping goes to a node every second, chosen among a few at random). A MEET from the
// member to the other, which already knows it, carries the member's slots and role at once;
// the handshake it also starts ends as soon as the other answers with a node ID known to it.
// Seen during a bootstrap: a master given its slots after it was met, shown without them for
// up to 9 s by a node that then reported cluster_state:fail.
func announce(o *observed) Plan {
	var plan Plan
	for _, m := range o.members {
		for i := range o.members {
			x := &o.members[i]
			if x.Pod == m.Pod {
				continue
			}
			want := o.self[x.Pod]
			seen, ok := m.View.NodeByID(want.ID)
			if !ok || seen.Link != redis.LinkConnected || seen.Is(redis.FlagHandshake) || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail) ||
				handshaking(m.View, x) {
				continue // agree waits for these
			}
			slotsUnseen := want.IsMaster() && want.SlotCount() > 0 && seen.SlotCount() == 0
			replicaUnseen := want.IsReplica() && o.idOf[m.Pod] == want.MasterID && (!seen.IsReplica() || seen.MasterID != want.MasterID)
			if slotsUnseen || replicaUnseen {
				to := m
				what := "its slots"
				if replicaUnseen {
					what = "that it is its replica"
				}
				plan.Steps = append(plan.Steps, meetStep(x, &to, fmt.Sprintf("tell %s %s, which it has not heard yet", m.Pod, what)))
			}
		}
	}
	return plan
}

// agree waits until every member knows every other, linked and healthy, by the hostname it
// announces (if it does), and no node that is no member; and until every member sees each master that serves slots as a master, and no
// replica as one (clients are sent where a node believes slots are). Which master a replica
// follows reaches the other members by gossip seconds later; clients are not routed by it, so
// that is not waited for (replicasListed checks each replica with its own master).
func agree(o *observed) Plan {
	for _, m := range o.members {
		for _, x := range o.members {
			if x.Pod == m.Pod {
				continue
			}
			want := o.self[x.Pod]
			seen, ok := m.View.NodeByID(want.ID)
			switch {
			case !ok:
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not know %s yet", m.Pod, x.Pod)}
			case seen.Link != redis.LinkConnected || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail):
				return Plan{Wait: fmt.Sprintf("waiting for %s to reach %s (link %s, flags %s)", m.Pod, x.Pod, seen.Link, seen.Flags)}
			case want.IsMaster() && want.SlotCount() > 0 && !seen.IsMaster(),
				want.IsReplica() && seen.IsMaster() && seen.SlotCount() > 0:
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not see %s's current role yet", m.Pod, x.Pod)}
			case want.Addr.Hostname != "" && seen.Addr.Hostname != want.Addr.Hostname:
				// With cluster-preferred-endpoint-type hostname, a node that does not know
				// another's hostname redirects clients to it as "?".
				return Plan{Wait: fmt.Sprintf("waiting for gossip: %s does not know %s's hostname %s yet", m.Pod, x.Pod, want.Addr.Hostname)}
			}
		}
		if extra := len(m.View.Nodes) - len(o.members); extra > 0 {
			return Plan{Wait: fmt.Sprintf("waiting for gossip: %s still lists %d node(s) that are no pod of this cluster", m.Pod, extra)}
		}
	}
	return Plan{}
}

// replicasListed waits, once slots are where they belong, until each replica's link (ROLE)
// goes to the master it says it follows, which lists it among its replicas. Slot moves do not
// wait for it: a master learns of a new replica only when the two next exchange a ping, which
// in a cluster of a dozen nodes can take seconds.
func replicasListed(o *observed) Plan {
	for _, m := range o.members {
		if me := o.self[m.Pod]; me.IsReplica() {
			master, ok := o.ids[me.MasterID]
			if !ok || !m.Replication.LinkUp() || m.Replication.MasterIP != master.IP || m.Replication.MasterPort != master.Port {
				return Plan{Wait: fmt.Sprintf("waiting for replica %s's link to its master %s", m.Pod, o.podOf(me.MasterID))}
			}
			if seen, ok := master.View.NodeByID(me.ID); !ok || !seen.IsReplica() || seen.MasterID != me.MasterID {
				return Plan{Wait: fmt.Sprintf("waiting for gossip: master %s does not list its replica %s yet", master.Pod, m.Pod)}
			}
		}
	}
	return Plan{}
}

// EarlySlots gives each leader of a new cluster its designed slots as soon as it runs, alone,
// before it is met: a master that serves no slot counts itself in a minority, and Redis then
// holds it in cluster_state:fail for up to 5 s (min(cluster-node-timeout, 5 s)) after it gets
// some; taken within Redis's own first seconds, the slots cost no such wait. A leader met
// first and given slots afterwards also leaves the nodes that met it without its slots until
// it next pings them (a node learns a master's slots from that master's own messages), which
// gossip may take seconds to do. So every leader that knows no other node and serves nothing
// gets its range, whether the other members have met each other or answer yet, unless a
// member's view shows a node serving any of that range (a scale-out's new leader beside
// established ones, a leader pod back empty whose old node still holds its slots). The caller
// must also know the cluster is new (never bootstrapped), or an empty leader pod could claim
// slots its promoted follower serves while no pod that knows it answers.
func EarlySlots(design Design, members []Member) []Step {
	var served []redis.SlotRange
	for _, m := range members {
		if m.View == nil {
			continue
		}
		for _, n := range m.View.Nodes {
			served = append(served, n.Slots...)
			for _, mig := range append(slices.Clone(n.Importing), n.Migrating...) {
				served = append(served, redis.SlotRange{Start: mig.Slot, End: mig.Slot})
			}
		}
	}
	ranges := redis.SplitSlots(design.Leaders)
	var steps []Step
	for _, m := range members {
		if m.Role != Leader || m.Ordinal < 0 || m.Ordinal >= len(ranges) || m.View == nil || len(m.View.Nodes) != 1 {
			continue
		}
		me, ok := m.View.Myself()
		if !ok || !me.IsMaster() || me.SlotCount() > 0 || len(me.Importing) > 0 || len(me.Migrating) > 0 {
			continue
		}
		r := ranges[m.Ordinal]
		if slices.ContainsFunc(served, func(s redis.SlotRange) bool { _, overlap := intersect(r, s); return overlap }) {
			continue
		}
		steps = append(steps, Step{Kind: StepAddSlots, On: m.Pod, Slots: []redis.SlotRange{r},
			Reason: fmt.Sprintf("serve slots %s from the start", r)})
	}
	return steps
}
