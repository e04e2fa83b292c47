package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonSentinelHandOver is the event of a master role handed over through the sentinels.
const ReasonSentinelHandOver = "SentinelHandOver"

const (
	// sentinelHandOverPause bounds the master's write pause during a hand-over through the
	// sentinels: Redis lifts it by itself then, whatever becomes of the operator.
	sentinelHandOverPause = 10 * time.Second
	// sentinelCatchUpWait bounds the wait for every replica to hold each write the paused
	// master took.
	sentinelCatchUpWait = 2 * time.Second
	// sentinelPromotionWait bounds the wait for the sentinels to promote a replica; within the
	// pause, so that the old master can be made a replica before it takes another write.
	sentinelPromotionWait = 8 * time.Second
	// handOverPoll is how often the replicas are asked their offset or role meanwhile.
	handOverPoll = 20 * time.Millisecond
	// sentinelHandOverRetry is how long after a hand-over the sentinels did not carry out the
	// master's pod is replaced instead (they then fail over by themselves): asking again at
	// once would hold the writes once more for nothing.
	sentinelHandOverRetry = time.Minute
)

// writePauser is a master whose writes are held while a replica catches up with them.
type writePauser interface {
	PauseWrites(ctx context.Context, d time.Duration) error
	Unpause(ctx context.Context) error
}

// sentinelFailoverAsker is a sentinel asked to fail a group's master over now.
type sentinelFailoverAsker interface {
	SentinelFailover(ctx context.Context, group string) error
}

// handOverThroughSentinels hands the master role of a sentinel-watched replication to a
// replica before the master's pod is replaced, with writes held for about as long as a manual
// failover holds them instead of the sentinels' down-after period and more: the master's writes
// are paused (CLIENT PAUSE WRITE), every replica catches up with them, one sentinel is asked to
// fail over (SENTINEL FAILOVER: the sentinels pick the replica and re-point the others), and
// once a replica answers as master the old master is made its replica before its pause ends,
// so that no write it acknowledged after the promotion is lost when the sentinels convert it.
// It returns asked false when no sentinel can be asked (none, several sets, none that names
// this master and is not failing over): the caller then replaces the master as before.
func (r *RedisReplicationReconciler) handOverThroughSentinels(ctx context.Context, s *replicationScope, master, why string) (bool, error) {
	from := s.member(master)
	if from == nil {
		return false, fmt.Errorf("hand-over from %s names a pod that was not observed", master)
	}
	const clock = "sentinel-handover"
	if failed, ok := s.memory.waits.StartedAt(s.cr.UID, clock); ok && time.Since(failed) < sentinelHandOverRetry {
		return false, nil
	}
	groups, err := r.watchingSentinels(ctx, s)
	if err != nil || len(groups) != 1 {
		return false, err
	}
	g := groups[0]
	sentinel, err := r.sentinelNamingMaster(ctx, s, g, from.IP)
	if err != nil || sentinel == nil {
		return false, err
	}
	c, err := r.node(s, from.IP)
	if err != nil {
		return false, err
	}
	if err := c.PauseWrites(ctx, sentinelHandOverPause); err != nil {
		return false, fmt.Errorf("pause the writes of master %s for a hand-over through the sentinels: %w", master, err)
	}
	pausedAt := time.Now()
	defer func() {
		if err := c.Unpause(context.WithoutCancel(ctx)); err != nil {
			// The pause ends by itself within sentinelHandOverPause.
			log.FromContext(ctx).Info("CLIENT UNPAUSE failed", "pod", master, "error", err.Error())
		}
	}()
	replicas := replicasOf(s.members, from)
	if lagging, err := r.waitCaughtUp(ctx, s, c, replicas); err != nil || lagging != "" {
		if err == nil {
			s.Requeue(ctx, whileConverging, "replica "+lagging+" did not catch up with the paused master")
		}
		return true, err
	}
	if err := sentinel.client.SentinelFailover(ctx, g.masterGroup); err != nil {
		return true, fmt.Errorf("ask sentinel %s to fail %s over: %w", sentinel.pod, g.masterGroup, err)
	}
	promoted, aborted := r.waitPromoted(ctx, s, replicas, sentinel.client, g.masterGroup)
	if promoted == nil {
		s.memory.waits.Stopped(s.cr.UID, clock)
		s.memory.waits.Started(s.cr.UID, clock, time.Now())
		outcome := fmt.Sprintf("no replica answered as master within %s", sentinelPromotionWait)
		if aborted {
			outcome = "its failover ended without promoting a replica"
		}
		r.Recorder.Eventf(s.cr, s.podNamed(master), corev1.EventTypeWarning, ReasonSentinelHandOver, "SentinelFailover",
			"sentinel %s was asked to fail the master %s over %s, and %s: the writes go on on %s, whose pod is replaced instead, and the sentinels fail over by themselves",
			sentinel.pod, master, why, outcome, master)
		s.Requeue(ctx, whileConverging, "the sentinels promoted no replica")
		return true, nil
	}
	s.memory.waits.Stopped(s.cr.UID, clock)
	if err := c.ReplicaOf(ctx, s.hosts.address(promoted.IP), promoted.Port); err != nil {
		return true, fmt.Errorf("make the old master %s a replica of %s after the sentinels' failover: %w", master, promoted.Pod, err)
	}
	message := fmt.Sprintf("sentinel %s failed the master over from %s to %s %s; writes held %s",
		sentinel.pod, master, promoted.Pod, why, time.Since(pausedAt).Round(time.Millisecond))
	r.Recorder.Eventf(s.cr, s.podNamed(master), corev1.EventTypeNormal, ReasonSentinelHandOver, "SentinelFailover", "%s", message)
	failovers.With(resourceLabelValues(s.cr)).Inc()
	r.observeMasterChange(s.cr, master, promoted.Pod)
	s.cr.Status.MasterNode = promoted.Pod
	r.notReady(s, status.ReasonRollingUpdate, message)
	s.Requeue(ctx, afterRedisCommands, "the sentinels re-point the replicas")
	return true, nil
}

