package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonScalingIn: a scale-in keeps pods until their slots have moved to the others.
// ReasonScalingOut: new pods of a scale-out start; they join once they run.
const (
	ReasonScalingIn  = "ScalingIn"
	ReasonScalingOut = "ScalingOut"
)

// holdScaleIn decides how many pods the StatefulSets keep. A scale-in that shrank them at once
// would delete masters with their slots; instead the pods beyond the spec stay until they
// serve nothing (the topology phase moves their slots away), and go in the reconcile after.
func (r *RedisClusterReconciler) holdScaleIn(ctx context.Context, s *clusterScope) (bool, error) {
	want := builder.ClusterPods{Leaders: builder.LeaderReplicas(s.cr), Followers: builder.FollowerReplicas(s.cr)}
	s.pods = want
	have := builder.ClusterPods{}
	var err error
	if have.Leaders, err = r.statefulSetReplicas(ctx, s, builder.RoleLeader); err != nil {
		return false, err
	}
	if have.Followers, err = r.statefulSetReplicas(ctx, s, builder.RoleFollower); err != nil {
		return false, err
	}
	if have.Leaders <= want.Leaders && have.Followers <= want.Followers {
		s.memory.counted.forget(s.cr.Namespace, s.cr.Name, onceFollowerRemove) // the pods let go are gone
		return false, r.holdScaleOut(ctx, s, have)
	}
	if err := r.listPods(ctx, s); err != nil {
		return false, err
	}
	// A departing ordinal without a pod (being recreated) may still hold slots on its volume.
	for _, set := range []struct {
		pods       []corev1.Pod
		want, have int32
		keep       *int32
	}{{s.leaders, want.Leaders, have.Leaders, &s.pods.Leaders}, {s.followers, want.Followers, have.Followers, &s.pods.Followers}} {
		for ordinal := set.want; ordinal < set.have; ordinal++ {
			if !hasOrdinal(set.pods, int(ordinal)) {
				*set.keep = set.have
				s.clusterStage = status.ClusterReasonInitializingLeaders
				s.Conditions.Progressing(ReasonScalingIn, fmt.Sprintf("scale-in waits for pod ordinal %d to run again: what it holds is unknown", ordinal))
				return false, nil
			}
		}
	}
	// Decided on a read of every pod made here, after the last slot move (moves run in the
	// topology phase, after the StatefulSets are written): a departing node goes only once
	// every view, not only its own, says it serves nothing.
	design := clusterplan.Design{Leaders: int(want.Leaders), Followers: int(want.Followers)}
	members := r.observeMembers(ctx, s)
	scaleIn := clusterplan.PlanScaleIn(design, members)
	leaders, followers, reason := scaleIn.Leaders, scaleIn.Followers, scaleIn.Reason
	s.pods = builder.ClusterPods{Leaders: keptReplicas(leaders, have.Leaders), Followers: keptReplicas(followers, have.Followers)}
	observeFollowersRemoved(s.memory.counted, s.cr, s.pods.Followers, have.Followers)
	if len(scaleIn.Steps) > 0 {
		// A view that still maps slots to a departing node is told their owner; the pods stay
		// until the next reconcile reads every view again.
		s.members = members
		for _, step := range scaleIn.Steps {
			if err := r.runStep(ctx, s, step); err != nil {
				return false, err
			}
		}
		s.Requeue(ctx, afterRedisCommands, "waiting for every view to agree a departing node serves nothing")
	}
	// The reference shows a scale-in as initializing leaders, then followers, until the
	// departing pods are gone.
	switch {
	case s.pods.Leaders > want.Leaders:
		s.clusterStage = status.ClusterReasonInitializingLeaders
	case s.pods.Followers > want.Followers:
		s.clusterStage = status.ClusterReasonInitializingFollowers
	}
	if reason != "" {
		log.FromContext(ctx).Info("scale-in holds pods", "leaders", s.pods.Leaders, "followers", s.pods.Followers, "reason", reason)
	}
	return false, nil
}

