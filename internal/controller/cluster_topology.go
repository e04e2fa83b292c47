package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// Gossip, handshakes and replica syncs raise no Kubernetes event: while they run the cluster
// is looked at again after these delays.
const (
	afterRedisCommands = 200 * time.Millisecond
	whileConverging    = 300 * time.Millisecond
	whileBroken        = 10 * time.Second
	// whileOutage: what ends an outage (an election among the nodes) is no Kubernetes event.
	whileOutage = 2 * time.Second
	// silentPodRetry asks again a pod the kubelet calls ready but whose Redis did not answer.
	silentPodRetry = 2 * time.Second
	// healthCheckInterval re-reads a Ready cluster: a Redis-level failure need not touch any pod.
	healthCheckInterval = 30 * time.Second
)

// reconcileTopology observes every pod's view of the cluster and runs the next stage of the
// plan: meet, forget, assign slots, replicate, fail back.
func (r *RedisClusterReconciler) reconcileTopology(ctx context.Context, s *clusterScope) (bool, error) {
	s.members = r.observeMembers(ctx, s)
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr)),
		KeepMasters: requestedMasters(s.cr), RollingUpdate: s.rollingUpdate}
	// A leader of a new cluster that started last, with the other pods, gets its slots before
	// it is met, as those that ran earlier did (see clusterplan.EarlySlots for why); also when
	// it answers only after the others were met, in a later reconcile.
	if s.newCluster() {
		if steps := clusterplan.EarlySlots(design, s.members); len(steps) > 0 {
			for _, step := range steps {
				if err := r.runStep(ctx, s, step); err != nil {
					return false, err
				}
			}
			s.members = r.observeMembers(ctx, s)
		}
	}
	handMade, err := r.keepHandMadeMasters(ctx, s)
	if err != nil {
		return false, err
	}
	s.handMade = handMade
	design.KeepMasters = append(design.KeepMasters, handMade...)
	observeClusterMembers(s.cr, s.members)
	plan := clusterplan.Compute(design, s.members)
	if len(plan.Steps) == 0 && plan.Wait == "" {
		// A run of slot moves lasts until the cluster settles: the meets and replicas of a
		// scale-out's later pods come between slices of the same rebalance.
		s.memory.counted.forget(s.cr.Namespace, s.cr.Name, onceRebalance)
		s.memory.counted.forget(s.cr.Namespace, s.cr.Name, onceReshard)
	}

	if wait := r.migrationBlocked(ctx, s, plan.Steps); wait != "" {
		plan = clusterplan.Plan{Wait: wait}
	}
	plan = r.withoutPendingFailovers(s, plan)
	// What the cluster does not serve is said as an outage, whatever the plan does about it;
	// steps and waits of a cluster that serves everything are progress.
	if s.Conditions.HasServed() { // a cluster still being created has no outage to report
		s.outages = clusterplan.Outages(design, s.members)
	}
	// The plan waits for a stuck master to answer, which it may not do before its probe
	// restarts it: its replica is asked to take over meanwhile.
	if err := r.failOverStuckMasters(ctx, s); err != nil {
		return false, err
	}
	switch {
	case len(plan.Steps) > 0:
		reason := status.ReasonBootstrapping
		if plan.Steps[0].Kind == clusterplan.StepMigrate {
			reason = status.ReasonResharding
		}
		s.progressUnlessOutage(r, reason, summarizeSteps(plan.Steps))
		if reason == status.ReasonResharding {
			// Moving slots takes up to a slice (seconds): say so before, not after.
			if err := s.ShowStatus(ctx); err != nil {
				return false, err
			}
		}
		if err := r.runSteps(ctx, s, plan.Steps); err != nil {
			return false, err
		}
		s.Requeue(ctx, afterRedisCommands, "waiting for Redis to act on "+string(plan.Steps[0].Kind))
		return true, nil
	case plan.Wait != "":
		s.progressUnlessOutage(r, status.ReasonConverging, plan.Wait)
		s.Requeue(ctx, whileConverging, plan.Wait)
		return true, nil
	case len(plan.Problems) > 0:
		message := strings.Join(plan.Problems, "; ")
		if !degradedWith(s, message) {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonTopologyProblem, "Observe", "%s", message)
		}
		s.Conditions.Degraded(status.ReasonTopologyProblem, message)
		s.Requeue(ctx, whileBroken, "a topology problem may clear once pods come back")
		return true, nil
	}
	return false, nil
}

