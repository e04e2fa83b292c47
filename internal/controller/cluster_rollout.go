package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// readRevisions notes the update revision of each StatefulSet the operator rolls itself, and
// whether a leader's data survives its pod's replacement (a volume and persistence).
func (r *RedisClusterReconciler) readRevisions(ctx context.Context, s *clusterScope) error {
	s.revisions = map[string]string{}
	for _, role := range []string{builder.RoleLeader, builder.RoleFollower} {
		var sts appsv1.StatefulSet
		name := builder.ClusterStatefulSetName(s.cr.Name, role)
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: name}, &sts); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return fmt.Errorf("get StatefulSet %s: %w", name, err)
		}
		if sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType && sts.Status.UpdateRevision != "" {
			s.revisions[name] = sts.Status.UpdateRevision
		}
		if role == builder.RoleLeader {
			s.durable = builder.ClusterPersistence(s.cr) && hasClaim(&sts, name)
		}
	}
	return nil
}

func hasClaim(sts *appsv1.StatefulSet, name string) bool {
	for _, c := range sts.Spec.VolumeClaimTemplates {
		if c.Name == name {
			return true
		}
	}
	return false
}

// replacementKey is the wait clock (Memory.waits) started when the rolling update deletes a
// pod: the replica it was is missing by plan until its replacement has synced.
const replacementKey = "rolling-update-replacement"

// replacementGrace bounds how long a pod the rolling update deleted counts as missing by plan:
// a replacement that does not run by then is the outage it looks like.
const replacementGrace = 2 * time.Minute

// handOverSettle is how long a master the rolling update handed over keeps running, as a
// replica, before its pod is replaced. Clients that still route its slots to it are answered
// MOVED meanwhile, and their slot maps catch up: a client whose map names a pod already gone
// waits out its dial timeout on every write of those slots (go-redis reloads its map on MOVED,
// not on a failed dial; its default dial timeout is 5 s), which the e2e rolling update saw as
// pauses of 2 and 6 s in the shards whose old master went within half a second of the
// hand-over.
const handOverSettle = 5 * time.Second

// handOverKey is the wait clock started when the rolling update hands pod's shard over.
func handOverKey(pod string) string { return "rolling-update-hand-over/" + pod }

// handOverSettling is how much longer the pod, handed over by the rolling update, keeps
// running before its replacement; 0 when it may go.
func (s *clusterScope) handOverSettling(pod string, now time.Time) time.Duration {
	since, ok := s.memory.waits.StartedAt(s.cr.UID, handOverKey(pod))
	if !ok {
		return 0
	}
	return max(0, handOverSettle-now.Sub(since))
}

// masterPodOf is the pod of the master that member replicates, "" when none is known.
func masterPodOf(members []clusterplan.Member, member *clusterplan.Member) string {
	if member == nil {
		return ""
	}
	me, ok := myselfOf(member)
	if !ok || !me.IsReplica() {
		return ""
	}
	for i := range members {
		if node, ok := myselfOf(&members[i]); ok && node.ID == me.MasterID {
			return members[i].Pod
		}
	}
	return ""
}

// rollingUpdateOn reports whether the operator is replacing pods for a new template: some pod
// runs an old revision, or one was deleted for its replacement within replacementGrace and
// the cluster has not been Ready since (Ready stops that clock). The
// StatefulSet's own revisions cannot say it: the last pod's replacement leaves no old pod, and
// before Kubernetes 1.3x an OnDelete set's current revision never moved on.
func (s *clusterScope) rollingUpdateOn(now time.Time) bool {
	for _, pods := range [][]corev1.Pod{s.leaders, s.followers} {
		for i := range pods {
			if s.outdated(&pods[i]) {
				return true
			}
		}
	}
	deleted, ok := s.memory.waits.StartedAt(s.cr.UID, replacementKey)
	return ok && now.Sub(deleted) < replacementGrace
}