// holdScaleOut keeps each StatefulSet from growing past an ordinal whose claims are left from
// an earlier scale-in (see condemnedClaim): the StatefulSet controller would not create that
// pod while such a claim is being deleted, retrying ever more slowly (minutes), or would give
// the new pod a claim that the garbage collector then deletes. Once the claims are gone it
// grows, and the pods start on new claims.
func (r *RedisClusterReconciler) holdScaleOut(ctx context.Context, s *clusterScope, have builder.ClusterPods) error {
	for _, set := range []struct {
		role  string
		have  int32
		keep  *int32
		stage string
	}{{builder.RoleLeader, have.Leaders, &s.pods.Leaders, status.ClusterReasonInitializingLeaders},
		{builder.RoleFollower, have.Followers, &s.pods.Followers, status.ClusterReasonInitializingFollowers}} {
		stsName := builder.ClusterStatefulSetName(s.cr.Name, set.role)
		for ordinal := set.have; ordinal < *set.keep; ordinal++ {
			claim, err := condemnedClaim(ctx, r.Client, s.cr.Namespace, stsName, ordinal)
			if err != nil {
				return err
			}
			if claim == "" {
				continue
			}
			*set.keep = ordinal
			s.clusterStage = set.stage
			why := fmt.Sprintf("scale-out waits for claim %s, left by an earlier scale-in, to be deleted before pod %s-%d starts", claim, stsName, ordinal)
			s.Conditions.Progressing(ReasonScalingOut, why)
			s.Requeue(ctx, whileConverging, why)
			break
		}
	}
	return nil
}

// condemnedClaim names a claim of the StatefulSet's pod ordinal that is on its way out: being
// deleted, or owned by a pod (the StatefulSet controller makes a scaled-in pod the owner of
// its claims when they are not to be kept, and the garbage collector deletes them once that
// pod is gone). "" when there is none: no claim, or one kept to be used again.
func condemnedClaim(ctx context.Context, c client.Client, namespace, stsName string, ordinal int32) (string, error) {
	for _, template := range builder.ClaimTemplateNamesOf(stsName) {
		name := fmt.Sprintf("%s-%s-%d", template, stsName, ordinal)
		var claim corev1.PersistentVolumeClaim
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &claim)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", fmt.Errorf("get PVC %s: %w", name, err)
		case claim.DeletionTimestamp != nil:
			return name, nil
		}
		for _, owner := range claim.OwnerReferences {
			if owner.Kind == "Pod" {
				return name, nil
			}
		}
	}
	return "", nil
}

// keptReplicas is the count the plan keeps, capped at the StatefulSet's current one: holding a
// scale-in never grows a StatefulSet. A count int32 cannot hold (a negative one would be a
// bug) keeps every pod, the safe side.
// meetEarly introduces the new pods of an established cluster as each starts to run, while
// others are still to come (see clusterplan.EarlyMeets for why it saves seconds).
func (r *RedisClusterReconciler) meetEarly(ctx context.Context, s *clusterScope) error {
	running := func(pods []corev1.Pod) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range pods {
			if p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out
	}
	members := r.observeMembers(ctx, s.withPods(running(s.leaders), running(s.followers)))
	steps := clusterplan.EarlyMeets(members)
	if len(steps) == 0 {
		return nil
	}
	s.members = members
	for _, step := range steps {
		if err := r.runStep(ctx, s, step); err != nil {
			return err
		}
	}
	return nil
}

func keptReplicas(keep int, have int32) int32 {
	if keep < 0 || keep > math.MaxInt32 {
		return have
	}
	return min(int32(keep), have)
}

func (r *RedisClusterReconciler) statefulSetReplicas(ctx context.Context, s *clusterScope, role string) (int32, error) {
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: builder.ClusterStatefulSetName(s.cr.Name, role)}, &sts)
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("get StatefulSet: %w", err)
	case sts.Spec.Replicas == nil:
		return 1, nil
	}
	return *sts.Spec.Replicas, nil
}

func hasOrdinal(pods []corev1.Pod, ordinal int) bool {
	for i := range pods {
		if podOrdinal(pods[i].Name) == ordinal {
			return true
		}
	}
	return false
}

// Slot moves are pipelined: slotsPerBatch slots go through each command together, and one
// reconcile spends at most migrationSlice on moves before it looks at the cluster again (pod
// events and progress are seen between slices; every command may be repeated, so whatever a
// slice leaves is finished by the next plan).
const (
	slotsPerBatch  = 128
	keysPerMigrate = 1000
	migrationSlice = 15 * time.Second
	clusterOKPoll  = 100 * time.Millisecond
)

