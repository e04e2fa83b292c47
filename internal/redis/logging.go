package redis

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
)

// Logger gives go-redis's messages (pool dial failures, unread replies, protocol fallbacks) to
// logr, so every line the operator prints has the same structured format. go-redis keeps one
// logger for the process: install it once in main with goredis.SetLogger.
type Logger struct {
	// Base is used when a message comes without a context logger (pool maintenance runs on
	// its own goroutines).
	Base logr.Logger
}

// Printf logs one go-redis message at info level, with the reconcile's logger when the context
// carries one (so the message names the resource it was about).
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	logger := l.Base
	if ctx != nil {
		if fromCtx, err := logr.FromContext(ctx); err == nil {
			logger = fromCtx.WithName("go-redis")
		}
	}
	logger.Info(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
