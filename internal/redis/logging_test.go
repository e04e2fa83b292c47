package redis

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

func TestLoggerPrintsGoRedisMessagesThroughLogr(t *testing.T) {
	var lines []string
	sink := func(name string) logr.Logger {
		return funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{}).WithName(name)
	}
	logger := Logger{Base: sink("base")}

	logger.Printf(context.Background(), "redis: dial %s: %v\n", "10.0.0.1:6379", "connection refused")
	logger.Printf(logr.NewContext(context.Background(), sink("reconcile")), "pool: %d conns", 3)

	want := []string{
		`{"logger":"base","level":0,"msg":"redis: dial 10.0.0.1:6379: connection refused"}`,
		`{"logger":"reconcile/go-redis","level":0,"msg":"pool: 3 conns"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(lines), lines, len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d = %s, want %s", i, lines[i], want[i])
		}
	}
}
