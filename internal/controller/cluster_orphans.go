package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// adoptOrphanSlots runs an AdoptSlots step (see clusterplan/stage_slots_orphans.go): it reads every pod's
// view again, keeps the slots that are still claimed by no master and moved by none, counts
// each master's keys in them, and has the master holding a slot's keys (else the step's pod)
// take it with CLUSTER SETSLOT NODE and win it with CLUSTER BUMPEPOCH; the other masters are
// then told the owner, so that none keeps mapping the slot elsewhere. It returns the number of
// slots adopted and adds who took them to the step's reason.
func (r *RedisClusterReconciler) adoptOrphanSlots(ctx context.Context, s *clusterScope, step *clusterplan.Step) (int, error) {
	fresh := r.observeMembers(ctx, s)
	orphans, silent := clusterplan.Orphans(fresh, slotsOf(step.Slots))
	if silent != "" {
		return 0, fmt.Errorf("pod %s does not answer: who holds the orphaned slots' keys is unknown", silent)
	}
	if len(orphans) == 0 {
		log.FromContext(ctx).Info("the slots have an owner again", "slots", step.Slots)
		return 0, nil
	}
	masters := map[string]*clusterplan.Member{}
	for i := range fresh {
		if me, ok := myselfOf(&fresh[i]); ok && me.IsMaster() {
			masters[fresh[i].Pod] = &fresh[i]
		}
	}
	if masters[step.On] == nil {
		return 0, fmt.Errorf("pod %s is no master any more", step.On)
	}
	keys, err := r.countKeysInSlots(ctx, s, masters, orphans)
	if err != nil {
		return 0, err
	}
	adoption := clusterplan.Adopt(orphans, keys, step.On)
	var taken []string
	adopted := 0
	for _, pod := range slices.Sorted(maps.Keys(adoption.Takers)) {
		slots := adoption.Takers[pod]
		if err := r.takeSlots(ctx, s, masters, pod, slots); err != nil {
			return adopted, err
		}
		adopted += len(slots)
		taken = append(taken, fmt.Sprintf("%s took %d slots (%d keys it held)", pod, len(slots), adoption.Keys[pod]))
	}
	step.Reason += " (" + strings.Join(taken, "; ") + ")"
	if len(adoption.Problems) > 0 {
		return adopted, errors.New(strings.Join(adoption.Problems, "; "))
	}
	return adopted, nil
}

// slotKeyCounter is a master asked how many keys it holds in each slot: CLUSTER COUNTKEYSINSLOT.
type slotKeyCounter interface {
	ClusterCountKeysInSlots(ctx context.Context, slots []int) ([]int64, error)
}

// slotTaker is a master that claims slots (CLUSTER SETSLOT NODE) and wins them (CLUSTER
// BUMPEPOCH).
type slotTaker interface {
	slotSetter
	epochBumper
}

// countKeysInSlots asks every master, side by side, how many keys it holds in each slot.
func (r *RedisClusterReconciler) countKeysInSlots(ctx context.Context, s *clusterScope, masters map[string]*clusterplan.Member, slots []int) (map[string][]int64, error) {
	keys := map[string][]int64{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for pod, m := range masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c slotKeyCounter
			c, err := r.redisNode(s.memberEndpoint(m))
			var counts []int64
			if err == nil {
				counts, err = c.ClusterCountKeysInSlots(ctx, slots)
			}
			mu.Lock()
			defer mu.Unlock()
			keys[pod], errs[pod] = counts, err
		}()
	}
	wg.Wait()
	for _, pod := range slices.Sorted(maps.Keys(errs)) {
		if errs[pod] != nil {
			return nil, fmt.Errorf("count the keys of pod %s in the orphaned slots: %w", pod, errs[pod])
		}
	}
	return keys, nil
}

// takeSlots makes the master on pod the owner of slots: it claims them, bumps its config
// epoch so that its claim beats any stale mapping in the other nodes' gossip, and the other
// masters are told at once. A master that cannot be told is logged: the bumped epoch carries
// the claim to it.
func (r *RedisClusterReconciler) takeSlots(ctx context.Context, s *clusterScope, masters map[string]*clusterplan.Member, pod string, slots []int) error {
	taker := masters[pod]
	me, _ := myselfOf(taker)
	var c slotTaker
	c, err := r.redisNode(s.memberEndpoint(taker))
	if err != nil {
		return err
	}
	if err := errors.Join(c.ClusterSetSlotEach(ctx, slots, redis.SlotNode, me.ID)...); err != nil {
		return fmt.Errorf("pod %s takes slots %v: %w", pod, slots, err)
	}
	if _, err := c.ClusterBumpEpoch(ctx); err != nil {
		return fmt.Errorf("pod %s: %w", pod, err)
	}
	for _, other := range slices.Sorted(maps.Keys(masters)) {
		if other == pod {
			continue
		}
		var oc slotSetter
		oc, err := r.redisNode(s.memberEndpoint(masters[other]))
		if err == nil {
			err = errors.Join(oc.ClusterSetSlotEach(ctx, slots, redis.SlotNode, me.ID)...)
		}
		if err != nil {
			log.FromContext(ctx).Info("could not tell a master the orphaned slots' new owner; its epoch carries it", "pod", other, "owner", pod, "error", err.Error())
		}
	}
	return nil
}
