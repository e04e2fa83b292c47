package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newPool(t *testing.T, opts redis.Options) *redis.Pool {
	t.Helper()
	pool := redis.NewPool(opts)
	t.Cleanup(func() {
		if err := pool.Close(); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return pool
}