// migrateSlots moves the slots of the step, with their keys, from the pod step.On to step.To,
// slotsPerBatch at a time: the destination imports them, the source migrates them, the keys go
// over (clients are redirected with ASK meanwhile, so no write is refused or lost), and the
// slots are given to the destination, on it first, then on the source, then on every other
// master so that their MOVED answers agree at once. Each command may be repeated, so the next
// plan finishes a move interrupted anywhere. It stops between batches once the deadline has
// passed, and returns the number of slots and keys moved.
func (r *RedisClusterReconciler) migrateSlots(ctx context.Context, s *clusterScope, from *clusterplan.Member, step clusterplan.Step, deadline time.Time) (slots, keys int, err error) {
	// A move whose ends are not in cluster_state:ok yet (a new master within Redis's rejoin
	// delay) waits for them here while the other moves of the plan run.
	for r.notClusterOK(ctx, s, step.On, step.To) != "" {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, 0, nil
		}
		time.Sleep(clusterOKPoll)
	}
	move, err := r.newSlotMove(s, from, step)
	if err != nil {
		return 0, 0, err
	}
	if err := r.keepDepartingMasterAlone(ctx, s, from); err != nil {
		return 0, 0, err
	}
	all := slotsOf(step.Slots)
	for len(all) > 0 && time.Now().Before(deadline) {
		batch := all[:min(slotsPerBatch, len(all))]
		all = all[len(batch):]
		n, err := move.moveSlots(ctx, batch)
		keys += n
		if err != nil {
			return slots, keys, err
		}
		slots += len(batch)
	}
	return slots, keys, nil
}

func slotsOf(ranges []redis.SlotRange) []int {
	var out []int
	for _, r := range ranges {
		for slot := r.Start; slot <= r.End; slot++ {
			out = append(out, slot)
		}
	}
	return out
}

// keepDepartingMasterAlone turns replica migration off on a departing master and on its
// replicas before its slots leave. With it on, Redis makes a master that gave its last slot
// away a replica of the receiver, and its replicas follow: each would then copy the receiver's
// whole data set (a full sync) just before its pod is deleted, and the operator's last SETSLOT
// on it would be refused. The setting is not written to the config file: a pod that stays
// (a scale-in undone) gets Redis's default back when it restarts.
func (r *RedisClusterReconciler) keepDepartingMasterAlone(ctx context.Context, s *clusterScope, from *clusterplan.Member) error {
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr))}
	if !clusterplan.Departing(design, from) {
		return nil
	}
	me, ok := myselfOf(from)
	if !ok {
		return fmt.Errorf("pod %s reported no node ID", from.Pod)
	}
	for i := range s.members {
		m := &s.members[i]
		node, ok := myselfOf(m)
		if !ok || (m.Pod != from.Pod && (!node.IsReplica() || node.MasterID != me.ID)) {
			continue
		}
		var c configEditor
		c, err := r.redisNode(s.memberEndpoint(m))
		if err != nil {
			return err
		}
		if err := c.ConfigSet(ctx, "cluster-allow-replica-migration", "no"); err != nil {
			if redis.IsServerError(err) {
				// A Redis before 6.2 has no such setting; the SETSLOT refusals it causes are
				// expected (see giveSlots).
				log.FromContext(ctx).V(1).Info("cannot turn replica migration off", "pod", m.Pod, "error", err.Error())
				continue
			}
			return fmt.Errorf("pod %s: %w", m.Pod, err)
		}
	}
	return nil
}

// clusterNodesReader is a node asked its view alone: CLUSTER NODES.
type clusterNodesReader interface {
	ClusterNodes(ctx context.Context) (redis.Topology, error)
}

// slotMigrator is the source of a slot move: it sets its slots MIGRATING and sends their keys
// with MIGRATE (after CLUSTER GETKEYSINSLOT), then gives the slots away; its view names the
// owner of a slot it no longer has.
type slotMigrator interface {
	slotSetter
	clusterNodesReader
	MigrateSlots(ctx context.Context, slots []int, host string, port int, opts redis.MigrateOptions) (int, error)
}

