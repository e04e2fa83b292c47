package kubelet

import (
	"context"
	"log/slog"
	"strings"
)

// quietHandler drops virtual-kubelet's reports of optimistic-concurrency conflicts on pod
// status updates: they are retried at once and succeed, but each comes with a stack trace.
// virtual-kubelet attaches the error with Logger.With, so it arrives through WithAttrs.
type quietHandler struct {
	slog.Handler
	noisy bool
}

const conflictNoise = "the object has been modified"

func noisy(attrs []slog.Attr) bool {
	for _, a := range attrs {
		if strings.Contains(a.Value.String(), conflictNoise) {
			return true
		}
	}
	return false
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.noisy || strings.Contains(r.Message, conflictNoise) {
		return nil
	}
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a); return true })
	if noisy(attrs) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{Handler: h.Handler.WithAttrs(attrs), noisy: h.noisy || noisy(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{Handler: h.Handler.WithGroup(name), noisy: h.noisy}
}
