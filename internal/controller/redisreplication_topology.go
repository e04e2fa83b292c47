package controller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// observePods observes the pods (observeMembers) and reports when there is none yet.
func (r *RedisReplicationReconciler) observePods(ctx context.Context, s *replicationScope) (bool, error) {
	if err := r.observeMembers(ctx, s); err != nil {
		return false, err
	}
	s.cr.Status.ReadyReplicas = countReady(s.pods)
	if len(s.members) == 0 {
		r.notReady(s, ReasonPodsNotReady, "waiting for pods of StatefulSet "+s.cr.Name)
		reportPodTrouble(r.Recorder, s.cr, s.conditions, s.pods)
		return true, nil // the pod watch brings us back
	}
	return false, nil
}

// observeMembers lists the pods and asks each running one for ROLE; a pod that does not
// answer is a member without a role, which the plans treat as down.
func (r *RedisReplicationReconciler) observeMembers(ctx context.Context, s *replicationScope) error {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return err
	}
	s.pods, s.members = pods, nil
	for i := range pods {
		pod := &pods[i]
		m := replicationplan.Member{Pod: pod.Name, Ordinal: podOrdinal(pod.Name), IP: pod.Status.PodIP, Port: builder.DefaultRedisPort, Ready: podReady(pod)}
		if pod.Status.PodIP != "" && pod.Status.Phase == corev1.PodRunning {
			c, err := r.client(s, m.IP)
			if err != nil {
				return err
			}
			if role, err := observeRole(ctx, c); err == nil {
				m.Role = &role
			} else {
				log.FromContext(ctx).Info("ROLE failed", "pod", pod.Name, "error", err.Error())
			}
		}
		s.members = append(s.members, m)
	}
	return nil
}

// observeRole is ROLE with the offset of the stream the node holds. ROLE reports -1 for a
// replica whose link is down, exactly when the planner compares what replicas hold, so the
// offset comes from INFO replication (master_repl_offset), which a replica keeps while
// disconnected.
func observeRole(ctx context.Context, c *redis.Client) (redis.Role, error) {
	role, err := c.Role(ctx)
	if err != nil {
		return role, err
	}
	info, err := c.Info(ctx, "replication")
	if err != nil {
		return role, err
	}
	offset, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if err != nil {
		return role, fmt.Errorf("INFO replication: master_repl_offset %q: %w", info["master_repl_offset"], err)
	}
	role.ReplicationOffset = offset
	return role, nil
}

// reconcileReplication chooses the master and points every other pod at it.
func (r *RedisReplicationReconciler) reconcileReplication(ctx context.Context, s *replicationScope) (bool, error) {
	design := replicationplan.Design{Current: s.cr.Status.MasterNode, Sentinels: s.sentinels, Monitored: s.monitored}
	since, down := r.masterDownSince.Load(s.cr.UID)
	grace := r.MasterPromotionGrace
	if grace == 0 {
		grace = DefaultMasterPromotionGrace
	}
	if down {
		design.MayPromote = time.Since(since.(time.Time)) >= grace
	}
	s.plan = replicationplan.Compute(design, s.members)
	switch {
	case !s.plan.MasterDown:
		r.masterDownSince.Delete(s.cr.UID)
	case !down:
		r.masterDownSince.Store(s.cr.UID, time.Now())
	}
	if s.plan.Master != "" && s.plan.Master != s.cr.Status.MasterNode {
		if s.cr.Status.MasterNode != "" {
			r.Recorder.Eventf(s.cr, s.podNamed(s.plan.Master), corev1.EventTypeNormal, "MasterChanged", "Observe", "the master is now %s (was %s)", s.plan.Master, s.cr.Status.MasterNode)
		}
		s.cr.Status.MasterNode = s.plan.Master
	}
	for _, step := range s.plan.Steps {
		if err := r.runStep(ctx, s, step); err != nil {
			return false, err
		}
	}
	switch {
	case len(s.plan.Steps) > 0:
		s.cr.Status.State, s.cr.Status.Reason = ReplicationStateInitializing, "configuring replication"
		s.conditions.progressing(ReasonBootstrapping, fmt.Sprintf("running %d step(s): %s", len(s.plan.Steps), s.plan.Steps[0].Reason))
		s.requeue(ctx, afterRedisCommands, "waiting for replicas to connect")
		return true, nil
	case s.plan.MasterDown:
		r.notReady(s, ReasonTopologyProblem, s.plan.Wait)
		wait := whileConverging
		if !down {
			wait = grace // the promotion clock starts now
		}
		s.requeue(ctx, wait, s.plan.Wait)
		return true, nil
	case s.plan.Wait != "":
		r.notReady(s, ReasonConverging, s.plan.Wait)
		s.requeue(ctx, whileConverging, s.plan.Wait)
		return true, nil
	}
	return false, nil
}

func (r *RedisReplicationReconciler) runStep(ctx context.Context, s *replicationScope, step replicationplan.Step) error {
	target := s.member(step.On)
	if target == nil {
		return fmt.Errorf("step %s names unknown pod %s", step.Kind, step.On)
	}
	c, err := r.client(s, target.IP)
	if err != nil {
		return err
	}
	switch step.Kind {
	case replicationplan.StepReplicaOf:
		err = c.ReplicaOf(ctx, step.Host, step.Port)
	case replicationplan.StepPromote:
		err = c.ReplicaOfNoOne(ctx)
	default:
		err = fmt.Errorf("unknown step %s", step.Kind)
	}
	pod := s.podNamed(step.On)
	if err != nil {
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, string(step.Kind)+"Failed", string(step.Kind), "%s failed: %v", step, err)
		return fmt.Errorf("%s: %w", step, err)
	}
	log.FromContext(ctx).Info("ran replication step", "step", step.String(), "reason", step.Reason)
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, string(step.Kind), string(step.Kind), "%s: %s", step, step.Reason)
	return nil
}

// labelPodRoles keeps redis-role on what Redis says each pod is, for the -master and -replica
// Services and users' selectors.
func (r *RedisReplicationReconciler) labelPodRoles(ctx context.Context, s *replicationScope) (bool, error) {
	for i := range s.members {
		m := &s.members[i]
		pod, _ := s.podNamed(m.Pod).(*corev1.Pod)
		if m.Role == nil || pod == nil {
			continue
		}
		want := builder.RedisRoleSlave
		if m.Role.Kind == redis.RoleMaster {
			want = builder.RedisRoleMaster
		}
		if err := setPodRoleLabel(ctx, r.Client, pod, want); err != nil {
			return false, err
		}
	}
	return false, nil
}
