// Package writecheck proves that no acknowledged write is lost while a Redis deployment is
// scaled, rolled or failed over. A Checker keeps writing while the test disturbs the
// deployment, remembers which writes Redis acknowledged, and Verify reads them all back
// once the deployment has settled.
//
// Two kinds of key are written:
//   - unique keys <prefix>:u:<writer>:<n>, each written once with the value "<writer>:<n>";
//     every acknowledged one must read back with exactly that value;
//   - registers <prefix>:r:<i>, overwritten with 1, 2, 3, ... by the one writer that owns
//     register i; each must read back at least the last acknowledged value (a lower one
//     means an acknowledged overwrite was rolled back) and at most the last attempted one.
//
// Writes that fail are not required to exist: a timeout or a broken connection leaves it
// open whether Redis applied them.
package writecheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Defaults for the zero values of Options.
const (
	DefaultWriters     = 4
	DefaultRegisters   = 8
	DefaultPause       = 20 * time.Millisecond
	DefaultInterval    = time.Millisecond
	DefaultWaitTimeout = time.Second
)

// registerEvery makes every registerEvery-th write of a writer that owns registers a
// register overwrite; the others create unique keys.
const registerEvery = 4

// Options configure a Checker.
type Options struct {
	// Prefix starts every key, so several checkers can share a database. Required, and it
	// must not be in use already: leftover registers would look like phantom writes.
	Prefix string
	// Writers is the number of concurrent writers (default 4).
	Writers int
	// Registers is the number of register keys (default 8). Register i belongs to writer
	// i mod Writers, so its values increase monotonically.
	Registers int
	// Pause is how long a writer sleeps after a write that was not acknowledged
	// (default 20ms), so an outage is not a busy loop.
	Pause time.Duration
	// Interval is how long a writer sleeps after an acknowledged write (default 1ms). It
	// bounds the number of keys, and so the memory and the time Verify takes, in long tests.
	Interval time.Duration
	// WaitReplicas, when positive, sends WAIT WaitReplicas WaitTimeout after each SET on the
	// same connection, and counts the write as acknowledged only if at least WaitReplicas
	// replicas confirmed it. It needs a *goredis.Client (standalone or sentinel-managed) or a
	// *goredis.ClusterClient; with a cluster client each SET and its WAIT go to the master
	// that serves the key's slot in the client's view of the cluster, and a write refused
	// there (MOVED after a failover or a reshard, a node gone) makes the client reload that
	// view, so the next write finds the new master. A write to a slot being migrated gets ASK
	// and counts as failed until the migration ends.
	WaitReplicas int
	// WaitTimeout bounds each WAIT (default 1s); it must be shorter than the client's
	// ReadTimeout.
	WaitTimeout time.Duration
	// PerShard, with a *goredis.ClusterClient, gives every master of the cluster at Start
	// Writers writers of its own, whose keys share a hash tag in one of that master's slots,
	// so that the report gives each shard's longest pause: one shard stalled while the others
	// write shows there, where a pause over all keys hides it.
	PerShard bool
}