// slotImporter is the destination of a slot move: it imports the slots, takes them, and its
// view confirms it kept them.
type slotImporter interface {
	slotSetter
	clusterNodesReader
}

// slotMove holds what moving the slots of one Migrate step needs: nodes for its source, its
// destination and the other masters, which are told the new owner too.
type slotMove struct {
	source slotMigrator
	// sourceAddr is the source's address, for the log.
	sourceAddr string
	target     slotImporter
	// targetIP and targetPort are where the source sends the keys.
	targetIP   string
	targetPort int
	others     []otherMaster
	sourceID   string
	// departing: the source leaves the cluster once it serves nothing, which every master
	// must agree on before its pod goes.
	departing bool
	step      clusterplan.Step
	auth      redis.Auth
}

// otherMaster is a master told a moved slot's new owner, and its address for the error that
// says it was not told.
type otherMaster struct {
	node slotSetter
	addr string
}

func (r *RedisClusterReconciler) newSlotMove(s *clusterScope, from *clusterplan.Member, step clusterplan.Step) (*slotMove, error) {
	move := &slotMove{step: step, auth: s.acl.auth(s.password)}
	me, ok := myselfOf(from)
	if !ok {
		return nil, fmt.Errorf("pod %s reported no node ID", from.Pod)
	}
	move.sourceID = me.ID
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr))}
	move.departing = clusterplan.Departing(design, from)
	var err error
	to := memberByPod(s.members, step.To)
	if to == nil {
		return nil, fmt.Errorf("slot move names unknown pod %s", step.To)
	}
	sourceEndpoint := s.memberEndpoint(from)
	if move.source, err = r.redisNode(sourceEndpoint); err != nil {
		return nil, err
	}
	move.sourceAddr = sourceEndpoint.Address()
	// The keys go to the destination's pod address, which behind NodePorts is not the one it
	// announces: MIGRATE needs no detour through a node port.
	move.targetIP, move.targetPort = to.Dial()
	if move.target, err = r.redisNode(s.memberEndpoint(to)); err != nil {
		return nil, err
	}
	for i := range s.members {
		m := &s.members[i]
		if node, ok := myselfOf(m); !ok || !node.IsMaster() || m.Pod == from.Pod || m.Pod == step.To {
			continue
		}
		ep := s.memberEndpoint(m)
		c, err := r.redisNode(ep)
		if err != nil {
			return nil, err
		}
		move.others = append(move.others, otherMaster{node: c, addr: ep.Address()})
	}
	return move, nil
}

// moveSlots moves a batch of slots with their keys and returns the number of keys moved. Each
// command may be repeated, so it also finishes moves of these slots that were interrupted.
// The destination imports every slot before the source migrates any: a slot is never
// MIGRATING towards a node that would refuse its keys.
func (mv *slotMove) moveSlots(ctx context.Context, slots []int) (int, error) {
	for _, err := range mv.target.ClusterSetSlotEach(ctx, slots, redis.SlotImporting, mv.sourceID) {
		if err != nil && !serverSays(err, "already the owner") {
			return 0, err
		}
	}
	var withKeys []int
	for i, err := range mv.source.ClusterSetSlotEach(ctx, slots, redis.SlotMigrating, mv.step.NodeID) {
		switch {
		case err == nil:
			withKeys = append(withKeys, slots[i])
		case serverSays(err, "not the owner"):
			// the source gave it up already: its keys have moved
		default:
			return 0, err
		}
	}
	if len(withKeys) < len(slots) {
		mv.logGivenUp(ctx, slots, withKeys)
	}
	moved, err := mv.source.MigrateSlots(ctx, withKeys, mv.targetIP, mv.targetPort,
		redis.MigrateOptions{BatchSize: keysPerMigrate, Replace: true, Auth: mv.auth})
	if err != nil {
		return moved, err
	}
	if err := mv.giveSlots(ctx, slots); err != nil {
		return moved, err
	}
	return moved, mv.confirmTaken(ctx, slots)
}