// sentinelNamingMaster is a running sentinel of g that names the pod at masterIP as the
// group's master and is not failing it over; nil when none is.
func (r *RedisReplicationReconciler) sentinelNamingMaster(ctx context.Context, s *replicationScope, g watchingSentinels, masterIP string) (*sentinelPeer, error) {
	for i := range g.pods {
		pod := &g.pods[i]
		if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		c, err := r.dial(pod.Status.PodIP, builder.DefaultSentinelPort, redis.Auth{Password: g.password}, g.tls)
		if err != nil {
			return nil, err
		}
		fields, err := c.SentinelMaster(ctx, g.masterGroup)
		if err != nil {
			log.FromContext(ctx).V(1).Info("a sentinel does not say what it monitors", "pod", pod.Name, "error", err.Error())
			continue
		}
		flags := strings.Split(fields["flags"], ",")
		if s.hosts.ip(fields["ip"]) != masterIP || slices.ContainsFunc(flags, func(f string) bool {
			return f == "failover_in_progress" || f == "s_down" || f == "o_down" || f == "disconnected"
		}) {
			continue
		}
		return &sentinelPeer{pod: pod.Name, client: c}, nil
	}
	return nil, nil
}

// replicasOf are the members that answered as replicas of master.
func replicasOf(members []replicationplan.Member, master *replicationplan.Member) []replicationplan.Member {
	var out []replicationplan.Member
	for _, m := range members {
		if m.Pod != master.Pod && m.Role != nil && m.Role.Kind == redis.RoleSlave && m.Role.MasterIP == master.IP && m.Role.MasterPort == master.Port {
			out = append(out, m)
		}
	}
	return out
}

// waitCaughtUp waits, within sentinelCatchUpWait, until every replica has processed the
// paused master's whole stream, and names one that has not ("" when all have).
func (r *RedisReplicationReconciler) waitCaughtUp(ctx context.Context, s *replicationScope, master roleReader, replicas []replicationplan.Member) (string, error) {
	role, err := master.Role(ctx)
	if err != nil {
		return "", fmt.Errorf("read the paused master's offset: %w", err)
	}
	deadline := time.Now().Add(sentinelCatchUpWait)
	for _, m := range replicas {
		c, err := r.node(s, m.IP)
		if err != nil {
			return "", err
		}
		for {
			if got, err := c.Role(ctx); err == nil && got.ReplicationOffset >= role.ReplicationOffset {
				break
			}
			if time.Now().After(deadline) {
				return m.Pod, nil
			}
			if err := sleepCtx(ctx, handOverPoll); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// waitPromoted waits, within sentinelPromotionWait, for one of the replicas to answer as
// master, and returns it; nil if none did, aborted when the sentinel asked no longer fails
// over (it found no replica it may promote: -failover-abort-no-good-slave).
func (r *RedisReplicationReconciler) waitPromoted(ctx context.Context, s *replicationScope, replicas []replicationplan.Member,
	sentinel sentinelMasterReader, group string) (promoted *replicationplan.Member, aborted bool) {
	deadline := time.Now().Add(sentinelPromotionWait)
	for time.Now().Before(deadline) {
		// Read before the replicas, so that a failover that ended with a promotion is seen
		// promoted below rather than taken for an abort.
		fields, err := sentinel.SentinelMaster(ctx, group)
		failingOver := err != nil || strings.Contains(fields["flags"], "failover_in_progress")
		for i := range replicas {
			c, err := r.node(s, replicas[i].IP)
			if err != nil {
				continue
			}
			if role, err := c.Role(ctx); err == nil && role.Kind == redis.RoleMaster {
				return &replicas[i], false
			}
		}
		if !failingOver {
			return nil, true
		}
		if sleepCtx(ctx, handOverPoll) != nil {
			return nil, false
		}
	}
	return nil, false
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
