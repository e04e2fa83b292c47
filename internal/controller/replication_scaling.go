package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// handOverBeforeScaleIn moves the master role to a pod that stays before the StatefulSet
// shrinks: scaling in removes the highest ordinals, and a master removed that way would take
// with it every write its replicas had not received yet. FAILOVER TO pauses writes until the
// chosen replica has them all, then swaps the roles. Sentinels, where they watch, are left to
// fail over by themselves once the pod goes.
func (r *RedisReplicationReconciler) handOverBeforeScaleIn(ctx context.Context, s *replicationScope) (bool, error) {
	size := int(*s.cr.Spec.Size)
	master := s.cr.Status.MasterNode
	// The plan decides; these cheap checks only spare asking every pod for ROLE on every reconcile.
	if master == "" || podOrdinal(master) < size || s.cr.Spec.Sentinel != nil {
		return false, nil
	}
	if sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name); err != nil || len(sentinels) > 0 {
		return false, err
	}
	// The pods are observed again after the objects are applied; this early view only serves
	// the hand-over, which must happen before the StatefulSet shrinks.
	if err := r.observeMembers(ctx, s); err != nil {
		return false, err
	}
	plan := replicationplan.PlanHandOver(master, s.members, size, replicationplan.ScaleIn)
	switch {
	case plan.To != "":
		return true, r.handOver(ctx, s, master, plan.To, status.ReasonConverging, fmt.Sprintf("before scaling in to %d pods", size))
	case plan.Wait != "":
		r.boundedWait(ctx, s, "hand-over", plan.Wait, func(m string) { r.notReady(s, status.ReasonConverging, m) })
		s.Requeue(ctx, whileConverging, plan.Wait)
		return true, nil
	}
	return false, nil // gone, or no longer master: nothing to hand over
}

// failoverToRunner is a master asked to hand its role to one of its replicas (handOver).
type failoverToRunner interface {
	FailoverTo(ctx context.Context, host string, port int, timeout time.Duration) error
}

// handOver runs FAILOVER TO on the master towards target (a FAILOVER already in progress is
// waited for, not repeated), says so in an event and the conditions, and comes back once Redis
// has swapped the roles.
func (r *RedisReplicationReconciler) handOver(ctx context.Context, s *replicationScope, master, target, reason, why string) error {
	from, to := s.member(master), s.member(target)
	if from == nil || to == nil {
		return fmt.Errorf("hand-over from %s to %s names a pod that was not observed", master, target)
	}
	c, err := r.node(s, from.IP)
	if err != nil {
		return err
	}
	err = c.FailoverTo(ctx, r.failoverTarget(ctx, s, from.IP, to), to.Port, 5*time.Second)
	inProgress := redis.IsServerError(err) && strings.Contains(err.Error(), "already in progress")
	if err != nil && !inProgress {
		r.Recorder.Eventf(s.cr, s.podNamed(master), corev1.EventTypeWarning, "HandOverFailed", "Failover", "FAILOVER TO %s failed: %v", target, err)
		return fmt.Errorf("hand the master role from %s to %s: %w", master, target, err)
	}
	message := fmt.Sprintf("handing the master role from %s to %s %s", master, target, why)
	if err == nil {
		r.Recorder.Eventf(s.cr, s.podNamed(master), corev1.EventTypeNormal, "HandOver", "Failover", "%s", message)
		failovers.With(resourceLabelValues(s.cr)).Inc()
	}
	r.notReady(s, reason, message)
	s.Requeue(ctx, afterRedisCommands, "waiting for FAILOVER TO to complete")
	return nil
}

// failoverTarget is the host FAILOVER TO must name for the replica to: Redis looks it up among
// the master's replicas by what each announces, its IP or its DNS name (a pod not yet started
// with the announcement its sentinels need still announces its IP). What the master at
// masterIP lists decides; when it cannot say, the form the sentinels use.
func (r *RedisReplicationReconciler) failoverTarget(ctx context.Context, s *replicationScope, masterIP string, to *replicationplan.Member) string {
	info, err := r.info(ctx, s, masterIP)
	if err != nil {
		log.FromContext(ctx).V(1).Info("the master does not list its replicas", "error", err.Error())
		return s.hosts.address(to.IP)
	}
	for addr := range acknowledgmentLags(info) {
		if host, port, err := net.SplitHostPort(addr); err == nil && s.hosts.ip(host) == to.IP && port == strconv.Itoa(to.Port) {
			return host
		}
	}
	return s.hosts.address(to.IP)
}
