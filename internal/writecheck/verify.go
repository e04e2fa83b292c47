package writecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

const (
	// readRetryWindow is how long Verify keeps re-reading keys that fail with transient
	// errors (MOVED, TRYAGAIN, CLUSTERDOWN, a connection refused) while a deployment converges.
	readRetryWindow = 30 * time.Second
	readRetryPause  = 200 * time.Millisecond
	// readBatch is the number of GETs per pipeline: large enough to read many keys per
	// round trip, small enough not to hold a node for long.
	readBatch = 1000
	// reportListLimit caps the keys each list names in Report.String.
	reportListLimit = 10
)

// Report is the result of Verify.
type Report struct {
	// Acknowledged, Failed and Uncertain count the checker's writes (see Stats).
	Acknowledged, Failed, Uncertain int
	// KeysRead is the number of keys Verify read back: acknowledged unique keys and registers.
	KeysRead int
	// Missing lists acknowledged unique keys that do not exist.
	Missing []string
	// Wrong lists keys holding a value the checker never wrote there, as "key: want X got Y".
	Wrong []string
	// StaleRegisters lists registers holding less than their last acknowledged value (or
	// nothing), as "key: got X, last acknowledged Y".
	StaleRegisters []string
	// Shards gives the figures of each shard: one "all keys" shard, or one per master with
	// Options.PerShard.
	Shards []ShardReport
}

// LongestPause is the longest pause of any shard.
func (r Report) LongestPause() time.Duration {
	var longest time.Duration
	for _, s := range r.Shards {
		longest = max(longest, s.LongestPause)
	}
	return longest
}

// PausedLongerThan names the shards whose writes paused longer than bound, with their pause.
func (r Report) PausedLongerThan(bound time.Duration) []string {
	var over []string
	for _, s := range r.Shards {
		if s.LongestPause > bound {
			over = append(over, fmt.Sprintf("%s: %s", s.Name, s.LongestPause.Round(time.Millisecond)))
		}
	}
	return over
}

// OK reports whether every acknowledged write was read back. A run that had nothing
// acknowledged proved nothing, so it is not OK either.
func (r Report) OK() bool {
	return r.Acknowledged > 0 && len(r.Missing) == 0 && len(r.Wrong) == 0 && len(r.StaleRegisters) == 0
}

// String summarizes the report in one line, naming at most ten keys of each kind.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acknowledged, %d failed, %d uncertain writes; %d keys read back", r.Acknowledged, r.Failed, r.Uncertain, r.KeysRead)
	if r.Acknowledged == 0 {
		b.WriteString("; nothing was acknowledged, so nothing was proven")
	}
	if len(r.Missing)+len(r.Wrong)+len(r.StaleRegisters) == 0 {
		if r.Acknowledged > 0 {
			b.WriteString("; no acknowledged write lost")
		}
	} else {
		writeList(&b, "missing", r.Missing)
		writeList(&b, "wrong", r.Wrong)
		writeList(&b, "stale", r.StaleRegisters)
	}
	writeShards(&b, r.Shards)
	return b.String()
}

// timedPause is the pause from which the report says when it ended.
const timedPause = 500 * time.Millisecond

// writeShards gives each shard's longest pause, and its counts when they are not all healthy.
func writeShards(b *strings.Builder, shards []ShardReport) {
	if len(shards) == 0 {
		return
	}
	b.WriteString("; longest pause")
	for i, s := range shards {
		sep := ", "
		if i == 0 {
			sep = " "
		}
		fmt.Fprintf(b, "%s%s %s", sep, s.Name, s.LongestPause.Round(time.Millisecond))
		if s.LongestPause >= timedPause && !s.LongestPauseEnded.IsZero() {
			// Long enough to look for in the operator's events and log: when it ended.
			fmt.Fprintf(b, " (ended %s)", s.LongestPauseEnded.UTC().Format("15:04:05.000"))
		}
		if len(shards) > 1 && (s.Failed > 0 || s.Uncertain > 0 || s.Lost > 0) {
			fmt.Fprintf(b, " (%d acknowledged, %d failed, %d uncertain, %d lost)", s.Acknowledged, s.Failed, s.Uncertain, s.Lost)
		}
	}
}

func writeList(b *strings.Builder, what string, items []string) {
	if len(items) == 0 {
		return
	}
	shown := items[:min(len(items), reportListLimit)]
	fmt.Fprintf(b, "; %d %s: %s", len(items), what, strings.Join(shown, ", "))
	if len(items) > len(shown) {
		fmt.Fprintf(b, " and %d more", len(items)-len(shown))
	}
}

