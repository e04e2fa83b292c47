package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// ReasonSentinelReseeded is the event of a sentinel pod started again from the current seed
// because it could no longer learn where the master is.
const ReasonSentinelReseeded = "SentinelReseeded"

// sentinelReseedGrace is how long a sentinel must have been blind (replicationplan.Reseed)
// before its pod goes: it rides out a view of the pods that lags behind the sentinels.
const sentinelReseedGrace = 10 * time.Second

// reseedKey is the clock of a blind sentinel, by pod.
func reseedKey(pod string) string { return "reseed/" + pod }

// livePodHost tells whether one of pods runs at host: its IP, its name, or a DNS name of it
// (the sentinels' resolve-hostnames mode names pods).
func livePodHost(pods []corev1.Pod) func(string) bool {
	return func(host string) bool {
		return slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			return host != "" && (host == p.Status.PodIP || host == p.Name || strings.HasPrefix(host, p.Name+"."))
		})
	}
}

// reseedBlindSentinel deletes the pod of the sentinel that can no longer learn the master
// (see replicationplan.Reseed) once it has been so for sentinelReseedGrace, so that the
// StatefulSet starts it again from the seed, which names the current master; sentinels keep
// their own config only on their pod's volume. It reports whether it deleted one. A sentinel
// pod already terminating holds it: one at a time.
func (r *RedisSentinelReconciler) reseedBlindSentinel(ctx context.Context, s *sentinelScope, views []replicationplan.SentinelView, monitored []corev1.Pod) (bool, error) {
	blind := replicationplan.Reseed(views, s.masterHost, livePodHost(monitored))
	for _, v := range views {
		if v.Pod != blind {
			s.memory.waits.stopped(s.cr.UID, reseedKey(v.Pod))
		}
	}
	if blind == "" {
		return false, nil
	}
	now := time.Now()
	if now.Sub(s.memory.waits.started(s.cr.UID, reseedKey(blind), now)) < sentinelReseedGrace {
		return false, nil
	}
	if slices.ContainsFunc(s.pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil }) {
		return false, nil
	}
	i := slices.IndexFunc(s.pods, func(p corev1.Pod) bool { return p.Name == blind })
	if i < 0 {
		return false, nil
	}
	pod := &s.pods[i]
	var monitoredHost string
	for _, v := range views {
		if v.Pod == blind {
			monitoredHost = v.Master
		}
	}
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete blind sentinel pod %s: %w", blind, err)
	}
	s.memory.waits.stopped(s.cr.UID, reseedKey(blind))
	log.FromContext(ctx).Info("restarting a sentinel that cannot learn the master", "pod", blind, "monitors", monitoredHost, "master", s.masterHost)
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, ReasonSentinelReseeded, "Restart",
		"sentinel %s monitors %s, where no pod runs, and knows no replica that runs: it can never hear where the master went; its pod starts again from the seed, which names the master at %s",
		blind, monitoredHost, s.masterHost)
	return true, nil
}