// logGivenUp logs the slots of a batch the source no longer owned when it was to migrate them,
// with whom its view gives them to: most often a move interrupted after its SETSLOT NODE and
// repeated, but also what an UPDATE from a stale view leaves (the source then deleted the
// slots' keys, in Redis before 7.2), which this tells apart afterwards.
func (mv *slotMove) logGivenUp(ctx context.Context, slots, withKeys []int) {
	topo, err := mv.source.ClusterNodes(ctx)
	if err != nil {
		return
	}
	for _, slot := range slots {
		if slices.Contains(withKeys, slot) {
			continue
		}
		owner, _ := topo.SlotOwner(slot)
		log.FromContext(ctx).Info("the source of a slot move no longer owns a slot of the batch",
			"source", mv.sourceAddr, "slot", slot, "ownerInItsView", owner.ID, "ownerEpochInItsView", owner.ConfigEpoch,
			"destination", mv.step.To, "destinationID", mv.step.NodeID)
		return // the first names the batch
	}
}

// confirmTaken reads the destination's own line once the batch is given: a slot it does not
// claim any more was taken from it by gossip at once, an UPDATE built from a stale view (Redis
// before 7.2 then deletes the slot's keys there). The move stops with an error that names the
// slots and the config epochs that decided it, so that the event says what happened.
func (mv *slotMove) confirmTaken(ctx context.Context, slots []int) error {
	topo, err := mv.target.ClusterNodes(ctx)
	if err != nil {
		return fmt.Errorf("read the destination's view after the move: %w", err)
	}
	me, ok := topo.Myself()
	if !ok {
		return nil
	}
	var lost []int
	for _, slot := range slots {
		if !me.OwnsSlot(slot) {
			lost = append(lost, slot)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	mapped := "no node"
	if owner, ok := topo.SlotOwner(lost[0]); ok {
		mapped = fmt.Sprintf("node %s at config epoch %d", owner.ID, owner.ConfigEpoch)
	}
	return fmt.Errorf("%s no longer claims %d of the slots it just took (slot %d first; its config epoch %d, its view maps the slot to %s): gossip took them, and their keys with them",
		mv.step.To, len(lost), lost[0], me.ConfigEpoch, mapped)
}

// giveSlots makes the destination the slots' owner: on the destination first, then on the
// source, then on every other master so that their MOVED answers agree at once.
func (mv *slotMove) giveSlots(ctx context.Context, slots []int) error {
	for _, err := range mv.target.ClusterSetSlotEach(ctx, slots, redis.SlotNode, mv.step.NodeID) {
		if err != nil {
			return err
		}
	}
	// A source that gave its last slot away may have turned into a replica of the destination
	// by itself (a Redis without cluster-allow-replica-migration): it knows the new owner.
	for _, err := range mv.source.ClusterSetSlotEach(ctx, slots, redis.SlotNode, mv.step.NodeID) {
		if err != nil && !serverSays(err, "only with masters") {
			return err
		}
	}
	// The other masters are told side by side. Gossip carries the new owner to a master that
	// missed this only when the destination's config epoch beats the source's: a master left
	// mapping a departing source's slot to it would see that slot served by a gone node once
	// the pod goes. The scale-in re-reads every view before it lets the pod go and tells such
	// a master again (clusterplan.PlanScaleIn); the failure is returned so that the move is
	// seen to be unfinished. For a source that stays, it only delays MOVED answers.
	errs := make([]error, len(mv.others))
	var wg sync.WaitGroup
	for i, other := range mv.others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, err := range other.node.ClusterSetSlotEach(ctx, slots, redis.SlotNode, mv.step.NodeID) {
				if err != nil && !serverSays(err, "only with masters") { // a master that became a replica follows its own
					errs[i] = fmt.Errorf("tell %s the new owner: %w", other.addr, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err != nil && !mv.departing {
		log.FromContext(ctx).Info("SETSLOT NODE on another master failed; gossip carries the new owner", "error", err.Error())
		return nil
	}
	return err
}

func myselfOf(m *clusterplan.Member) (redis.Node, bool) {
	if m.View == nil {
		return redis.Node{}, false
	}
	return m.View.Myself()
}

// serverSays reports whether err is a Redis error reply containing text.
func serverSays(err error, text string) bool {
	var redisErr *redis.Error
	return errors.As(err, &redisErr) && redis.IsServerError(err) && strings.Contains(err.Error(), text)
}