// withoutPendingFailovers drops the fail-backs of shards whose election the operator asked
// for recently (see failoverLog): asked again, they would pause the shard's writes and elect
// nobody. A plan left with none waits, saying for what.
func (r *RedisClusterReconciler) withoutPendingFailovers(s *clusterScope, plan clusterplan.Plan) clusterplan.Plan {
	var waits []string
	steps := slices.DeleteFunc(slices.Clone(plan.Steps), func(step clusterplan.Step) bool {
		if step.Kind != clusterplan.StepFailover {
			return false
		}
		wait := r.failovers.wait(s.members, memberByPod(s.members, step.On))
		if wait != "" {
			waits = append(waits, wait)
		}
		return wait != ""
	})
	if len(waits) == 0 {
		return plan
	}
	if len(steps) == 0 {
		return clusterplan.Plan{Wait: strings.Join(waits, "; ")}
	}
	plan.Steps = steps
	return plan
}

// newCluster: the cluster has never served (it is being created), judged by the state the
// operator wrote and by its conditions: never Ready nor in an outage since.
func (s *clusterScope) newCluster() bool {
	switch s.cr.Status.State {
	case "", status.ClusterStateInitializing:
		return true
	case status.ClusterStateBootstrap:
		return !s.Conditions.HasServed()
	}
	return false
}

// migrationBlocked returns why slots cannot move yet: both ends of a move must be in
// cluster_state:ok, or the destination refuses the keys (CLUSTERDOWN). A master that has just
// joined may take a few seconds more than gossip to get there. The plan goes ahead as soon as
// one move can start; each move waits for its own ends (see migrateSlots).
func (r *RedisClusterReconciler) migrationBlocked(ctx context.Context, s *clusterScope, steps []clusterplan.Step) string {
	wait := ""
	for _, step := range steps {
		if step.Kind != clusterplan.StepMigrate {
			continue
		}
		why := r.notClusterOK(ctx, s, step.On, step.To)
		if why == "" {
			return ""
		}
		if wait == "" {
			wait = why
		}
	}
	return wait
}

// clusterInfoReader is a cluster node asked for CLUSTER INFO alone: whether both ends of a slot
// move report cluster_state:ok, and the health check of a pod not observed in this reconcile.
type clusterInfoReader interface {
	ClusterInfo(ctx context.Context) (redis.ClusterInfo, error)
}

// notClusterOK says which of the pods does not report cluster_state:ok, "" when all do.
func (r *RedisClusterReconciler) notClusterOK(ctx context.Context, s *clusterScope, pods ...string) string {
	for _, pod := range pods {
		m := memberByPod(s.members, pod)
		if m == nil {
			return "waiting for pod " + pod
		}
		var c clusterInfoReader
		c, err := r.redisNode(s.memberEndpoint(m))
		if err != nil {
			return fmt.Sprintf("pod %s: %v", pod, err)
		}
		info, err := c.ClusterInfo(ctx)
		if err != nil {
			return fmt.Sprintf("pod %s: %v", pod, err)
		}
		if info.State != "ok" {
			return fmt.Sprintf("waiting for %s to report cluster_state:ok before slots move", pod)
		}
	}
	return ""
}

