package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// ReasonTLSRestarted is the event of a sentinel pod deleted so that its replacement starts
// with the TLS Secret's current content: a sentinel cannot reload its TLS files in place.
const ReasonTLSRestarted = "TLSRestarted"

// ReasonSentinelsForgotten is the event of a sentinel told to forget sentinels that are gone
// (SENTINEL RESET), which it would otherwise count as voters forever.
const ReasonSentinelsForgotten = "SentinelsForgotten"

// sentinelRollPause is how soon the roll looks again while it waits for the sentinels to
// settle (a replacement to start, a reset sentinel to rediscover the others).
const sentinelRollPause = 5 * time.Second

// sentinelTLSRoll brings a renewed TLS Secret into a set of sentinels by replacing their pods
// one at a time: Redis in sentinel mode has no command that re-reads the TLS files (CONFIG is
// disabled, SENTINEL CONFIG SET does not know the tls-* settings). A pod is deleted only when
// every sentinel is ready and agrees on the master and the others can authorize a failover
// without it, so quorum holds throughout. A replacement starts with a new sentinel ID; the
// others would count the ID of the departed sentinel as a voter forever, so once they have
// found the newcomer, each in turn forgets the departed (SENTINEL RESET, then rediscovery).
// It reaches the sentinels through the seam (Dependencies.redisNode).
type sentinelTLSRoll struct {
	*Dependencies
}

// sentinelResetter is a sentinel told to forget the sentinels and replicas it knows of a group
// and to discover them anew: SENTINEL RESET.
type sentinelResetter interface {
	SentinelReset(ctx context.Context, group string) error
}

// sentinelRollChecker is a sentinel asked, before one of the set's pods goes, how it sees the
// master and whether the sentinels together could still authorize a failover.
type sentinelRollChecker interface {
	sentinelMasterReader
	quorumChecker
}

// sentinelSet is one set of sentinels as the roll sees it.
type sentinelSet struct {
	// statefulSet names the set.
	statefulSet string
	pods        []corev1.Pod
	// replicas is how many pods the StatefulSet should have.
	replicas int32
	// group is the monitored master group, "" when the sentinels monitor nothing.
	group string
	auth  redis.Auth
}

// roll replaces at most one sentinel pod (or resets one sentinel) per call; it reports whether
// it did, so that the caller stops and waits for the pod watch. Sentinels listen on
// builder.DefaultSentinelPort, whichever kind runs them.
func (r sentinelTLSRoll) roll(ctx context.Context, owner client.Object, settings *tlsSettings, set sentinelSet, requeue func(time.Duration, string)) (bool, error) {
	if settings == nil {
		return false, nil
	}
	leaf, err := settings.material.Leaf()
	if err != nil {
		return false, fmt.Errorf("TLS Secret certificate: %w", err)
	}
	runningBefore := settings.podsRunningBefore(set.statefulSet, set.pods)
	var stale []*corev1.Pod
	for i := range set.pods {
		pod := &set.pods[i]
		if pod.Annotations[TLSHashAnnotation] == settings.hash {
			continue
		}
		// A pod created since the roll first saw this content, or started after the operator
		// first saw it, mounted it when it started. (Start times have a second's precision:
		// a replacement started within that second is told apart by its UID.)
		startedAfter := pod.Status.StartTime != nil && pod.Status.StartTime.After(settings.firstSeen)
		if runningBefore[pod.UID] && !startedAfter {
			stale = append(stale, pod)
			continue
		}
		if !podReady(pod) {
			continue // its start brings the reconcile back
		}
		served, err := r.servedCertificate(ctx, podEndpoint(pod, builder.DefaultSentinelPort, set.auth).WithTLS(settings.config), 5*time.Second)
		if err != nil || !served.Equal(leaf) {
			requeue(sentinelRollPause, fmt.Sprintf("sentinel %s does not yet serve the TLS Secret's certificate", pod.Name))
			continue
		}
		if err := setPodAnnotation(ctx, r.Client, pod, TLSHashAnnotation, settings.hash); err != nil {
			return false, err
		}
	}
	state, err := r.settled(ctx, set, settings)
	if err != nil {
		return false, err
	}
	if state.reset != nil {
		// Every sentinel is up and agrees; this one still counts departed sentinels.
		var c sentinelResetter
		c, err := r.redisNode(podEndpoint(state.reset, builder.DefaultSentinelPort, set.auth).WithTLS(settings.config))
		if err != nil {
			return false, err
		}
		if err := c.SentinelReset(ctx, set.group); err != nil {
			return false, err
		}
		// Related to the pod: one series per pod for the event recorder, which would keep only
		// the first note of events about one resource that differ in their note alone.
		r.Recorder.Eventf(owner, state.reset, corev1.EventTypeNormal, ReasonSentinelsForgotten, "SentinelReset",
			"sentinel %s counted %s other sentinels where %d run: reset to forget the departed ones", state.reset.Name, state.known, len(set.pods)-1)
		requeue(sentinelRollPause, "a reset sentinel rediscovers the others")
		return true, nil
	}
	if len(stale) == 0 {
		return false, nil
	}
	if state.message != "" {
		requeue(sentinelRollPause, "sentinel pods wait to restart for the renewed TLS Secret: "+state.message)
		return false, nil
	}
	// The pod list may not show yet the last deletion: its pod must be back, a new one, ready.
	if last, ok := settings.lastRestarted(set.statefulSet); ok && !replacedAndReady(set.pods, last) {
		requeue(sentinelRollPause, "sentinel pod "+last.Name+" restarts for the renewed TLS Secret")
		return false, nil
	}
	pod := stale[0]
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete sentinel pod %s to load the renewed TLS Secret: %w", pod.Name, err)
	}
	settings.recordRestart(set.statefulSet, pod)
	log.FromContext(ctx).Info("sentinel pod deleted to load the renewed TLS Secret", "pod", pod.Name)
	r.Recorder.Eventf(owner, pod, corev1.EventTypeNormal, ReasonTLSRestarted, "RestartSentinel",
		"sentinel pod %s restarted to load the TLS Secret (certificate serial %s): sentinels cannot reload TLS files in place; %d left",
		pod.Name, leaf.SerialNumber.Text(16), len(stale)-1)
	requeue(sentinelRollPause, "a sentinel pod restarts for the renewed TLS Secret")
	return true, nil
}

