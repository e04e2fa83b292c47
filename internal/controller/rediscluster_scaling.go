package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// ReasonScalingIn: a scale-in keeps pods until their slots have moved to the others.
const ReasonScalingIn = "ScalingIn"

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
		return false, nil
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
				s.conditions.progressing(ReasonScalingIn, fmt.Sprintf("scale-in waits for pod ordinal %d to run again: what it holds is unknown", ordinal))
				return false, nil
			}
		}
	}
	design := clusterplan.Design{Leaders: int(want.Leaders), Followers: int(want.Followers)}
	leaders, followers, reason := clusterplan.Keep(design, r.observeMembers(ctx, s))
	s.pods = builder.ClusterPods{Leaders: keptReplicas(leaders, have.Leaders), Followers: keptReplicas(followers, have.Followers)}
	if reason != "" {
		log.FromContext(ctx).Info("scale-in holds pods", "leaders", s.pods.Leaders, "followers", s.pods.Followers, "reason", reason)
	}
	return false, nil
}

// keptReplicas is the count the plan keeps, capped at the StatefulSet's current one: holding a
// scale-in never grows a StatefulSet. A count int32 cannot hold (a negative one would be a
// bug) keeps every pod, the safe side.
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

// migrateSlots moves each slot of the step, with its keys, from the pod step.On to step.To:
// the destination imports it, the source migrates it, the keys go over in batches (clients
// are redirected with ASK meanwhile, so no write is refused or lost), and the slot is given to
// the destination, on it first, then on the source, then on every other master so that their
// MOVED answers agree at once. Each command may be repeated, so the next plan finishes a move
// interrupted anywhere. It returns the number of keys moved.
func (r *RedisClusterReconciler) migrateSlots(ctx context.Context, s *clusterScope, from *clusterplan.Member, step clusterplan.Step) (int, error) {
	move, err := r.newSlotMove(s, from, step)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, slots := range step.Slots {
		for slot := slots.Start; slot <= slots.End; slot++ {
			n, err := move.moveSlot(ctx, slot)
			moved += n
			if err != nil {
				return moved, err
			}
		}
	}
	return moved, nil
}

// slotMove holds what moving the slots of one Migrate step needs: clients for its source, its
// destination and the other masters, which are told the new owner too.
type slotMove struct {
	source, target *redis.Client
	others         []*redis.Client
	sourceID       string
	step           clusterplan.Step
	auth           redis.Auth
}

func (r *RedisClusterReconciler) newSlotMove(s *clusterScope, from *clusterplan.Member, step clusterplan.Step) (*slotMove, error) {
	move := &slotMove{step: step, auth: redis.Auth{Password: s.password}}
	me, ok := myselfOf(from)
	if !ok {
		return nil, fmt.Errorf("pod %s reported no node ID", from.Pod)
	}
	move.sourceID = me.ID
	var err error
	if move.source, err = r.Redis.Client(redis.NewEndpoint(from.IP, from.Port, move.auth)); err != nil {
		return nil, err
	}
	if move.target, err = r.Redis.Client(redis.NewEndpoint(step.IP, step.Port, move.auth)); err != nil {
		return nil, err
	}
	for i := range s.members {
		m := &s.members[i]
		if node, ok := myselfOf(m); !ok || !node.IsMaster() || m.Pod == from.Pod || m.Pod == step.To {
			continue
		}
		c, err := r.Redis.Client(redis.NewEndpoint(m.IP, m.Port, move.auth))
		if err != nil {
			return nil, err
		}
		move.others = append(move.others, c)
	}
	return move, nil
}

// moveSlot moves one slot with its keys and returns the number of keys moved. Each command
// may be repeated, so it also finishes a move of the slot that was interrupted.
func (mv *slotMove) moveSlot(ctx context.Context, slot int) (int, error) {
	if err := mv.target.ClusterSetSlot(ctx, slot, redis.SlotImporting, mv.sourceID); err != nil && !serverSays(err, "already the owner") {
		return 0, err
	}
	moved, err := mv.migrateKeys(ctx, slot)
	if err != nil {
		return moved, err
	}
	return moved, mv.giveSlot(ctx, slot)
}

// migrateKeys marks the slot migrating on the source and sends its keys to the destination.
func (mv *slotMove) migrateKeys(ctx context.Context, slot int) (int, error) {
	if err := mv.source.ClusterSetSlot(ctx, slot, redis.SlotMigrating, mv.step.NodeID); err != nil {
		if serverSays(err, "not the owner") {
			return 0, nil // the source gave it up already: its keys have moved
		}
		return 0, err
	}
	return mv.source.MigrateKeys(ctx, slot, mv.step.IP, mv.step.Port, redis.MigrateOptions{Replace: true, Auth: mv.auth})
}

// giveSlot makes the destination the slot's owner: on the destination first, then on the
// source, then on every other master so that their MOVED answers agree at once.
func (mv *slotMove) giveSlot(ctx context.Context, slot int) error {
	if err := mv.target.ClusterSetSlot(ctx, slot, redis.SlotNode, mv.step.NodeID); err != nil {
		return err
	}
	if err := mv.source.ClusterSetSlot(ctx, slot, redis.SlotNode, mv.step.NodeID); err != nil {
		return err
	}
	for _, c := range mv.others {
		// Gossip carries the new owner to a master that missed this; a failure here
		// only delays its MOVED answers.
		if err := c.ClusterSetSlot(ctx, slot, redis.SlotNode, mv.step.NodeID); err != nil {
			log.FromContext(ctx).V(1).Info("SETSLOT NODE on another master failed", "addr", c.Addr(), "slot", slot, "error", err.Error())
		}
	}
	return nil
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