// observeMembers asks every pod, side by side, for CLUSTER NODES, ROLE and CLUSTER INFO in one
// round trip each; a pod that does not answer is a member without a view, which the plan waits
// for. The CLUSTER INFO answers are kept for the health check of the same reconcile.
func (r *RedisClusterReconciler) observeMembers(ctx context.Context, s *clusterScope) []clusterplan.Member {
	port, busPort := int(builder.ClusterPort(s.cr)), int(builder.ClusterBusPort(s.cr))
	nodePorts := builder.ClusterNodePorts(s.cr)
	var members []clusterplan.Member
	add := func(pods []corev1.Pod, role clusterplan.PodRole) {
		for i := range pods {
			pod := &pods[i]
			m := clusterplan.Member{Pod: pod.Name, Role: role, Ordinal: podOrdinal(pod.Name), NodeName: pod.Spec.NodeName,
				IP: pod.Status.PodIP, Port: port, BusPort: busPort, Outdated: s.outdated(pod)}
			if nodePorts {
				// Known by its Kubernetes node's IP and its Service's node ports; reached at
				// its pod IP. Without either (not scheduled yet, no Service yet) it has no
				// address to be known at, and is not observed.
				np := s.nodePorts[pod.Name]
				m.DialIP, m.DialPort = pod.Status.PodIP, port
				m.IP, m.Port, m.BusPort = pod.Status.HostIP, int(np.Client), int(np.Bus)
				if np == (builder.NodePorts{}) || pod.Status.PodIP == "" {
					m.IP = ""
				}
			}
			members = append(members, m)
		}
	}
	add(s.leaders, clusterplan.Leader)
	add(s.followers, clusterplan.Follower)
	infos := make([]*redis.ClusterInfo, len(members))
	var wg sync.WaitGroup
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i] = r.observeMember(ctx, s, &members[i])
		}()
	}
	wg.Wait()
	s.infos = map[string]redis.ClusterInfo{}
	for i, info := range infos {
		if info != nil {
			s.infos[members[i].Pod] = *info
		}
	}
	return members
}

// clusterObserver is a cluster node asked, in one round trip, for what the planner reads of it:
// CLUSTER NODES, ROLE, CLUSTER INFO and INFO server (redis.ClusterObservation).
type clusterObserver interface {
	ObserveCluster(ctx context.Context) redis.ClusterObservation
}

// observeMember fills in the member's CLUSTER NODES and ROLE and returns its CLUSTER INFO (nil
// when it failed); when the pod does not answer CLUSTER NODES its view stays nil.
func (r *RedisClusterReconciler) observeMember(ctx context.Context, s *clusterScope, m *clusterplan.Member) *redis.ClusterInfo {
	if m.IP == "" {
		return nil // no address yet: the plan waits for this pod
	}
	var c clusterObserver
	c, err := r.redisNode(s.memberEndpoint(m))
	if err != nil {
		return nil // no view: the plan waits for this pod
	}
	readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(s.cr), m.Pod)
	defer cancel()
	seen := c.ObserveCluster(readCtx)
	m.Busy = redis.IsBusyError(seen.NodesErr)
	if seen.NodesErr != nil {
		log.FromContext(ctx).Info("CLUSTER NODES failed", "pod", m.Pod, "error", seen.NodesErr.Error())
		return nil
	}
	m.View = &seen.Nodes
	if seen.RoleErr == nil {
		m.Replication = seen.Role
	}
	if seen.ServerErr == nil {
		m.Server = seen.Server
	}
	if seen.InfoErr != nil {
		return nil
	}
	return &seen.Info
}

