package framework

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// GapProbe writes one key every few milliseconds and keeps the longest time between two
// acknowledged writes: how long the shard that serves the key stopped taking writes.
type GapProbe struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	longest time.Duration
}

// StartGapProbe starts writing key through rdb until Stop.
func StartGapProbe(ctx context.Context, rdb redis.UniversalClient, key string) *GapProbe {
	ctx, cancel := context.WithCancel(ctx)
	g := &GapProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		lastOK := time.Now()
		for n := 0; ctx.Err() == nil; n++ {
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			err := rdb.Set(wctx, key, n, 0).Err()
			wcancel()
			if err == nil {
				now := time.Now()
				g.mu.Lock()
				g.longest = max(g.longest, now.Sub(lastOK))
				g.mu.Unlock()
				lastOK = now
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return g
}

// Stop ends the writes and returns the longest pause between two acknowledged writes.
func (g *GapProbe) Stop() time.Duration {
	g.cancel()
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.longest
}
