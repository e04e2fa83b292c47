package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// failoverOnRequest acts on the annotation redis.opstreelabs.in/failover (kubectl redis
// failover) on a Ready cluster: the replica it names, or the replica holding the most of the
// master it names, takes its master's shard over with CLUSTER FAILOVER, which loses no
// acknowledged write. Refused, with a Warning and the Failover condition, while that replica's
// link is down. The annotation redis.opstreelabs.in/failover-target stays on afterwards, naming
// the pod made master: as long as it is master, its leader pod does not take the shard back
// (which the operator otherwise does), so the failover lasts; remove it to let it.
func (r *RedisClusterReconciler) failoverOnRequest(ctx context.Context, s *clusterScope) (bool, error) {
	req := failoverRequest{client: r.Client, recorder: r.Recorder, obj: s.cr, conditions: &s.cr.Status.Conditions, warned: s.memory.warned}
	again := func(more bool, err error) (bool, error) {
		if more {
			s.Requeue(ctx, afterRedisCommands, "closing the requested failover once its outcome is in the status")
		}
		return false, err
	}
	target, chosen, asked := req.asked()
	switch {
	case !asked && chosen != "" && !clusterplan.IsServingMaster(s.members, chosen):
		// The pod made master on request is master no more (a later failover, its
		// replacement): its leader pod may take the shard back again.
		return false, req.forget(ctx)
	case !asked:
		return false, nil
	case chosen != "" && clusterplan.IsServingMaster(s.members, chosen):
		return again(req.doneKeeping(ctx, chosen))
	case chosen != "":
		target = chosen
	}
	plan := clusterplan.PlanRequestedFailover(s.members, target)
	if plan.Refuse != "" {
		return again(req.refuse(ctx, plan.Refuse, plan.Invalid))
	}
	if plan.Wait != "" {
		s.Conditions.Progressing(ReasonFailoverRequested, "the failover asked with "+builder.AnnotationFailover+" waits: "+plan.Wait)
		s.Requeue(ctx, whileConverging, plan.Wait)
		return true, nil
	}
	if err := req.choose(ctx, plan.Failover); err != nil {
		return false, err
	}
	member := memberByPod(s.members, plan.Failover)
	progress := plan.Failover + " takes its master's shard over, as asked with " + builder.AnnotationFailover
	pod := s.pod(func(p *corev1.Pod) bool { return p.Name == plan.Failover })
	wait, err := r.askFailover(ctx, s, s.members, member, redis.FailoverDefault)
	if err != nil {
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, "ClusterFailoverFailed", "Failover", "%s could not take its master's shard over: %v", plan.Failover, err)
		return false, fmt.Errorf("CLUSTER FAILOVER on %s: %w", plan.Failover, err)
	}
	if wait != "" {
		s.Conditions.Progressing(ReasonFailoverRequested, progress+": "+wait)
		s.Requeue(ctx, whileConverging, wait)
		return true, nil
	}
	failovers.With(resourceLabelValues(s.cr)).Inc()
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, "ClusterFailover", "Failover", "%s", progress)
	s.Conditions.Progressing(ReasonFailoverRequested, progress)
	s.Requeue(ctx, afterRedisCommands, "waiting for CLUSTER FAILOVER to swap the roles")
	return true, nil
}

// requestedMasters are the pods a requested failover made master, which keep their shards.
func requestedMasters(cr interface{ GetAnnotations() map[string]string }) []string {
	if pod := cr.GetAnnotations()[builder.AnnotationFailoverTarget]; pod != "" {
		return []string{pod}
	}
	return nil
}