// runSteps runs the steps of a plan in order, except slot moves, which run side by side: each
// moves its own slots between its own source and destination, and Redis serves many slots in
// flight at once. All are waited for; the first error is returned.
func (r *RedisClusterReconciler) runSteps(ctx context.Context, s *clusterScope, steps []clusterplan.Step) error {
	var moves []clusterplan.Step
	for _, step := range steps {
		if step.Kind == clusterplan.StepMigrate {
			moves = append(moves, step)
			continue
		}
		if err := r.runStep(ctx, s, step); err != nil {
			return err
		}
	}
	errs := make([]error, len(moves))
	var wg sync.WaitGroup
	for i := range moves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.runStep(ctx, s, moves[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *RedisClusterReconciler) runStep(ctx context.Context, s *clusterScope, step clusterplan.Step) error {
	member := memberByPod(s.members, step.On)
	if member == nil {
		return fmt.Errorf("step %s names unknown pod %s", step.Kind, step.On)
	}
	c, err := r.redisNode(s.memberEndpoint(member))
	if err != nil {
		return err
	}
	slots, err := r.execStep(ctx, s, c, member, &step)
	switch {
	case errors.Is(err, errFailoverRunning):
		return nil
	case errors.Is(err, errUnknownStep):
		return err
	}
	// A pod is the event's related object (the one met, or the one acting), so that the events
	// API keeps one event per pod rather than folding them into a series under one message.
	pod := s.pod(func(p *corev1.Pod) bool { return p.Name == step.On })
	if step.Kind == clusterplan.StepMeet {
		for _, m := range s.members {
			if m.IP == step.IP && m.Port == step.Port {
				pod = s.pod(func(p *corev1.Pod) bool { return p.Name == m.Pod })
			}
		}
	}
	if err == nil && slots == 0 && (step.Kind == clusterplan.StepMigrate || step.Kind == clusterplan.StepAdoptSlots) {
		log.FromContext(ctx).Info("slot step left for the next plan", "step", step.Kind, "pod", step.On, "reason", step.Reason)
		return nil
	}
	if err != nil {
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, "Cluster"+string(step.Kind)+"Failed", string(step.Kind), "%s on %s failed: %v", step.Kind, step.On, err)
		return fmt.Errorf("%s: %w", step, err)
	}
	switch step.Kind {
	case clusterplan.StepFailover:
		failovers.With(resourceLabelValues(s.cr)).Inc()
	case clusterplan.StepMigrate:
		slotsMoved.With(resourceLabelValues(s.cr)).Add(float64(slots))
		design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr))}
		observeSlotsMoved(s.memory.counted, s.cr, clusterplan.Departing(design, member))
	}
	log.FromContext(ctx).Info("ran cluster step", "step", step.Kind, "pod", step.On, "reason", step.Reason)
	// The events API folds the events of one reason about one related pod into a series: the
	// MEETs that introduce a node (several pods may, and a plan repeats one while the
	// handshake's gossip spreads) are one entry of the timeline, told by the first; the others
	// are in the log.
	action := step.String()
	if step.Kind == clusterplan.StepMeet {
		action = fmt.Sprintf("%s -> %s", step.Kind, net.JoinHostPort(step.IP, strconv.Itoa(step.Port)))
	}
	// Slots no node claimed are a fault Redis does not mend: their adoption is told as one.
	eventType := corev1.EventTypeNormal
	if step.Kind == clusterplan.StepAdoptSlots {
		eventType = corev1.EventTypeWarning
	}
	if s.memory.told.FirstTelling(s.cr.UID, action, time.Now()) {
		r.Recorder.Eventf(s.cr, pod, eventType, "Cluster"+string(step.Kind), string(step.Kind), "%s", step.String())
	}
	return nil
}

// errUnknownStep is a step kind runStep does not know; errFailoverRunning a failover not asked
// again while the one asked recently runs.
var (
	errUnknownStep     = errors.New("unknown step")
	errFailoverRunning = errors.New("a failover asked recently is still running")
)

// The commands the steps of a plan send to the member they run on (execStep); a slot move's
// and an adoption's reach other members too (slotMove, takeSlots), a failover's goes through
// askFailover.
type (
	// clusterMeeter introduces a node: CLUSTER MEET.
	clusterMeeter interface {
		ClusterMeet(ctx context.Context, ip string, port, busPort int) error
	}
	// clusterForgetter drops a gone node from the member's table: CLUSTER FORGET.
	clusterForgetter interface {
		ClusterForget(ctx context.Context, nodeID string) error
	}
	// slotAdder claims unassigned slots: CLUSTER ADDSLOTSRANGE (Redis 7.0) or ADDSLOTS.
	slotAdder interface {
		ClusterAddSlotsRange(ctx context.Context, ranges ...redis.SlotRange) error
		ClusterAddSlots(ctx context.Context, ranges ...redis.SlotRange) error
	}
	// clusterReplicator makes the member a replica of a master: CLUSTER REPLICATE.
	clusterReplicator interface {
		ClusterReplicate(ctx context.Context, masterID string) error
	}
	// epochBumper makes the member's claims win over stale gossip: CLUSTER BUMPEPOCH.
	epochBumper interface {
		ClusterBumpEpoch(ctx context.Context) (bool, error)
	}
	// slotSetter sets a state of slots (IMPORTING, MIGRATING, NODE), one CLUSTER SETSLOT each,
	// with an error per slot.
	slotSetter interface {
		ClusterSetSlotEach(ctx context.Context, slots []int, state redis.SlotState, nodeID string) []error
	}
	// clusterStepRunner is the member a step runs on: every command above, and CONFIG SET for
	// the address it announces.
	clusterStepRunner interface {
		clusterMeeter
		clusterForgetter
		slotAdder
		clusterReplicator
		epochBumper
		slotSetter
		configEditor
	}
)