func (o Options) withDefaults() Options {
	if o.Writers == 0 {
		o.Writers = DefaultWriters
	}
	if o.Registers == 0 {
		o.Registers = DefaultRegisters
	}
	if o.Pause == 0 {
		o.Pause = DefaultPause
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	return o
}

func (o Options) validate(rdb goredis.UniversalClient) error {
	switch {
	case o.Prefix == "":
		return errors.New("a key prefix is required")
	case o.Writers < 0 || o.Registers < 0:
		return fmt.Errorf("writers %d and registers %d must not be negative", o.Writers, o.Registers)
	case o.Pause < 0 || o.Interval < 0 || o.WaitTimeout < 0:
		return fmt.Errorf("pause %s, interval %s and wait timeout %s must not be negative", o.Pause, o.Interval, o.WaitTimeout)
	case o.WaitReplicas < 0:
		return fmt.Errorf("wait replicas %d must not be negative", o.WaitReplicas)
	}
	if _, cluster := rdb.(*goredis.ClusterClient); o.PerShard && !cluster {
		return fmt.Errorf("PerShard needs a *goredis.ClusterClient, got %T", rdb)
	}
	if o.WaitReplicas == 0 {
		return nil
	}
	var readTimeout time.Duration
	switch client := rdb.(type) {
	case *goredis.Client:
		readTimeout = client.Options().ReadTimeout
	case *goredis.ClusterClient:
		// The cluster's options are those of every node client, which runs the pipeline.
		readTimeout = client.Options().ReadTimeout
	default:
		return fmt.Errorf("WAIT needs a *goredis.Client or a *goredis.ClusterClient, got %T: WAIT must run on the connection of the node that took the write", rdb)
	}
	// SET and WAIT go in one pipeline, whose reply must arrive within the client's read timeout.
	if readTimeout > 0 && o.WaitTimeout >= readTimeout {
		return fmt.Errorf("wait timeout %s must be shorter than the client's read timeout %s", o.WaitTimeout, readTimeout)
	}
	return nil
}

// Stats are live counts of the checker's writes, unique keys and registers together.
type Stats struct {
	// Acknowledged writes were confirmed by Redis (and by WaitReplicas replicas, if set).
	Acknowledged int
	// Failed writes got an error reply or could not reach Redis; they were most likely not
	// applied, but the client's own retries make that no promise.
	Failed int
	// Uncertain writes timed out, lost their connection, were cancelled by Stop, or were
	// applied but not confirmed by enough replicas: they may or may not survive.
	Uncertain int
	// LastError is the error of the most recent write that was not acknowledged.
	LastError error
}

// Checker writes keys in the background until Stop; see the package documentation.
type Checker struct {
	opts    Options
	rdb     goredis.UniversalClient
	cancel  context.CancelFunc
	writers []*writer
	wg      sync.WaitGroup

	stopOnce sync.Once
	stopped  atomic.Bool

	acknowledged, failed, uncertain atomic.Int64
	lastErrMu                       sync.Mutex
	lastErr                         error

	shards []*shard
}

// writer is the state of one writing goroutine; only that goroutine touches it until
// Stop returns.
type writer struct {
	id int
	// keyPrefix starts the writer's keys: Options.Prefix, or its shard's hash tag.
	keyPrefix string
	shard     *shard
	registers []*register
	// acknowledged holds n for every acknowledged unique key <prefix>:u:<id>:<n>.
	acknowledged []int64
}

type register struct {
	key string
	// attempted is the highest value sent, acknowledged the highest value Redis confirmed.
	attempted, acknowledged int64
}

// Start checks that Redis answers and starts the writers. They run until Stop, or until
// ctx ends.
func Start(ctx context.Context, rdb goredis.UniversalClient, opts Options) (*Checker, error) {
	opts = opts.withDefaults()
	if err := opts.validate(rdb); err != nil {
		return nil, fmt.Errorf("writecheck: %w", err)
	}
	// A wrong address or password would otherwise only show as zero acknowledged writes.
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("writecheck: ping before writing: %w", err)
	}
	shards := []*shard{{name: "all keys"}}
	if opts.PerShard {
		targets, err := shardTargets(ctx, rdb.(*goredis.ClusterClient), opts.Prefix)
		if err != nil {
			return nil, fmt.Errorf("writecheck: %w", err)
		}
		shards = targets
	}
	runCtx, cancel := context.WithCancel(ctx)
	c := &Checker{opts: opts, rdb: rdb, cancel: cancel, shards: shards}
	started := time.Now()
	for _, s := range shards {
		s.lastAck = started
	}
	for id := 0; id < opts.Writers*len(shards); id++ {
		s := shards[id%len(shards)]
		keyPrefix := opts.Prefix
		if s.tag != "" {
			keyPrefix = "{" + s.tag + "}"
		}
		c.writers = append(c.writers, &writer{id: id, keyPrefix: keyPrefix, shard: s})
	}
	for i := 0; i < opts.Registers; i++ {
		owner := c.writers[i%len(c.writers)]
		owner.registers = append(owner.registers, &register{key: registerKey(owner.keyPrefix, i)})
	}
	c.wg.Add(len(c.writers))
	for _, w := range c.writers {
		go c.run(runCtx, w)
	}
	return c, nil
}

// Stop stops the writers and waits for them. A write in flight is cancelled and counts as
// uncertain. Stop may be called more than once.
func (c *Checker) Stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		c.wg.Wait()
		// A shard that took no write since its last acknowledged one paused until now.
		stoppedAt := time.Now()
		for _, s := range c.shards {
			s.endPause(stoppedAt)
		}
		c.stopped.Store(true)
	})
}

// Stats returns the counts so far; it is safe to call while the writers run.
func (c *Checker) Stats() Stats {
	c.lastErrMu.Lock()
	lastErr := c.lastErr
	c.lastErrMu.Unlock()
	return Stats{
		Acknowledged: int(c.acknowledged.Load()),
		Failed:       int(c.failed.Load()),
		Uncertain:    int(c.uncertain.Load()),
		LastError:    lastErr,
	}
}

func (c *Checker) run(ctx context.Context, w *writer) {
	defer c.wg.Done()
	var nextUnique, nextRegister int64
	for turn := int64(1); ctx.Err() == nil; turn++ {
		var acknowledged bool
		if len(w.registers) > 0 && turn%registerEvery == 0 {
			reg := w.registers[nextRegister%int64(len(w.registers))]
			nextRegister++
			// Recorded before sending: an uncertain write may still land.
			reg.attempted++
			acknowledged = c.write(ctx, w.shard, reg.key, strconv.FormatInt(reg.attempted, 10))
			if acknowledged {
				reg.acknowledged = reg.attempted
			}
		} else {
			n := nextUnique
			nextUnique++
			acknowledged = c.write(ctx, w.shard, uniqueKey(w.keyPrefix, w.id, n), uniqueValue(w.id, n))
			if acknowledged {
				w.acknowledged = append(w.acknowledged, n)
			}
		}
		if acknowledged {
			sleep(ctx, c.opts.Interval)
		} else {
			sleep(ctx, c.opts.Pause)
		}
	}
}

