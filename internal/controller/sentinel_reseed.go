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
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
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

// sentinelViewOf asks one sentinel where it monitors group's master and, when that is not
// masterHost, which replicas it knows (what it could still learn from). canonical puts the
// master's host in the form masterHost has: a sentinel may name the pod by IP or DNS name.
func sentinelViewOf(ctx context.Context, c sentinelWatcher, pod, group, masterHost string, canonical func(string) string) (replicationplan.SentinelView, error) {
	view := replicationplan.SentinelView{Pod: pod}
	host, _, known, err := c.SentinelMasterAddr(ctx, group)
	if err != nil || !known {
		return view, err
	}
	host = canonical(host)
	view.Master = host
	if host == masterHost {
		return view, nil
	}
	view.Replicas, err = c.SentinelReplicaHosts(ctx, group)
	return view, err
}

// configClaim names the PersistentVolumeClaim a sentinel pod mounts, "" for none. A sentinel
// rewrites its config where it runs and the init script copies the seed only into an empty
// volume, so a pod started again on a claim would monitor the same gone address.
func configClaim(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// sentinelReseed restarts a blind sentinel (replicationplan.Reseed) of either kind that runs
// sentinels: a RedisSentinel's and a RedisReplication's embedded ones (spec.sentinel). Both run
// them as a StatefulSet of their own (<name>-sentinel, <name>-s) whose /data is an emptyDir:
// deleting a sentinel pod restarts that sentinel alone, never a Redis pod, so the replication
// loses neither data nor its master, and the new pod starts from the seed, which names the
// current master. No kind puts a sentinel's config on a claim; a pod that mounts one anyway is
// left alone and reported (configClaim).
type sentinelReseed struct {
	c     client.Client
	rec   recorder.EventRecorder
	waits *status.Clocks
}

// reseedOutcome says what sentinelReseed.restart found and did: blind is the pod of the
// sentinel that can no longer learn the master ("" when none), restarted whether its pod was
// deleted now, held why it was not (its grace, a sentinel pod already terminating: one at a
// time, or a config on a claim).
type reseedOutcome struct {
	blind, held string
	restarted   bool
}

// restart deletes the pod of the sentinel that can no longer learn the master once it has
// been so for sentinelReseedGrace, so that its StatefulSet starts it again from the seed.
// owner is the resource whose sentinels these are (its events, its clocks); sentinels are its
// sentinel pods, views what each said, monitored the pods of the replication they watch and
// masterHost the current master's host.
func (r sentinelReseed) restart(ctx context.Context, owner client.Object, views []replicationplan.SentinelView,
	sentinels, monitored []corev1.Pod, masterHost string) (reseedOutcome, error) {
	blind := replicationplan.Reseed(views, masterHost, livePodHost(monitored))
	for _, v := range views {
		if v.Pod != blind {
			r.waits.Stopped(owner.GetUID(), reseedKey(v.Pod))
		}
	}
	out := reseedOutcome{blind: blind}
	if blind == "" {
		return out, nil
	}
	now := time.Now()
	if now.Sub(r.waits.Started(owner.GetUID(), reseedKey(blind), now)) < sentinelReseedGrace {
		// No countdown in the words: they go into the status, written only when it changes.
		out.held = fmt.Sprintf("its pod starts again from the seed once it has been so for %s", sentinelReseedGrace)
		return out, nil
	}
	if slices.ContainsFunc(sentinels, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil }) {
		out.held = "another sentinel pod is terminating: one at a time"
		return out, nil
	}
	i := slices.IndexFunc(sentinels, func(p corev1.Pod) bool { return p.Name == blind })
	if i < 0 {
		out.held = "its pod is gone"
		return out, nil
	}
	pod := &sentinels[i]
	if claim := configClaim(pod); claim != "" {
		out.held = fmt.Sprintf("its config lives on claim %s, which a new pod would start from: delete the claim and the pod by hand", claim)
		log.FromContext(ctx).Info("not restarting a blind sentinel that keeps its config on a claim", "pod", blind, "claim", claim)
		return out, nil
	}
	var monitoredHost string
	for _, v := range views {
		if v.Pod == blind {
			monitoredHost = v.Master
		}
	}
	if err := r.c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return out, fmt.Errorf("delete blind sentinel pod %s: %w", blind, err)
	}
	r.waits.Stopped(owner.GetUID(), reseedKey(blind))
	out.restarted = true
	log.FromContext(ctx).Info("restarting a sentinel that cannot learn the master", "pod", blind, "monitors", monitoredHost, "master", masterHost)
	r.rec.Eventf(owner, pod, corev1.EventTypeWarning, ReasonSentinelReseeded, "Restart",
		"sentinel %s monitors %s, where no pod runs, and knows no replica that runs: it can never hear where the master went; its pod starts again from the seed, which names the master at %s",
		blind, monitoredHost, masterHost)
	return out, nil
}