// execStep sends one step's commands to its member; it returns the slots a Migrate step moved.
func (r *RedisClusterReconciler) execStep(ctx context.Context, s *clusterScope, c clusterStepRunner, member *clusterplan.Member, step *clusterplan.Step) (slots int, err error) {
	switch step.Kind {
	case clusterplan.StepMeet:
		// A node met by a member of a cluster that serves every slot is added to it (a
		// scale-out, a pod back empty, a follower joining after the leaders formed it).
		if member.View != nil && member.View.AllSlotsCovered() {
			clusterAddNodeAttempts.With(compatLabelValues(s.cr)).Inc()
		}
		err = c.ClusterMeet(ctx, step.IP, step.Port, step.BusPort)
	case clusterplan.StepAnnounce:
		// One setting at a time: Redis 6 takes no more in one CONFIG SET. The TLS port by the
		// version the node reports, as its start script decided (builder.clusterCommand).
		settings := announceSettings(*step, builder.ClusterAnnouncesTLSPort(s.cr, member.Server))
		for i := 0; i+1 < len(settings) && err == nil; i += 2 {
			err = c.ConfigSet(ctx, settings[i], settings[i+1])
		}
	case clusterplan.StepForget:
		err = c.ClusterForget(ctx, step.NodeID)
		if err != nil && redis.IsServerError(err) && strings.Contains(err.Error(), "Unknown node") {
			err = nil // gossip removed it meanwhile
		}
	case clusterplan.StepAddSlots:
		if !s.newCluster() {
			// A cluster that served has keys: unserved slots go where their keys are, as
			// orphans do (a Redis 7.2 or later unmaps a slot whose owner stopped claiming it).
			slots, err = r.adoptOrphanSlots(ctx, s, step)
			break
		}
		// By the version the node reports, whatever clusterVersion says: ADDSLOTSRANGE is one
		// short command but Redis 7.0's; ADDSLOTS, slot by slot, is every version's.
		if member.Server.Has(7, 0) {
			err = c.ClusterAddSlotsRange(ctx, step.Slots...)
		} else {
			err = c.ClusterAddSlots(ctx, step.Slots...)
		}
	case clusterplan.StepReplicate:
		err = c.ClusterReplicate(ctx, step.NodeID)
	case clusterplan.StepFailover:
		var wait string
		if wait, err = r.askFailover(ctx, s, s.members, member, redis.FailoverDefault); wait != "" {
			log.FromContext(ctx).V(1).Info("a failover asked recently is still running", "pod", step.On, "wait", wait)
			return 0, errFailoverRunning
		}
	case clusterplan.StepMigrate:
		var keys int
		slots, keys, err = r.migrateSlots(ctx, s, member, *step, time.Now().Add(migrationSlice))
		if all := redis.CountSlots(step.Slots); slots < all && err == nil {
			step.Reason += fmt.Sprintf(" (%d of the slots so far, %d keys)", slots, keys)
		} else {
			step.Reason += fmt.Sprintf(" (%d keys)", keys)
		}
		keysMoved.With(resourceLabelValues(s.cr)).Add(float64(keys))
	case clusterplan.StepBumpEpoch:
		_, err = c.ClusterBumpEpoch(ctx)
	case clusterplan.StepAdoptSlots:
		slots, err = r.adoptOrphanSlots(ctx, s, step)
	case clusterplan.StepSetSlotNode:
		err = errors.Join(c.ClusterSetSlotEach(ctx, slotsOf(step.Slots), redis.SlotNode, step.NodeID)...)
	default:
		return 0, fmt.Errorf("%w %s", errUnknownStep, step.Kind)
	}
	return slots, err
}

// announceSettings are the settings, name then value, that make a node announce the step's
// address; with tlsPort the port clients use is the TLS one (the plain one is announced as
// well, as the pods' own files do). The ports come first, the IP last: the other nodes
// update their view of the node on its IP.
func announceSettings(step clusterplan.Step, tlsPort bool) []string {
	port := strconv.Itoa(step.Port)
	out := []string{"cluster-announce-port", port, "cluster-announce-bus-port", strconv.Itoa(step.BusPort)}
	if tlsPort {
		out = append(out, "cluster-announce-tls-port", port)
	}
	return append(out, "cluster-announce-ip", step.IP)
}