// Verify reads back every acknowledged unique key and every register through rdb, which
// may be another client than the writers' (a replica, a new cluster client after
// scaling). Call it after Stop, once the deployment has settled: a key that reads as
// absent counts as missing, while keys that fail to read are retried for up to 30s and
// then make Verify return an error rather than a report.
func (c *Checker) Verify(ctx context.Context, rdb goredis.UniversalClient) (Report, error) {
	if !c.stopped.Load() {
		return Report{}, errors.New("writecheck: Verify before Stop: the writers still change the keys")
	}
	var uniqueKeys, uniqueValues []string
	// shardOf maps each key read back to the index of its shard in c.shards.
	shardOf := map[string]int{}
	var registers []*register
	for _, w := range c.writers {
		index := slices.Index(c.shards, w.shard)
		for _, n := range w.acknowledged {
			key := uniqueKey(w.keyPrefix, w.id, n)
			uniqueKeys = append(uniqueKeys, key)
			uniqueValues = append(uniqueValues, uniqueValue(w.id, n))
			shardOf[key] = index
		}
		for _, reg := range w.registers {
			shardOf[reg.key] = index
		}
		registers = append(registers, w.registers...)
	}
	keys := append([]string(nil), uniqueKeys...)
	for _, reg := range registers {
		keys = append(keys, reg.key)
	}
	values, err := readKeys(ctx, rdb, keys)
	if err != nil {
		return Report{}, fmt.Errorf("writecheck: verify: %w", err)
	}

	stats := c.Stats()
	report := Report{Acknowledged: stats.Acknowledged, Failed: stats.Failed, Uncertain: stats.Uncertain, KeysRead: len(keys)}
	for i, key := range uniqueKeys {
		got, exists := values[key]
		switch {
		case !exists:
			report.Missing = append(report.Missing, key)
		case got != uniqueValues[i]:
			report.Wrong = append(report.Wrong, fmt.Sprintf("%s: want %q got %q", key, uniqueValues[i], got))
		}
	}
	for _, reg := range registers {
		report.checkRegister(reg, values)
	}
	for _, s := range c.shards {
		report.Shards = append(report.Shards, s.report())
	}
	for _, lost := range [][]string{report.Missing, report.Wrong, report.StaleRegisters} {
		for _, entry := range lost {
			key, _, _ := strings.Cut(entry, ": ")
			report.Shards[shardOf[key]].Lost++
		}
	}
	return report, nil
}

func (r *Report) checkRegister(reg *register, values map[string]string) {
	raw, exists := values[reg.key]
	if !exists {
		if reg.acknowledged > 0 {
			r.StaleRegisters = append(r.StaleRegisters, fmt.Sprintf("%s: got nothing, last acknowledged %d", reg.key, reg.acknowledged))
		}
		return
	}
	got, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case err != nil || got < 0:
		r.Wrong = append(r.Wrong, fmt.Sprintf("%s: want a value in [%d, %d] got %q", reg.key, reg.acknowledged, reg.attempted, raw))
	case got < reg.acknowledged:
		r.StaleRegisters = append(r.StaleRegisters, fmt.Sprintf("%s: got %d, last acknowledged %d", reg.key, got, reg.acknowledged))
	case got > reg.attempted:
		r.Wrong = append(r.Wrong, fmt.Sprintf("%s: want a value in [%d, %d] got %d, which was never written", reg.key, reg.acknowledged, reg.attempted, got))
	}
}

// readKeys GETs keys in pipelined batches (a cluster client routes each GET to its
// node) and returns the values of those that exist. Keys whose read fails are read again
// until readRetryWindow or ctx ends; a read error never counts as a value.
func readKeys(ctx context.Context, rdb goredis.UniversalClient, keys []string) (map[string]string, error) {
	values := make(map[string]string, len(keys))
	deadline := time.Now().Add(readRetryWindow)
	pending := keys
	for {
		var unread []string
		var lastErr error
		for start := 0; start < len(pending); start += readBatch {
			batch := pending[start:min(start+readBatch, len(pending))]
			pipe := rdb.Pipeline()
			gets := make([]*goredis.StringCmd, len(batch))
			for i, key := range batch {
				gets[i] = pipe.Get(ctx, key)
			}
			// Exec returns the first command's error; each GET is inspected below.
			_, _ = pipe.Exec(ctx)
			for i, get := range gets {
				value, err := get.Result()
				switch {
				case err == nil:
					values[batch[i]] = value
				case errors.Is(err, goredis.Nil):
					// Absent: a definite answer.
				default:
					unread = append(unread, batch[i])
					lastErr = err
				}
			}
		}
		if len(unread) == 0 {
			return values, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d keys could not be read, the last error: %w", len(unread), len(keys), lastErr)
		}
		pending = unread
		sleep(ctx, readRetryPause)
	}
}
