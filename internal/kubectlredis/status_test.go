package kubectlredis

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestParseArgs(t *testing.T) {
	inv, _, err := parseArgs([]string{"status", "shop", "-n", "prod", "--kind=rediscluster"})
	if err != nil || inv.command != "status" || inv.args[0] != "shop" || inv.value("namespace") != "prod" || inv.value("kind") != "rediscluster" {
		t.Fatalf("%+v %v", inv, err)
	}
	if _, _, err := parseArgs([]string{"status", "-n"}); err == nil {
		t.Error("a flag without its value is accepted")
	}
	if k, err := normalizeKind("redisclusters"); err != nil || k != "RedisCluster" {
		t.Errorf("normalizeKind = %q %v", k, err)
	}
	if k, err := normalizeKind("redis"); err != nil || k != "Redis" {
		t.Errorf("normalizeKind(redis) = %q %v", k, err)
	}
}

func TestRender(t *testing.T) {
	pods := []PodStatus{
		{Pod: "shop-leader-0", IP: "10.0.0.1", Node: "node-a", Ready: true, Role: "master", Offset: 900, Lag: 0,
			Slots: []redis.SlotRange{{Start: 0, End: 5460}}, Keys: keysOf("keys=12,expires=0,avg_ttl=0"), Memory: "1.2M"},
		{Pod: "shop-follower-0", IP: "10.0.0.4", Node: "node-b", Ready: true, Role: "slave", Offset: 850, Lag: -1,
			masterIP: "10.0.0.1", masterPort: 6379, Link: "connected"},
		{Pod: "shop-follower-1", Role: "?", Lag: -1, Error: "pod Pending"},
	}
	resolveMasters(pods)
	var b bytes.Buffer
	conds := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterOK", Message: "all slots served"}}
	if err := Render(&b, "RedisCluster", "shop", "Ready", "", pods, conds, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"RedisCluster shop: Ready",
		"shop-leader-0", "0-5460", "12", "1.2M",
		"shop-follower-0  true   slave   shop-leader-0", "connected", "node-b",
		"shop-follower-1: pod Pending",
		"Ready", "ClusterOK", "Last events:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if pods[1].Lag != 50 {
		t.Errorf("follower lag = %d, want 50", pods[1].Lag)
	}
}
