package controller

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonStuckMasterFailover is the reason of the Warning event that tells a master stuck in a
// script was failed over by the operator.
const ReasonStuckMasterFailover = "StuckMasterFailover"

// busyKey is the clock (Memory.waits) of a pod answering BUSY.
func busyKey(pod string) string { return "busy/" + pod }

// failOverStuckMasters asks the best replica of a master stuck in a script to take its shard
// over with CLUSTER FAILOVER FORCE (see clusterplan.PlanStuckMasters for why Redis does not,
// and why FORCE). The master must have answered BUSY to every read for the grace: the one a
// RedisReplication gives its silent master (DefaultMasterPromotionGrace), since a failover
// loses the writes its replica had not received while a script that ends by itself loses
// none. The clock runs in memory only: an operator restart restarts it, which delays a
// failover and never hastens it. A stuck master no replica can take over is part of the
// outage the cluster reports.
func (r *RedisClusterReconciler) failOverStuckMasters(ctx context.Context, s *clusterScope) error {
	now := time.Now()
	busy := map[string]time.Time{}
	for _, m := range s.members {
		if m.Busy {
			busy[m.Pod] = s.memory.waits.Started(s.cr.UID, busyKey(m.Pod), now)
		} else {
			s.memory.waits.Stopped(s.cr.UID, busyKey(m.Pod)) // an answer, or none: not BUSY without a break
		}
	}
	if len(busy) == 0 {
		s.memory.warned.Cleared(s.cr.UID, "stuck-master")
		return nil
	}
	plan := clusterplan.PlanStuckMasters(clusterplan.Stuck{Busy: busy, Elections: r.failovers.windows(s.members), Now: now,
		Grace: cmp.Or(r.StuckMasterGrace, DefaultMasterPromotionGrace)}, s.members)
	logger := log.FromContext(ctx)
	if plan.Recheck > 0 {
		s.Requeue(ctx, plan.Recheck, "a master stuck in a script is taken over once its grace is over")
	}
	for _, wait := range plan.Waits {
		logger.Info("a master stuck in a script waits to be taken over", "wait", wait)
	}
	if len(plan.Problems) > 0 {
		problems := strings.Join(plan.Problems, "; ")
		if s.memory.warned.FirstWarning(s.cr.UID, "stuck-master", problems) {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonOutage, "Observe", "%s", problems)
		}
		if s.Conditions.HasServed() {
			s.outages = append(s.outages, plan.Problems...)
		}
	}
	if plan.Failover == nil {
		return nil
	}
	f := plan.Failover
	replica := memberByPod(s.members, f.Replica)
	masterPod := s.pod(func(p *corev1.Pod) bool { return p.Name == f.Master })
	wait, err := r.askFailover(ctx, s, s.members, replica, redis.FailoverForce)
	if err != nil {
		r.Recorder.Eventf(s.cr, masterPod, corev1.EventTypeWarning, "ClusterFailoverFailed", "Failover",
			"%s could not take the shard of %s, stuck in a script, over: %v", f.Replica, f.Master, err)
		return fmt.Errorf("CLUSTER FAILOVER FORCE on %s for stuck %s: %w", f.Replica, f.Master, err)
	}
	if wait != "" {
		logger.Info("a master stuck in a script waits to be taken over", "master", f.Master, "replica", f.Replica, "wait", wait)
		s.Requeue(ctx, whileConverging, wait)
		return nil
	}
	failovers.With(resourceLabelValues(s.cr)).Inc()
	logger.Info("forced the failover of a master stuck in a script", "master", f.Master, "replica", f.Replica, "busyFor", f.Busy.Round(time.Second).String())
	r.Recorder.Eventf(s.cr, masterPod, corev1.EventTypeWarning, ReasonStuckMasterFailover, "Failover",
		"master %s has answered BUSY (stuck in a script or function) for %s: %s is asked to take its shard over with CLUSTER FAILOVER FORCE",
		f.Master, f.Busy.Round(time.Second), f.Replica)
	s.Requeue(ctx, afterRedisCommands, "waiting for CLUSTER FAILOVER FORCE to elect the replica of a stuck master")
	return nil
}