// sentinelsState is what keeps a set of sentinels from being settled (message), or the
// sentinel that should forget departed sentinels.
type sentinelsState struct {
	message string
	// reset counts more other sentinels than run (known of them).
	reset *corev1.Pod
	known string
}

// settled checks that every sentinel of the set is ready and, when they monitor a master,
// agrees on it, sees it up with no failover under way, and knows every other sentinel; it
// names a sentinel that also counts departed ones. A set ready to lose a pod for a moment can
// also authorize a failover (SENTINEL CKQUORUM); that is not asked before a reset, since
// departed voters may be what makes it fail.
func (r sentinelTLSRoll) settled(ctx context.Context, set sentinelSet, settings *tlsSettings) (sentinelsState, error) {
	if ready := countReady(set.pods); len(set.pods) != int(set.replicas) || ready != set.replicas {
		return sentinelsState{message: fmt.Sprintf("%d of %d sentinel pods ready", ready, set.replicas)}, nil
	}
	if set.group == "" {
		return sentinelsState{}, nil
	}
	var master string
	var state sentinelsState
	var first sentinelRollChecker
	for i := range set.pods {
		pod := &set.pods[i]
		var c sentinelRollChecker
		c, err := r.redisNode(podEndpoint(pod, builder.DefaultSentinelPort, set.auth).WithTLS(settings.config))
		if err != nil {
			return sentinelsState{}, err
		}
		if first == nil {
			first = c
		}
		fields, err := c.SentinelMaster(ctx, set.group)
		if err != nil {
			return sentinelsState{message: fmt.Sprintf("sentinel %s: %v", pod.Name, err)}, nil
		}
		addr := net.JoinHostPort(fields["ip"], fields["port"])
		if master == "" {
			master = addr
		}
		if addr != master {
			return sentinelsState{message: fmt.Sprintf("sentinels disagree on the master: %s and %s", master, addr)}, nil
		}
		if flags := fields["flags"]; flags != "master" {
			return sentinelsState{message: fmt.Sprintf("sentinel %s sees the master as %q", pod.Name, flags)}, nil
		}
		others, err := strconv.Atoi(fields["num-other-sentinels"])
		if err != nil {
			return sentinelsState{}, fmt.Errorf("sentinel %s: num-other-sentinels %q: %w", pod.Name, fields["num-other-sentinels"], err)
		}
		switch {
		case others < len(set.pods)-1:
			return sentinelsState{message: fmt.Sprintf("sentinel %s knows %d of the %d other sentinels", pod.Name, others, len(set.pods)-1)}, nil
		case others > len(set.pods)-1 && state.reset == nil:
			state.reset, state.known = pod, fields["num-other-sentinels"]
		}
	}
	if state.reset != nil {
		return state, nil
	}
	// A sentinel that does not answer, or answers NOQUORUM, both mean: not now.
	if err := first.SentinelCkQuorum(ctx, set.group); err != nil {
		return sentinelsState{message: fmt.Sprintf("sentinels cannot authorize a failover: %v", err)}, nil
	}
	return sentinelsState{}, nil
}

// replacedAndReady tells whether the pod of that name runs again as a new pod, ready.
func replacedAndReady(pods []corev1.Pod, gone *corev1.Pod) bool {
	for i := range pods {
		if pods[i].Name == gone.Name {
			return pods[i].UID != gone.UID && podReady(&pods[i])
		}
	}
	return false
}
