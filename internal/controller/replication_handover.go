package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// handOverTerminating acts on a planned deletion of the master's pod (a drain, an eviction,
// kubectl delete pod): the master role goes to a replica in sync by FAILOVER TO, which pauses
// writes only until that replica has them all, instead of waiting for the master to be missed.
// Where sentinels watch, they are asked to fail over instead (handOverThroughSentinels: they
// pick the replica), or, when none can be, left to fail over by themselves.
// The pod's preStop hook holds its process up until it is a replica (builder/handover.go).
// The other phases look at live pods only, so this one runs before them.
func (r *RedisReplicationReconciler) handOverTerminating(ctx context.Context, s *replicationScope) (bool, error) {
	live, going, err := podsWithTerminating(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil || len(going) == 0 {
		return false, err
	}
	watched := s.cr.Spec.Sentinel != nil
	if !watched {
		sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
		if err != nil {
			return false, err
		}
		watched = len(sentinels) > 0
	}
	// The pods are observed again in the pods phase; this view, the terminating pods
	// included, only serves the hand-over.
	if err := r.observePodMembers(ctx, s, append(live, going...)); err != nil {
		return false, err
	}
	for _, pod := range going {
		plan := replicationplan.PlanHandOver(pod.Name, s.members, int(*s.cr.Spec.Size), replicationplan.Deleted)
		switch {
		case plan.To != "" && watched:
			if asked, err := r.handOverThroughSentinels(ctx, s, pod.Name, "before its pod stops"); asked || err != nil {
				return true, err
			}
		case plan.To != "":
			return true, r.handOver(ctx, s, pod.Name, plan.To, status.ReasonConverging, "before its pod stops")
		case plan.Wait != "":
			s.Requeue(ctx, whileConverging, plan.Wait)
		}
		if !watched {
			r.followHandOver(s, pod.Name)
		}
	}
	return false, nil
}

// followHandOver records the master a terminating pod handed its role to, while that pod still
// answers: once it is gone no replica may follow the new master yet (FAILOVER TO re-points only
// the old master), and the pod that replaces it comes back empty as a master, which must not
// pass for the recorded master restarted. The replicas are then re-pointed by the plan.
func (r *RedisReplicationReconciler) followHandOver(s *replicationScope, terminating string) {
	if s.cr.Status.MasterNode != terminating {
		return
	}
	if to := replicationplan.HandedOverTo(s.members, terminating); to != "" {
		r.Recorder.Eventf(s.cr, s.podNamed(to), corev1.EventTypeNormal, "MasterChanged", "Observe", "the master is now %s (was %s, whose pod stops)", to, terminating)
		r.observeMasterChange(s.cr, terminating, to)
		s.cr.Status.MasterNode = to
	}
}
