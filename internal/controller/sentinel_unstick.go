package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonSentinelFailoverUnstuck is the event of a failover asked of a sentinel that held the
// master down but could promote no replica by its own rule (replicationplan.StuckFailover).
const ReasonSentinelFailoverUnstuck = "SentinelFailoverUnstuck"

const (
	// unstickRetry is how long after one failover asked of a group's sentinels the next may be:
	// the sentinel's own failover runs (or aborts) within it.
	unstickRetry = 20 * time.Second
	// unstickSelectWait bounds the wait for the asked sentinel to select its replica, before
	// its down-after period is set back.
	unstickSelectWait = 5 * time.Second
)

// sentinelPeer is one running sentinel pod and a client of it.
type sentinelPeer struct {
	pod    string
	client sentinelPeerNode
}

// sentinelPeerNode is a sentinel read (failoverViewOf), asked to fail over, and whose
// down-after period is raised for that failover and set back (sentinelUnstick), or asked to
// fail over for a hand-over (handOverThroughSentinels).
type sentinelPeerNode interface {
	sentinelStateReader
	sentinelFailoverAsker
	downAfterSetter
}

// downAfterSetter is a sentinel whose down-after period for a group is set.
type downAfterSetter interface {
	SentinelSetDownAfter(ctx context.Context, group string, period time.Duration) error
}

// sentinelUnstick asks a failover of sentinels that hold a replication's master down and can
// never promote a replica by themselves (replicationplan.StuckFailover): one sentinel, with its
// down-after period raised for the moment so that the replicas lost with the master qualify,
// then set back. The sentinel picks the replica and the others follow, as in any failover.
type sentinelUnstick struct {
	rec   recorder.EventRecorder
	waits *status.Clocks
}

// unstick returns what it found ("" when the sentinels can fail over by themselves or do).
// A sentinel that does not answer is left out of the views.
func (u sentinelUnstick) unstick(ctx context.Context, owner client.Object, group string, peers []sentinelPeer) (string, error) {
	views := make([]replicationplan.SentinelFailoverView, 0, len(peers))
	for _, p := range peers {
		view, err := failoverViewOf(ctx, p.client, p.pod, group)
		if err != nil {
			log.FromContext(ctx).V(1).Info("a sentinel does not say how it holds the master", "pod", p.pod, "error", err.Error())
			continue
		}
		views = append(views, view)
	}
	plan, ok := replicationplan.StuckFailover(views)
	key := "unstick/" + group
	if !ok {
		return "", nil
	}
	now := time.Now()
	if last, asked := u.waits.StartedAt(owner.GetUID(), key); asked && now.Sub(last) < unstickRetry {
		return fmt.Sprintf("the sentinels hold the master down and could promote none of %s by themselves; sentinel %s was asked to fail over",
			strings.Join(plan.Replicas, ", "), plan.Pod), nil
	}
	u.waits.Stopped(owner.GetUID(), key)
	u.waits.Started(owner.GetUID(), key, now)
	i := slices.IndexFunc(peers, func(p sentinelPeer) bool { return p.pod == plan.Pod })
	view := views[slices.IndexFunc(views, func(v replicationplan.SentinelFailoverView) bool { return v.Pod == plan.Pod })]
	c := peers[i].client
	if err := c.SentinelSetDownAfter(ctx, group, plan.DownAfter); err != nil {
		return "", fmt.Errorf("raise sentinel %s's down-after period for a failover: %w", plan.Pod, err)
	}
	// Whatever happens next, the sentinel gets its period back.
	defer u.restore(context.WithoutCancel(ctx), owner, c, plan.Pod, group, view.DownAfter)
	if err := c.SentinelFailover(ctx, group); err != nil {
		return "", fmt.Errorf("ask sentinel %s to fail %s over: %w", plan.Pod, group, err)
	}
	u.rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonSentinelFailoverUnstuck, "SentinelFailover",
		"the sentinels held the master down and could promote no replica: every replica's link had been down longer than 10 × down-after (%s) plus the time they held the master down; asked sentinel %s to fail over with down-after %s until it selects one of %s",
		view.DownAfter, plan.Pod, plan.DownAfter, strings.Join(plan.Replicas, ", "))
	waitSelected(ctx, c, group)
	return fmt.Sprintf("the sentinels held the master down and could promote none of %s by themselves; sentinel %s was asked to fail over",
		strings.Join(plan.Replicas, ", "), plan.Pod), nil
}

// restore sets the sentinel's down-after period back; a failure is an event naming the period
// to set by hand, as nothing else would.
func (u sentinelUnstick) restore(ctx context.Context, owner client.Object, c downAfterSetter, pod, group string, period time.Duration) {
	if err := c.SentinelSetDownAfter(ctx, group, period); err != nil {
		u.rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonSentinelFailoverUnstuck, "SentinelSet",
			"could not set sentinel %s's down-after period back to %s: %v (SENTINEL SET %s down-after-milliseconds %d)", pod, period, err, group, period.Milliseconds())
	}
}

// waitSelected waits, within unstickSelectWait, until the sentinel has selected the replica
// to promote or its failover ended: only then may its down-after period go back.
func waitSelected(ctx context.Context, c sentinelMasterReader, group string) {
	ctx, cancel := context.WithTimeout(ctx, unstickSelectWait)
	defer cancel()
	for {
		fields, err := c.SentinelMaster(ctx, group)
		if err == nil {
			switch fields["failover-state"] {
			case "wait_start", "select_slave":
			default:
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sentinelMasterReader is a sentinel asked the state it keeps of a group's master (its
// address, flags, failover state).
type sentinelMasterReader interface {
	SentinelMaster(ctx context.Context, group string) (map[string]string, error)
}

// sentinelStateReader is a sentinel asked the state it keeps of a group's master and replicas.
type sentinelStateReader interface {
	sentinelMasterReader
	SentinelReplicas(ctx context.Context, group string) ([]map[string]string, error)
}

// failoverViewOf reads what one sentinel says of group's master and, when it holds the master
// objectively down, of its replicas.
func failoverViewOf(ctx context.Context, c sentinelStateReader, pod, group string) (replicationplan.SentinelFailoverView, error) {
	view := replicationplan.SentinelFailoverView{Pod: pod}
	master, err := c.SentinelMaster(ctx, group)
	if err != nil {
		return view, err
	}
	flags := strings.Split(master["flags"], ",")
	view.ObjectivelyDown = slices.Contains(flags, "o_down")
	view.FailingOver = slices.Contains(flags, "failover_in_progress")
	view.DownFor = milliseconds(master["s-down-time"])
	view.DownAfter = milliseconds(master["down-after-milliseconds"])
	if !view.ObjectivelyDown || view.FailingOver {
		return view, nil
	}
	replicas, err := c.SentinelReplicas(ctx, group)
	if err != nil {
		return view, err
	}
	for _, r := range replicas {
		flags := strings.Split(r["flags"], ",")
		usable := !slices.ContainsFunc(flags, func(f string) bool { return f == "s_down" || f == "o_down" || f == "disconnected" }) &&
			r["slave-priority"] != "0"
		view.Replicas = append(view.Replicas, replicationplan.SentinelReplicaView{
			Host: r["ip"], Usable: usable, LinkDownFor: milliseconds(r["master-link-down-time"])})
	}
	return view, nil
}

// milliseconds reads a sentinel's millisecond field; absent or unreadable is 0.
func milliseconds(field string) time.Duration {
	ms, err := strconv.ParseInt(field, 10, 64)
	if err != nil || ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
