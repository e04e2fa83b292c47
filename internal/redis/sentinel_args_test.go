package redis_test

import (
	"errors"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestSentinelArgumentChecks(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	// Nothing listens there: every call below must fail before dialing.
	c, err := pool.Client(redis.NewEndpoint("127.0.0.1", 1, redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{"ckquorum": c.SentinelCkQuorum(ctx, "")}
	_, _, _, checks["get-master-addr-by-name"] = c.SentinelMasterAddr(ctx, "")
	_, checks["master"] = c.SentinelMaster(ctx, "")
	for name, err := range checks {
		var rerr *redis.Error
		if err == nil || !errors.As(err, &rerr) || rerr.Addr != "127.0.0.1:1" || redis.IsServerError(err) {
			t.Errorf("%s without a group: err = %v", name, err)
		}
	}
	if c.CommandCount() != 0 {
		t.Errorf("invalid calls sent %d commands", c.CommandCount())
	}
}
