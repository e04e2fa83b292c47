package writecheck

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// StopAndRequire stops the writers, verifies every acknowledged write through rdb and fails
// the test if one is lost; what names the disruption in the messages.
func (c *Checker) StopAndRequire(ctx context.Context, t testing.TB, rdb goredis.UniversalClient, what string) Report {
	t.Helper()
	c.Stop()
	report, err := c.Verify(ctx, rdb)
	if err != nil {
		t.Fatalf("verify the writes made %s: %v", what, err)
	}
	if !report.OK() {
		t.Errorf("writes lost %s: %s", what, report)
	}
	t.Logf("%s: %s", what, report)
	return report
}