// pod returns the first pod that matches, or nil.
func (s *clusterScope) pod(match func(*corev1.Pod) bool) runtime.Object {
	for _, pods := range [][]corev1.Pod{s.leaders, s.followers} {
		for i := range pods {
			if match(&pods[i]) {
				return &pods[i]
			}
		}
	}
	return nil
}

// labelPodRoles keeps the redis-role label of every pod on what Redis says it is, for the
// -master Service and for users' selectors. It also gives pods made from an older template
// the cluster label the -master Service selects on, so that it keeps its endpoints while
// those pods wait for the rolling update that brings the label in their template.
func (r *RedisClusterReconciler) labelPodRoles(ctx context.Context, s *clusterScope) (bool, error) {
	pods := append(append([]corev1.Pod{}, s.leaders...), s.followers...)
	for i := range pods {
		pod := &pods[i]
		member := memberByPod(s.members, pod.Name)
		if member == nil || member.View == nil {
			continue
		}
		me, ok := member.View.Myself()
		if !ok {
			continue
		}
		want := builder.RedisRoleMaster
		if me.IsReplica() {
			want = builder.RedisRoleSlave
		}
		if err := setPodLabels(ctx, r.Client, pod, map[string]string{builder.LabelRedisRole: want, builder.LabelCluster: s.cr.Name}); err != nil {
			return false, err
		}
	}
	return false, nil
}

// setPodRoleLabel sets the pod's redis-role label, writing only when it differs.
func setPodRoleLabel(ctx context.Context, c client.Client, pod *corev1.Pod, want string) error {
	return setPodLabels(ctx, c, pod, map[string]string{builder.LabelRedisRole: want})
}

// setPodLabels sets the pod's labels to the values given, in one patch, writing only when one
// differs.
func setPodLabels(ctx context.Context, c client.Client, pod *corev1.Pod, want map[string]string) error {
	differs := false
	for k, v := range want {
		if value, ok := pod.Labels[k]; !ok || value != v {
			differs = true
		}
	}
	if !differs {
		return nil
	}
	original := pod.DeepCopy()
	labels := maps.Clone(pod.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want)
	pod.Labels = labels
	if err := c.Patch(ctx, pod, client.MergeFrom(original)); err != nil {
		return fmt.Errorf("label pod %s %v: %w", pod.Name, want, err)
	}
	return nil
}

// applyDynamicConfig sets redisConfig.dynamicConfig on every pod with CONFIG SET when CONFIG
// GET shows another value, so a change needs no restart and a steady state writes nothing.
func (r *RedisClusterReconciler) applyDynamicConfig(ctx context.Context, s *clusterScope) (bool, error) {
	for _, m := range s.members {
		lines := s.cr.Spec.RedisLeader.RedisConfig
		if m.Role == clusterplan.Follower {
			lines = s.cr.Spec.RedisFollower.RedisConfig
		}
		var dynamic []string
		switch {
		case lines != nil && lines.DynamicConfig != nil:
			dynamic = lines.DynamicConfig
		case s.cr.Spec.RedisConfig != nil:
			dynamic = s.cr.Spec.RedisConfig.DynamicConfig
		}
		if len(dynamic) == 0 {
			continue
		}
		c, err := r.redisNode(s.memberEndpoint(&m))
		if err != nil {
			return false, err
		}
		changed, err := setDynamicConfig(ctx, c, dynamic)
		if err != nil {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, "DynamicConfigFailed", "ConfigSet", "pod %s: %v", m.Pod, err)
			return false, fmt.Errorf("pod %s: %w", m.Pod, err)
		}
		if len(changed) > 0 {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "DynamicConfig", "ConfigSet", "pod %s: set %s", m.Pod, strings.Join(changed, ", "))
		}
	}
	return false, nil
}

