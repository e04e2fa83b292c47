package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// handOverTerminating acts on a planned pod deletion (a drain, an eviction, kubectl delete pod):
// a master whose pod terminates gracefully hands its shard to its replica in sync with CLUSTER
// FAILOVER, which pauses writes only until that replica has them all, instead of leaving the
// shard without a master for Redis's node timeout. The pod's preStop hook holds its process up
// until it is a replica (builder/handover.go); a pod killed outright still relies on Redis's
// own failover. The other phases look at live pods only, so this one runs before them.
func (r *RedisClusterReconciler) handOverTerminating(ctx context.Context, s *clusterScope) (bool, error) {
	leaders, leadersGoing, err := podsWithTerminating(ctx, r.Client, s.cr.Namespace, builder.ClusterStatefulSetName(s.cr.Name, builder.RoleLeader))
	if err != nil {
		return false, err
	}
	followers, followersGoing, err := podsWithTerminating(ctx, r.Client, s.cr.Namespace, builder.ClusterStatefulSetName(s.cr.Name, builder.RoleFollower))
	if err != nil {
		return false, err
	}
	going := slices.Concat(leadersGoing, followersGoing)
	if len(going) == 0 {
		return false, nil
	}
	view := s.withPods(append(leaders, leadersGoing...), append(followers, followersGoing...))
	members := r.observeMembers(ctx, view)
	for i := range going {
		if err := r.handOver(ctx, s, view, members, &going[i], going); err != nil {
			return false, err
		}
	}
	return false, nil
}

// handOver asks the best replica in sync of the terminating pod, when it serves slots as a
// master, to take its shard over (view holds every pod, the terminating ones included); replicas in pods that terminate too are not asked.
func (r *RedisClusterReconciler) handOver(ctx context.Context, s, view *clusterScope, members []clusterplan.Member, pod *corev1.Pod, going []corev1.Pod) error {
	if !clusterplan.IsServingMaster(members, pod.Name) {
		return nil // a replica or an empty master: nothing to hand over
	}
	candidates := slices.DeleteFunc(slices.Clone(members), func(m clusterplan.Member) bool {
		return m.Pod != pod.Name && slices.ContainsFunc(going, func(p corev1.Pod) bool { return p.Name == m.Pod })
	})
	plan := clusterplan.PlanRequestedFailover(candidates, pod.Name)
	switch {
	case plan.Refuse != "":
		// Redis fails over by itself once the pod is gone; say why it has to.
		if r.failovers.firstRefusal("hand-over-refused/" + string(pod.UID)) {
			r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, "HandOverRefused", "Failover",
				"%s stops while it serves slots, and its shard cannot be handed over: %s", pod.Name, plan.Refuse)
		}
		s.Requeue(ctx, whileConverging, "a terminating master's shard has no replica in sync to take it over yet")
		return nil
	case plan.Wait != "":
		s.Requeue(ctx, whileConverging, "the hand-over of terminating "+pod.Name+" waits: "+plan.Wait)
		return nil
	}
	member := memberByPod(members, plan.Failover)
	replica := view.pod(func(p *corev1.Pod) bool { return p.Name == plan.Failover })
	wait, err := r.askFailover(ctx, s, members, member, redis.FailoverDefault)
	if err != nil {
		r.Recorder.Eventf(s.cr, replica, corev1.EventTypeWarning, "ClusterFailoverFailed", "Failover",
			"%s could not take the shard of terminating %s over: %v", plan.Failover, pod.Name, err)
		return fmt.Errorf("CLUSTER FAILOVER on %s for terminating %s: %w", plan.Failover, pod.Name, err)
	}
	if wait != "" {
		s.Requeue(ctx, whileConverging, "the hand-over of terminating "+pod.Name+" waits: "+wait)
		return nil
	}
	failovers.With(resourceLabelValues(s.cr)).Inc()
	log.FromContext(ctx).Info("hand-over of a terminating master", "master", pod.Name, "replica", plan.Failover)
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, "HandOver", "Failover",
		"%s takes the shard of %s over before its pod stops", plan.Failover, pod.Name)
	s.Requeue(ctx, afterRedisCommands, "waiting for CLUSTER FAILOVER to hand a terminating master's shard over")
	return nil
}

// podsWithTerminating lists a StatefulSet's live pods and, apart, those that terminate while
// their containers may still run (an address, phase Running).
func podsWithTerminating(ctx context.Context, c client.Client, namespace, statefulSet string) (live, terminating []corev1.Pod, err error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{builder.LabelApp: statefulSet}); err != nil {
		return nil, nil, fmt.Errorf("list pods of %s: %w", statefulSet, err)
	}
	for _, p := range pods.Items {
		switch {
		case !ownedByStatefulSet(&p, statefulSet):
		case p.DeletionTimestamp == nil:
			live = append(live, p)
		case p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning:
			terminating = append(terminating, p)
		}
	}
	return live, terminating, nil
}
