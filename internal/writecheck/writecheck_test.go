package writecheck

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestStartRejectsBadOptions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// No server behind these: Start must refuse before talking to one.
	single := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = single.Close(); _ = cluster.Close(); _ = ring.Close() })
	for name, tc := range map[string]struct {
		rdb  goredis.UniversalClient
		opts Options
		want string
	}{
		"no prefix":                              {single, Options{}, "prefix"},
		"negative writers":                       {single, Options{Prefix: "p", Writers: -1}, "writers"},
		"negative pause":                         {single, Options{Prefix: "p", Pause: -time.Second}, "pause"},
		"WAIT on a ring client":                  {ring, Options{Prefix: "p", WaitReplicas: 1}, "*redis.Ring"},
		"WAIT beyond read timeout":               {single, Options{Prefix: "p", WaitReplicas: 1, WaitTimeout: time.Minute}, "read timeout"},
		"WAIT beyond the cluster's read timeout": {cluster, Options{Prefix: "p", PerShard: true, WaitReplicas: 1, WaitTimeout: time.Minute}, "read timeout"},
		"PerShard without a cluster":             {single, Options{Prefix: "p", PerShard: true}, "*redis.Client"},
	} {
		c, err := Start(ctx, tc.rdb, tc.opts)
		if err == nil {
			c.Stop()
			t.Errorf("%s: started", name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", name, err, tc.want)
		}
	}
	if _, err := Start(ctx, single, Options{Prefix: "p"}); err == nil || !strings.Contains(err.Error(), "ping") {
		t.Errorf("Start without a server: %v", err)
	}
}

func TestValidateAcceptsWaitOnEveryClientThatCanRouteIt(t *testing.T) {
	t.Parallel()
	// Nothing connects: validate only looks at the client's type and options.
	single := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	slowCluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: 10 * time.Second})
	noTimeoutCluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: -1})
	t.Cleanup(func() { _ = single.Close(); _ = cluster.Close(); _ = slowCluster.Close(); _ = noTimeoutCluster.Close() })
	for name, tc := range map[string]struct {
		rdb  goredis.UniversalClient
		opts Options
	}{
		"WAIT on a single client":            {single, Options{Prefix: "p", WaitReplicas: 1}},
		"PerShard alone":                     {cluster, Options{Prefix: "p", PerShard: true}},
		"PerShard and WAIT":                  {cluster, Options{Prefix: "p", PerShard: true, WaitReplicas: 1}},
		"WAIT on a cluster client, all keys": {cluster, Options{Prefix: "p", WaitReplicas: 2}},
		"WAIT under a longer read timeout":   {slowCluster, Options{Prefix: "p", PerShard: true, WaitReplicas: 1, WaitTimeout: 9 * time.Second}},
		"WAIT with no read timeout at all":   {noTimeoutCluster, Options{Prefix: "p", PerShard: true, WaitReplicas: 1, WaitTimeout: time.Hour}},
	} {
		if err := tc.opts.withDefaults().validate(tc.rdb); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The default wait timeout (1s) against a cluster read timeout below it.
	fast := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = fast.Close() })
	err := Options{Prefix: "p", PerShard: true, WaitReplicas: 1}.withDefaults().validate(fast)
	if err == nil || !strings.Contains(err.Error(), "wait timeout 1s must be shorter than the client's read timeout 500ms") {
		t.Errorf("default wait timeout over a 500ms read timeout: %v", err)
	}
}

func TestReportStringNamesAtMostTenKeys(t *testing.T) {
	t.Parallel()
	var missing []string
	for i := 0; i < 15; i++ {
		missing = append(missing, "p:u:0:"+strconv.Itoa(i))
	}
	report := Report{Acknowledged: 20, Missing: missing, StaleRegisters: []string{"p:r:1: got 0, last acknowledged 3"}}
	summary := report.String()
	for _, want := range []string{"15 missing", "p:u:0:9", "and 5 more", "1 stale: p:r:1"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
	if strings.Contains(summary, "p:u:0:10") {
		t.Errorf("summary names an 11th key: %s", summary)
	}
	if report.OK() {
		t.Error("a report with missing keys is OK")
	}
	if ok := (Report{Acknowledged: 1}); !ok.OK() || !strings.Contains(ok.String(), "no acknowledged write lost") {
		t.Errorf("clean report: OK %v, %s", ok.OK(), ok)
	}
}