// outcome is what a write's result says about whether Redis kept it.
type outcome int

const (
	acknowledged outcome = iota
	failed
	uncertain
)

// write sends one SET (and WAIT), counts its outcome for the checker and the key's shard and
// reports whether it was acknowledged.
func (c *Checker) write(ctx context.Context, s *shard, key, value string) bool {
	result, err := c.send(ctx, key, value)
	switch result {
	case acknowledged:
		s.endPause(time.Now())
		c.acknowledged.Add(1)
		s.acknowledged.Add(1)
		return true
	case failed:
		c.failed.Add(1)
		s.failed.Add(1)
	default:
		c.uncertain.Add(1)
		s.uncertain.Add(1)
	}
	c.lastErrMu.Lock()
	c.lastErr = err
	c.lastErrMu.Unlock()
	return false
}

func (c *Checker) send(ctx context.Context, key, value string) (outcome, error) {
	if c.opts.WaitReplicas == 0 {
		err := c.rdb.Set(ctx, key, value, 0).Err()
		if err != nil {
			return classify(err), fmt.Errorf("SET %s: %w", key, err)
		}
		return acknowledged, nil
	}
	cluster, isCluster := c.rdb.(*goredis.ClusterClient)
	if !isCluster {
		result, _, err := c.setAndWait(ctx, c.rdb.(*goredis.Client), key, value)
		return result, err
	}
	// The cluster client cannot route WAIT (it has no key), so both go to the key's master
	// by hand; that node's client follows no redirection.
	master, err := cluster.MasterForKey(ctx, key)
	if err != nil {
		// Nothing was sent: no node is known to serve the slot.
		c.reloadClusterState(ctx, cluster)
		return failed, fmt.Errorf("find the master of %s: %w", key, err)
	}
	result, answered, err := c.setAndWait(ctx, master, key, value)
	if !answered {
		c.reloadClusterState(ctx, cluster)
	}
	return result, err
}

// reloadClusterState asks the cluster client to read the slot map again (in the background,
// at most every 200ms): after MOVED, or when the node that served the slot does not answer,
// the map the client holds is out of date, and the client would otherwise keep it for a
// minute.
func (c *Checker) reloadClusterState(ctx context.Context, cluster *goredis.ClusterClient) {
	if ctx.Err() == nil {
		cluster.ReloadState(ctx)
	}
}

// setAndWait pipelines SET and WAIT on one connection of node. answered reports whether node
// replied to both, so that it is still the master of the key and reachable: a WAIT that came
// back short says the replicas lag, not that the write went to the wrong node.
func (c *Checker) setAndWait(ctx context.Context, node *goredis.Client, key, value string) (result outcome, answered bool, err error) {
	// One pipeline uses one connection, so WAIT counts the replicas that have this SET.
	pipe := node.Pipeline()
	set := pipe.Set(ctx, key, value, 0)
	// Pipeliner has no Wait method; the raw command is the same.
	wait := pipe.Do(ctx, "WAIT", c.opts.WaitReplicas, c.opts.WaitTimeout.Milliseconds())
	// Exec returns the first command's error; both are inspected one by one below.
	_, _ = pipe.Exec(ctx)
	if err := set.Err(); err != nil {
		return classify(err), false, fmt.Errorf("SET %s: %w", key, err)
	}
	// The SET was applied on the master; without enough replicas it may not survive a failover.
	confirmed, err := wait.Int64()
	if err != nil {
		return uncertain, false, fmt.Errorf("WAIT after SET %s: %w", key, err)
	}
	if confirmed < int64(c.opts.WaitReplicas) {
		return uncertain, true, fmt.Errorf("WAIT after SET %s: %d of %d replicas confirmed within %s", key, confirmed, c.opts.WaitReplicas, c.opts.WaitTimeout)
	}
	return acknowledged, true, nil
}

// classify tells an error that says the write was not applied (an error reply, no
// connection at all) from one that leaves it open.
func classify(err error) outcome {
	var replyErr goredis.Error
	if errors.As(err, &replyErr) {
		return failed
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return failed
	}
	if errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout) {
		return failed
	}
	return uncertain
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func uniqueKey(prefix string, writer int, n int64) string {
	return prefix + ":u:" + strconv.Itoa(writer) + ":" + strconv.FormatInt(n, 10)
}

func uniqueValue(writer int, n int64) string {
	return strconv.Itoa(writer) + ":" + strconv.FormatInt(n, 10)
}

func registerKey(prefix string, i int) string {
	return prefix + ":r:" + strconv.Itoa(i)
}