// outdated reports whether the pod runs an old revision of a StatefulSet the operator rolls.
func (s *clusterScope) outdated(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if revision, ok := s.revisions[ref.Name]; ok && ref.Kind == "StatefulSet" {
			return pod.Labels[appsv1.ControllerRevisionHashLabelKey] != revision
		}
	}
	return false
}

// rollPods replaces, one at a time on a Ready cluster, the pods that run an old revision:
// replicas first, then each master once a replica in sync has taken its shard over with
// CLUSTER FAILOVER (which loses no acknowledged write). The replaced leader pod comes back as a
// replica and takes its shard back in the topology phase. A master without a replica is
// replaced only when its data survives on a volume.
func (r *RedisClusterReconciler) rollPods(ctx context.Context, s *clusterScope) (bool, error) {
	if len(s.revisions) == 0 {
		return false, nil
	}
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr))}
	action := clusterplan.Roll(design, s.members, s.durable)
	if action == (clusterplan.RollAction{}) {
		return false, nil
	}
	progress := func(message string) { s.Conditions.Progressing(status.ReasonRollingUpdate, "rolling update: "+message) }
	switch {
	case action.Delete != "":
		pod, _ := s.pod(func(p *corev1.Pod) bool { return p.Name == action.Delete }).(*corev1.Pod)
		if pod == nil {
			return false, fmt.Errorf("rolling update names unknown pod %s", action.Delete)
		}
		if wait := s.handOverSettling(action.Delete, time.Now()); wait > 0 {
			why := fmt.Sprintf("clients follow the hand-over of %s's shard before it is replaced", action.Delete)
			progress(why)
			s.Requeue(ctx, wait, why)
			return true, nil
		}
		s.memory.waits.Stopped(s.cr.UID, handOverKey(action.Delete))
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil // a cache that lags behind an earlier delete; its events bring us back
			}
			return false, fmt.Errorf("delete pod %s for the rolling update: %w", pod.Name, err)
		}
		s.memory.waits.Stopped(s.cr.UID, replacementKey) // its clock runs from this deletion
		s.memory.waits.Started(s.cr.UID, replacementKey, time.Now())
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, "RollingUpdate", "Delete", "replacing pod %s with the StatefulSet's current revision", pod.Name)
		progress("replacing " + pod.Name)
		return true, nil // its pod events bring us back
	case action.Failover != "":
		member := memberByPod(s.members, action.Failover)
		pod := s.pod(func(p *corev1.Pod) bool { return p.Name == action.Failover })
		wait, err := r.askFailover(ctx, s, s.members, member, redis.FailoverDefault)
		if err != nil {
			r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, "ClusterFailoverFailed", "Failover", "%s could not take its master's shard over for the rolling update: %v", action.Failover, err)
			return false, fmt.Errorf("CLUSTER FAILOVER on %s: %w", action.Failover, err)
		}
		if wait != "" {
			progress(wait)
			s.Requeue(ctx, whileConverging, wait)
			return true, nil
		}
		if master := masterPodOf(s.members, member); master != "" {
			s.memory.waits.Stopped(s.cr.UID, handOverKey(master)) // its clock runs from this hand-over
			s.memory.waits.Started(s.cr.UID, handOverKey(master), time.Now())
		}
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, "ClusterFailover", "Failover", "%s takes its master's shard over so that the master can be replaced", action.Failover)
		progress(action.Failover + " takes its master's shard over")
		s.Requeue(ctx, afterRedisCommands, "waiting for CLUSTER FAILOVER to swap the roles")
		return true, nil
	case action.Wait != "":
		progress(action.Wait)
		s.Requeue(ctx, whileConverging, action.Wait)
		return true, nil
	}
	if !degradedWith(s, action.Problem) {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, "RollingUpdateRefused", "Delete", "%s", action.Problem)
	}
	s.Conditions.Degraded(status.ReasonRollingUpdate, action.Problem)
	return true, nil // a change of the spec or a pod brings us back
}
