package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/writecheck"
)

// The persistent cluster scaled out to four shards and back to three while a client writes:
// the new leader gets a fair share of the slots with their keys, the departing one hands all
// of its slots over before its pod goes, the removed pods' volumes are deleted by the
// StatefulSet controller, and no acknowledged write is lost.
func TestClusterScalesOutAndInWithoutLosingWrites(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, persistentCluster)
	c.waitReady(start)
	c.writeKeys("s", 1000)

	checker := c.startWriting("scale")

	since := faultTime()
	statuses := c.recordStatus()
	c.resize(4)
	c.waitReady(since)
	c.checkScaleStatus("scale-out", statuses())
	c.assertShapeOf(4, 4)
	if got := c.slotsPerMaster(); fmt.Sprint(got) != "[4096 4096 4096 4096]" {
		t.Errorf("slots per master after the scale-out: %v", got)
	}

	since = faultTime()
	statuses = c.recordStatus()
	c.resize(3)
	c.waitReady(since)
	c.checkScaleStatus("scale-in", statuses())
	c.assertShapeOf(3, 3)
	if got := c.slotsPerMaster(); fmt.Sprint(got) != "[5461 5461 5462]" {
		t.Errorf("slots per master after the scale-in: %v", got)
	}
	sb.WaitFor(t, c.ns, "the removed pods' volumes deleted", time.Minute, func(ctx context.Context) (bool, string, error) {
		var pvcs corev1.PersistentVolumeClaimList
		if err := sb.Client.List(ctx, &pvcs, client.InNamespace(c.ns)); err != nil {
			return false, "", err
		}
		var left []string
		for _, p := range pvcs.Items {
			if strings.HasSuffix(p.Name, "-3") && p.DeletionTimestamp == nil {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("still there: %v", left), nil
	})

	checker.StopAndRequire(c.ctx, t, c.client(), "while scaling")
	c.readKeys("s", 1000)

	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	migrations := 0
	for _, e := range events.Items {
		if e.Reason == "ClusterMigrate" {
			migrations++
		}
	}
	if migrations == 0 {
		t.Error("no ClusterMigrate event recorded the slot moves")
	}
}

func (c *cluster) resize(size int32) {
	c.t.Helper()
	cr := c.get()
	cr.Spec.Size = &size
	if err := sb.Client.Update(c.ctx, cr); err != nil {
		c.t.Fatal(err)
	}
}

// slotsPerMaster is the sorted slot counts of the masters that serve slots, as CLUSTER NODES on
// leader-0 says.
func (c *cluster) slotsPerMaster() []int {
	c.t.Helper()
	text, err := c.redis(c.pod(c.name + "-leader-0")).ClusterNodes(c.ctx).Result()
	if err != nil {
		c.t.Fatal(err)
	}
	topo, err := redis.ParseClusterNodes(text)
	if err != nil {
		c.t.Fatal(err)
	}
	var counts []int
	for _, n := range topo.Nodes {
		// (A replica that joined a moment ago may still be a slotless master to leader-0.)
		if n.IsMaster() && n.SlotCount() > 0 {
			counts = append(counts, n.SlotCount())
		}
	}
	sort.Ints(counts)
	return counts
}

// The operator crashes in the middle of a scale-out's slot moves; the restarted operator
// finishes them (a slot left half-moved goes on to its destination) and no acknowledged
// write is lost.
func TestOperatorKilledWhileReshardingIsFinished(t *testing.T) {
	start := time.Now()
	c := newCluster(t, strings.Replace(sample(t, "redis_v1beta2_rediscluster_minimal.yaml"), "name: redis-cluster", "name: resharded", 1))
	c.waitReady(start)
	c.writeKeys("k", 1000)
	// Enough data that the moves take a few seconds, so the crash lands among them.
	bulk := c.client()
	const bulkKeys = 300_000
	for from := 0; from < bulkKeys; from += 5000 {
		pipe := bulk.Pipeline()
		for i := from; i < from+5000; i++ {
			pipe.Set(c.ctx, fmt.Sprintf("bulk:%d", i), i, 0)
		}
		if _, err := pipe.Exec(c.ctx); err != nil {
			t.Fatal(err)
		}
	}
	checker := c.startWriting("crash")

	since := faultTime()
	c.resize(4)
	// Slots moving: the new leader serves some of its share, not all (the moves are reported
	// only once a reconcile's share of them is done, too late to crash amid them).
	var newLeader *goredis.Client
	sb.WaitFor(t, c.ns, "slots moving to resharded-leader-3", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if newLeader == nil {
			p := &corev1.Pod{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "resharded-leader-3"}, p); err != nil || p.Status.PodIP == "" {
				return false, "no resharded-leader-3 yet", nil
			}
			newLeader = sb.Redis(t, p)
		}
		text, err := newLeader.ClusterNodes(ctx).Result()
		if err != nil {
			return false, err.Error(), nil
		}
		topo, err := redis.ParseClusterNodes(text)
		if err != nil {
			return false, "", err
		}
		me, _ := topo.Myself()
		return me.SlotCount() > 0 && me.SlotCount() < 4096, fmt.Sprintf("resharded-leader-3 serves %d slots", me.SlotCount()), nil
	})
	var pods corev1.PodList
	if err := sb.Client.List(c.ctx, &pods, client.InNamespace("redis-operator-system")); err != nil || len(pods.Items) == 0 {
		t.Fatalf("operator pod: %v (%d pods)", err, len(pods.Items))
	}
	if err := sb.Fault.CrashContainer(c.ctx, "redis-operator-system", pods.Items[0].Name, "manager"); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	c.waitReady(since)
	c.assertShapeOf(4, 4)
	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		t.Fatal(err)
	}
	movesAfter := 0
	for _, e := range events.Items {
		if e.Reason == "ClusterMigrate" && e.EventTime.After(crashed) {
			movesAfter++
		}
	}
	t.Logf("%d slot moves made by the restarted operator", movesAfter)
	if got := c.slotsPerMaster(); fmt.Sprint(got) != "[4096 4096 4096 4096]" {
		t.Errorf("slots per master after the scale-out: %v", got)
	}
	checker.StopAndRequire(c.ctx, t, c.client(), "across the operator's crash while resharding")
	c.readKeys("k", 1000)
	for from := 0; from < bulkKeys; from += 5000 {
		pipe := bulk.Pipeline()
		gets := make([]*goredis.StringCmd, 0, 5000)
		for i := from; i < from+5000; i++ {
			gets = append(gets, pipe.Get(c.ctx, fmt.Sprintf("bulk:%d", i)))
		}
		_, _ = pipe.Exec(c.ctx)
		for j, g := range gets {
			if v, err := g.Int(); err != nil || v != from+j {
				t.Fatalf("GET bulk:%d = %d, %v", from+j, v, err)
			}
		}
	}
}

