package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// ReasonHandMadeFailoverKept is the reason of a Ready cluster whose shards are not all
// mastered by their leader pods because a user failed some over by hand, and of the event that
// tells it: the operator keeps those masters (see keepHandMadeMasters).
const ReasonHandMadeFailoverKept = "HandMadeFailoverKept"

// askedSlack widens the window in which an ask of the operator's counts as the cause of a
// failover: an election it asked in the reconcile before the last sighting may end after it.
const askedSlack = 2 * manualFailoverTimeout

// sightingMemory is, per cluster, the last sighting of its shards' masters and the
// annotation value the operator last wrote, until the cache hands it back.
type sightingMemory struct {
	mu   sync.Mutex
	last map[types.UID]lastSighting
	// since is when this operator started: a failover that an operator before it asked may
	// still end after its first sightings, and is not told from a hand-made one until
	// Redis's manual failover timeout has passed since.
	since time.Time
}

type lastSighting struct {
	sighting clusterplan.Sighting
	at       time.Time
	// written is the value of AnnotationHandMadeMasters last patched, nil once read back: a
	// cache that lags behind the patch would otherwise hide a master just recorded.
	written *string
}

func (m *sightingMemory) get(uid types.UID) (lastSighting, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.last[uid]
	return l, ok
}

func (m *sightingMemory) put(uid types.UID, l lastSighting) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last[uid] = l
}

func (m *sightingMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, uid)
}

// keepHandMadeMasters returns the follower pods that keep the shards a CLUSTER FAILOVER made
// by hand gave them, recorded in AnnotationHandMadeMasters so that an operator restarted
// finds them there. It compares what this reconcile observed with the last sighting (see
// clusterplan.HandMadeFailovers for how a hand-made failover is told from one a failure
// caused), adds those it finds, and drops the pods that are master no more. The annotation is
// written before the sighting is remembered: a write that fails leaves the next reconcile the
// same comparison to make.
func (r *RedisClusterReconciler) keepHandMadeMasters(ctx context.Context, s *clusterScope) ([]string, error) {
	now := clusterplan.Sight(s.members, failMessages(s.infos))
	at := time.Now()
	last, seen := s.memory.sightings.get(s.cr.UID)
	recorded := s.cr.GetAnnotations()[builder.AnnotationHandMadeMasters]
	if last.written != nil {
		if *last.written == recorded {
			last.written = nil
		} else {
			recorded = *last.written
		}
	}
	kept := slices.DeleteFunc(splitPods(recorded), func(pod string) bool { return !mayStillMaster(s.members, pod) })
	var found []clusterplan.HandMade
	if seen && !last.at.Before(s.memory.sightings.since.Add(askedSlack)) {
		found = clusterplan.HandMadeFailovers(last.sighting, now, func(pod string) bool {
			me, ok := myselfOf(memberByPod(s.members, pod))
			return !ok || r.failovers.askedSince(me.ID, last.at.Add(-askedSlack))
		})
	}
	for _, h := range found {
		if !slices.Contains(kept, h.Master) {
			kept = append(kept, h.Master)
		}
	}
	slices.Sort(kept)
	if value := strings.Join(kept, ","); value != recorded {
		if err := r.annotateHandMade(ctx, s.cr, value); err != nil {
			return nil, err
		}
		last.written = &value
	}
	for _, h := range found {
		log.FromContext(ctx).Info("hand-made failover kept", "master", h.Master, "before", h.Before, "leader", h.Leader)
		pod := s.pod(func(p *corev1.Pod) bool { return p.Name == h.Master })
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, ReasonHandMadeFailoverKept, "Failover",
			"%s took the shard of %s over by a CLUSTER FAILOVER nobody flagged %s failing before: the operator keeps it master; remove it from the annotation %s to let %s take the shard back",
			h.Master, h.Before, h.Before, builder.AnnotationHandMadeMasters, h.Leader)
	}
	last.sighting, last.at = now, at
	s.memory.sightings.put(s.cr.UID, last)
	return kept, nil
}

// mayStillMaster: pod answers as a master serving slots, or does not answer now (a master
// kept stays kept through a blip of the operator's view of it). A pod gone, or that answers
// as a replica or an empty master, is master no more.
func mayStillMaster(members []clusterplan.Member, pod string) bool {
	m := memberByPod(members, pod)
	if m == nil {
		return false
	}
	return m.View == nil || clusterplan.IsServingMaster(members, pod)
}

// failMessages are the FAIL messages each pod's node sent and received, as its CLUSTER INFO
// counts them (Redis lists only the message types it counted, so a missing one is none); a
// count that cannot be read leaves its pod out, as unknown.
func failMessages(infos map[string]redis.ClusterInfo) map[string]uint64 {
	out := map[string]uint64{}
	for pod, info := range infos {
		total, ok := uint64(0), true
		for _, key := range []string{"cluster_stats_messages_fail_sent", "cluster_stats_messages_fail_received"} {
			v, present := info.Other[key]
			if !present {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				ok = false
			}
			total += n
		}
		if ok {
			out[pod] = total
		}
	}
	return out
}

func splitPods(value string) []string {
	var out []string
	for _, p := range strings.Split(value, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// annotateHandMade writes AnnotationHandMadeMasters on a copy of the resource (removed when
// value is empty), leaving the reconciled object, whose status is written at the end, as it is.
func (r *RedisClusterReconciler) annotateHandMade(ctx context.Context, cr *v1beta2.RedisCluster, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{builder.AnnotationHandMadeMasters: v}}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, cr.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("record the hand-made masters in %s: %w", builder.AnnotationHandMadeMasters, err)
	}
	return nil
}

// handMadeSummary tells a Ready cluster's kept hand-made masters.
func handMadeSummary(kept []string) string {
	return fmt.Sprintf("%s master their shards after a CLUSTER FAILOVER made by hand, which the operator keeps: the topology differs from the designed one (leader pods master); remove a pod from the annotation %s to let its leader pod take the shard back",
		strings.Join(kept, ", "), builder.AnnotationHandMadeMasters)
}
