package redis

import (
	"reflect"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// CLUSTER SHARDS of a 2-shard cluster as go-redis returns it from Do over RESP2: every map
// is a flat key/value array.
func shardsRESP2() any {
	return []any{
		[]any{
			"slots", []any{int64(0), int64(8191)},
			"nodes", []any{
				[]any{"id", idA, "port", int64(6379), "ip", "10.244.0.12", "endpoint", "10.244.0.12",
					"hostname", "redis-cluster-leader-0", "role", "master", "replication-offset", int64(72156), "health", "online"},
				[]any{"id", idD, "port", int64(6379), "ip", "10.244.1.10", "endpoint", "10.244.1.10",
					"hostname", "redis-cluster-follower-0", "role", "replica", "replication-offset", int64(72156), "health", "online"},
			},
		},
		[]any{
			"slots", []any{int64(8192), int64(10000), int64(10002), int64(16383)},
			"nodes", []any{
				[]any{"id", idB, "port", int64(6379), "ip", "10.244.1.9", "endpoint", "10.244.1.9",
					"role", "master", "replication-offset", int64(1000), "health", "failed"},
				[]any{"id", idE, "tls-port", int64(6380), "ip", "10.244.2.5", "endpoint", "10.244.2.5",
					"role", "replica", "replication-offset", int64(990), "health", "loading", "future-field", []any{"x"}},
			},
		},
	}
}

// The same reply over RESP3, where go-redis returns maps.
func shardsRESP3() any {
	var out []any
	for _, s := range shardsRESP2().([]any) {
		out = append(out, toRESP3Map(s.([]any)))
	}
	return out
}

func toRESP3Map(flat []any) map[any]any {
	m := map[any]any{}
	for i := 0; i < len(flat); i += 2 {
		v := flat[i+1]
		if flat[i] == "nodes" {
			var nodes []any
			for _, n := range v.([]any) {
				nodes = append(nodes, toRESP3Map(n.([]any)))
			}
			v = nodes
		}
		m[flat[i]] = v
	}
	return m
}

var wantShards = []Shard{
	{
		Slots: []SlotRange{{0, 8191}},
		Nodes: []ShardNode{
			{ID: idA, Endpoint: "10.244.0.12", IP: "10.244.0.12", Hostname: "redis-cluster-leader-0", Port: 6379,
				Role: "master", ReplicationOffset: 72156, Health: "online"},
			{ID: idD, Endpoint: "10.244.1.10", IP: "10.244.1.10", Hostname: "redis-cluster-follower-0", Port: 6379,
				Role: "replica", ReplicationOffset: 72156, Health: "online"},
		},
	},
	{
		Slots: []SlotRange{{8192, 10000}, {10002, 16383}},
		Nodes: []ShardNode{
			{ID: idB, Endpoint: "10.244.1.9", IP: "10.244.1.9", Port: 6379, Role: "master", ReplicationOffset: 1000, Health: "failed"},
			{ID: idE, Endpoint: "10.244.2.5", IP: "10.244.2.5", TLSPort: 6380, Role: "replica", ReplicationOffset: 990, Health: "loading"},
		},
	},
}

func TestParseClusterShards(t *testing.T) {
	for name, reply := range map[string]any{"RESP2": shardsRESP2(), "RESP3": shardsRESP3()} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseClusterShards(reply)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantShards) {
				t.Fatalf("\n got %+v\nwant %+v", got, wantShards)
			}
		})
	}
	if got, err := ParseClusterShards([]any{}); err != nil || len(got) != 0 {
		t.Errorf("empty reply: %v, %v", got, err)
	}
}

func TestTopologyFromShards(t *testing.T) {
	topo := TopologyFromShards(wantShards)
	if got := ids(topo.Masters()); !reflect.DeepEqual(got, []string{idA, idB}) {
		t.Errorf("Masters = %v", got)
	}
	if got := ids(topo.ReplicasOf(idB)); !reflect.DeepEqual(got, []string{idE}) {
		t.Errorf("ReplicasOf(B) = %v", got)
	}
	if got := topo.UnassignedSlots(); !reflect.DeepEqual(got, []SlotRange{{10001, 10001}}) {
		t.Errorf("UnassignedSlots = %v", got)
	}
	if got := ids(topo.FailedNodes()); !reflect.DeepEqual(got, []string{idB}) {
		t.Errorf("FailedNodes = %v", got)
	}
	if n, ok := topo.NodeByAddr("10.244.2.5:6380"); !ok || n.ID != idE {
		t.Errorf("TLS-only node not found by its TLS port: %+v", n)
	}
	if n, ok := topo.NodeByAddr("redis-cluster-leader-0:6379"); !ok || n.ID != idA {
		t.Errorf("node not found by hostname: %+v", n)
	}
	if _, ok := topo.Myself(); ok {
		t.Error("CLUSTER SHARDS has no myself")
	}
}

func TestParseClusterShardsErrors(t *testing.T) {
	node := func(kv ...any) []any { return append([]any{"id", idA}, kv...) }
	tests := []struct {
		name    string
		reply   any
		wantErr string
	}{
		{"not an array", "OK", "want an array"},
		{"shard not a map", []any{int64(1)}, "want a map"},
		{"odd key/value array", []any{[]any{"slots"}}, "odd length"},
		{"odd slot bounds", []any{[]any{"slots", []any{int64(0)}}}, "odd number"},
		{"slot past the end", []any{[]any{"slots", []any{int64(0), int64(16384)}}}, "invalid range"},
		{"reversed slots", []any{[]any{"slots", []any{int64(9), int64(1)}}}, "invalid range"},
		{"slot not a number", []any{[]any{"slots", []any{"a", int64(1)}}}, "integer"},
		{"node without id", []any{[]any{"nodes", []any{[]any{"port", int64(1)}}}}, "no id"},
		{"bad node id", []any{[]any{"nodes", []any{[]any{"id", "x"}}}}, "node ID"},
		{"bad port", []any{[]any{"nodes", []any{node("port", int64(70000))}}}, "port"},
		{"map key not a string", []any{map[any]any{1.5: "x"}}, "map key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseClusterShards(tt.reply)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestShardsFromGoRedis(t *testing.T) {
	in := []goredis.ClusterShard{{
		Slots: []goredis.SlotRange{{Start: 0, End: 16383}},
		Nodes: []goredis.Node{{ID: idA, IP: "127.0.0.1", Endpoint: "127.0.0.1", Port: 7000, Role: "master", Health: "online"}},
	}}
	got, err := ShardsFromGoRedis(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Shard{{Slots: []SlotRange{{0, 16383}}, Nodes: []ShardNode{{ID: idA, IP: "127.0.0.1", Endpoint: "127.0.0.1", Port: 7000, Role: "master", Health: "online"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	in[0].Slots[0].End = 16384
	if _, err := ShardsFromGoRedis(in); err == nil {
		t.Error("out-of-range slot accepted")
	}
}
