package controller

import (
	"context"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// failoverOnRequest acts on the annotation redis.opstreelabs.in/failover (kubectl redis
// failover): the master role goes to the pod it names, or with "*" to the replica holding the
// most, by the same FAILOVER TO hand-over as a scale-in or a rolling update, which pauses
// writes until that replica has them all. Refused, with a Warning and the Failover condition,
// while no such replica is in sync, and while sentinels watch the replication (they decide
// its master).
func (r *RedisReplicationReconciler) failoverOnRequest(ctx context.Context, s *replicationScope) (bool, error) {
	req := failoverRequest{client: r.Client, recorder: r.Recorder, obj: s.cr, conditions: &s.cr.Status.Conditions, warned: s.memory.warned}
	target, chosen, asked := req.asked()
	if !asked {
		return false, nil
	}
	again := func(more bool, err error) (bool, error) {
		if more {
			s.Requeue(ctx, afterRedisCommands, "closing the requested failover once its outcome is in the status")
		}
		return false, err
	}
	if s.sentinels || s.cr.Spec.Sentinel != nil {
		return again(req.refuse(ctx, "sentinels watch this replication and choose its master: ask them (SENTINEL FAILOVER)", true))
	}
	if chosen != "" {
		target = chosen
	}
	master := s.plan.Master
	plan := replicationplan.PlanRequestedFailover(master, s.members, target)
	switch {
	case plan.Done:
		return again(req.done(ctx, master))
	case plan.Refuse != "":
		return again(req.refuse(ctx, plan.Refuse, plan.Invalid))
	}
	if err := req.choose(ctx, plan.To); err != nil {
		return false, err
	}
	return true, r.handOver(ctx, s, master, plan.To, ReasonFailoverRequested, "as asked with "+builder.AnnotationFailover)
}
