package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// rollPods replaces the pods of an OnDelete StatefulSet that run an old revision, one at a
// time, in the order and under the conditions replicationplan.Roll decides: replicas first,
// the master last once FAILOVER TO has handed its role to an updated replica; with sentinels
// once they have failed it over when asked (handOverThroughSentinels), or, when none can be
// asked, the old master is simply replaced and they fail over, as they would for any loss.
func (r *RedisReplicationReconciler) rollPods(ctx context.Context, s *replicationScope) (bool, error) {
	var sts appsv1.StatefulSet
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: s.cr.Name}, &sts); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	revision := sts.Status.UpdateRevision
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || revision == "" {
		return false, nil
	}
	for i := range s.members {
		pod, _ := s.podNamed(s.members[i].Pod).(*corev1.Pod)
		s.members[i].Outdated = pod != nil && pod.Labels[appsv1.ControllerRevisionHashLabelKey] != revision
	}
	action := replicationplan.Roll(s.members, int(*s.cr.Spec.Size), s.plan.Master, s.sentinels)
	why := "for the rolling update to revision " + revision
	switch {
	case action.HandOverTo != "" && action.ThroughSentinels:
		asked, err := r.handOverThroughSentinels(ctx, s, s.plan.Master, why)
		if asked || err != nil {
			return true, err
		}
		log.FromContext(ctx).Info("no sentinel can be asked to fail the master over: its pod is replaced and they fail over by themselves", "master", s.plan.Master)
		action = replicationplan.RollAction{Delete: s.plan.Master}
	case action.HandOverTo != "":
		return true, r.handOver(ctx, s, s.plan.Master, action.HandOverTo, status.ReasonRollingUpdate, why)
	case action.Wait != "":
		log.FromContext(ctx).V(1).Info("rolling update waits", "reason", action.Wait)
		return false, nil // health reports what is missing; pod events bring us back
	case action.Delete == "":
		return false, nil // nothing outdated
	}
	victim, _ := s.podNamed(action.Delete).(*corev1.Pod)
	if victim == nil {
		return false, fmt.Errorf("rolling update names unknown pod %s", action.Delete)
	}
	if err := r.Client.Delete(ctx, victim, client.Preconditions{UID: &victim.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil // a cache that lags behind an earlier delete; its events bring us back
		}
		return false, fmt.Errorf("delete pod %s for the rolling update: %w", victim.Name, err)
	}
	r.Recorder.Eventf(s.cr, victim, corev1.EventTypeNormal, "RollingUpdate", "Delete", "replacing pod %s (%s) with revision %s", victim.Name, roleOf(victim, s.plan.Master), revision)
	r.notReady(s, status.ReasonRollingUpdate, fmt.Sprintf("rolling update to revision %s: replacing %s, %d pod(s) left", revision, victim.Name, action.Left))
	return true, nil // the pod's events bring us back
}

func roleOf(pod *corev1.Pod, master string) string {
	if pod.Name == master {
		return "the master, which the sentinels fail over"
	}
	return "a replica"
}