// startWriting starts a write-loss checker on the cluster, stopped when the test ends: two
// writers per shard, so the report gives each shard's longest pause. Its client fails fast (one
// dial attempt, few redirects): a write to a node that is gone counts as failed and the writer
// goes on, where the default retries would hold it for a minute or more.
func (c *cluster) startWriting(prefix string) *writecheck.Checker {
	c.t.Helper()
	opts := c.clientOptions()
	opts.DialerRetries, opts.MaxRedirects = 1, 3
	checker, err := writecheck.Start(c.ctx, c.clientWith(opts), writecheck.Options{Prefix: prefix, Writers: 2, PerShard: true})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(checker.Stop)
	return checker
}

// handOverPause bounds the pause of any one shard's writes while the operator hands shards over
// (CLUSTER FAILOVER on an in-sync replica, measured at tens of milliseconds): generous for a
// loaded machine, well short of the minute a failed election costs.
const handOverPause = 5 * time.Second

// requireWrites stops the checker, requires every acknowledged write read back, and, with a
// bound, that no shard's writes paused longer.
func (c *cluster) requireWrites(checker *writecheck.Checker, what string, bound time.Duration) {
	c.t.Helper()
	report := checker.StopAndRequire(c.ctx, c.t, c.client(), what)
	if over := report.PausedLongerThan(bound); bound > 0 && len(over) > 0 {
		c.t.Errorf("writes paused longer than %s %s: %s", bound, what, strings.Join(over, "; "))
	}
	for _, s := range report.Shards {
		if s.LongestPause >= time.Second {
			c.logEventsAround(s.Name, s.LongestPauseEnded.Add(-s.LongestPause), s.LongestPauseEnded)
		}
	}
}

// logEventsAround logs the namespace's events from a few seconds before a shard's pause to
// its end, so that a long pause can be laid beside what the operator did.
func (c *cluster) logEventsAround(shard string, from, to time.Time) {
	c.t.Helper()
	var events eventsv1.EventList
	if err := sb.Client.List(c.ctx, &events, client.InNamespace(c.ns)); err != nil {
		c.t.Logf("list the events around %s's pause: %v", shard, err)
		return
	}
	at := func(e eventsv1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.DeprecatedLastTimestamp.Time
	}
	sort.Slice(events.Items, func(i, j int) bool { return at(events.Items[i]).Before(at(events.Items[j])) })
	c.t.Logf("%s paused from %s to %s; the events from 5 s before:", shard, from.UTC().Format("15:04:05.000"), to.UTC().Format("15:04:05.000"))
	for _, e := range events.Items {
		if when := at(e); when.After(from.Add(-5*time.Second)) && !when.After(to.Add(time.Second)) {
			c.t.Logf("  %s %s %s %s", when.UTC().Format("15:04:05.000000"), e.Reason, e.Regarding.Name, e.Note)
		}
	}
}