// checkHealth reports Ready only when every pod says cluster_state:ok with all slots served;
// the plan has already checked that every pod sees every other, linked, in its current role.
func (r *RedisClusterReconciler) checkHealth(ctx context.Context, s *clusterScope) (bool, error) {
	if len(s.outages) > 0 {
		r.outage(s, clusterplan.OutageSummary(s.outages))
		s.Requeue(ctx, whileBroken, "an outage may clear once pods answer again")
		return true, nil
	}
	for _, m := range s.members {
		info, err := r.clusterInfo(ctx, s, m)
		if err != nil {
			s.progressUnlessOutage(r, status.ReasonRedisUnreachable, fmt.Sprintf("pod %s: %v", m.Pod, err))
			s.Requeue(ctx, whileConverging, "CLUSTER INFO failed")
			return true, nil
		}
		if info.State != "ok" || info.SlotsOK != redis.SlotCount {
			wait := fmt.Sprintf("pod %s reports cluster_state:%s with %d of %d slots ok", m.Pod, info.State, info.SlotsOK, redis.SlotCount)
			s.Conditions.Progressing(status.ReasonConverging, wait)
			s.Requeue(ctx, whileConverging, wait)
			return true, nil
		}
	}
	leaders, followers := builder.LeaderReplicas(s.cr), builder.FollowerReplicas(s.cr)
	if !s.podsReady {
		// Redis is fine; the status waits for the kubelet to agree (pod events bring us back).
		s.Conditions.Progressing(status.ReasonPodsNotReady, fmt.Sprintf("cluster_state:ok; waiting for pods to pass their readiness probe (%d/%d leaders, %d/%d followers ready)",
			s.cr.Status.ReadyLeaderReplicas, leaders, s.cr.Status.ReadyFollowerReplicas, followers))
		return true, nil
	}
	if s.cr.Status.State != status.ClusterStateReady && s.Conditions.FirstReady() {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "ClusterReady", "Observe", "%d masters serve all %d slots with %d replicas", leaders, redis.SlotCount, followers)
	}
	message := fmt.Sprintf("cluster_state:ok, %d masters serve all %d slots, %d replicas, every link up", leaders, redis.SlotCount, followers)
	if len(s.handMade) > 0 {
		s.Conditions.ReadyAs(ReasonHandMadeFailoverKept, message+"; "+handMadeSummary(s.handMade))
	} else {
		s.Conditions.Ready(message)
	}
	s.memory.waits.Stopped(s.cr.UID, replacementKey) // a replaced pod's replica is back
	s.Requeue(ctx, healthCheckInterval, "periodic health check: Redis failures need not change any pod")
	return false, nil
}

// progressUnlessOutage reports the work under way as progress, or, when the cluster does not
// serve everything it served (s.outages), as the outage it is.
func (s *clusterScope) progressUnlessOutage(r *RedisClusterReconciler, reason, message string) {
	if len(s.outages) > 0 {
		r.outage(s, clusterplan.OutageSummary(s.outages))
		return
	}
	s.Conditions.Progressing(reason, message)
}

// clusterInfo is the pod's CLUSTER INFO as observed earlier in this reconcile, or asked now.
func (r *RedisClusterReconciler) clusterInfo(ctx context.Context, s *clusterScope, m clusterplan.Member) (redis.ClusterInfo, error) {
	if info, ok := s.infos[m.Pod]; ok {
		return info, nil
	}
	var c clusterInfoReader
	c, err := r.redisNode(s.memberEndpoint(&m))
	if err != nil {
		return redis.ClusterInfo{}, err
	}
	return c.ClusterInfo(ctx)
}

func degradedWith(s *clusterScope, message string) bool {
	for _, c := range s.cr.Status.Conditions {
		if c.Type == "Degraded" && c.Status == "True" && c.Message == message {
			return true
		}
	}
	return false
}

func memberByPod(members []clusterplan.Member, pod string) *clusterplan.Member {
	for i := range members {
		if members[i].Pod == pod {
			return &members[i]
		}
	}
	return nil
}

func podOrdinal(name string) int {
	i := strings.LastIndex(name, "-")
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

func summarizeSteps(steps []clusterplan.Step) string {
	counts := map[clusterplan.StepKind]int{}
	var order []clusterplan.StepKind
	for _, s := range steps {
		if counts[s.Kind] == 0 {
			order = append(order, s.Kind)
		}
		counts[s.Kind]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[k], k))
	}
	return "running " + strings.Join(parts, ", ") + ": " + steps[0].Reason
}
