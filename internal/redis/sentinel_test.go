package redis

import (
	"reflect"
	"testing"
)

func TestParseFieldMap(t *testing.T) {
	want := map[string]string{"name": "mymaster", "ip": "10.0.0.5", "port": "6379", "flags": "master", "quorum": "2"}
	for name, reply := range map[string]any{
		"RESP2 flat array": []any{"name", "mymaster", "ip", "10.0.0.5", "port", "6379", "flags", "master", "quorum", "2"},
		"RESP3 map":        map[any]any{"name": "mymaster", "ip": "10.0.0.5", "port": "6379", "flags": "master", "quorum": int64(2)},
		"string-keyed map": map[string]any{"name": "mymaster", "ip": "10.0.0.5", "port": int64(6379), "flags": "master", "quorum": "2"},
	} {
		got, err := parseFieldMap(reply)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parseFieldMap = %v, %v; want %v", name, got, err, want)
		}
	}
	if got, err := parseFieldMap([]any{}); err != nil || len(got) != 0 {
		t.Errorf("empty array: %v, %v", got, err)
	}
	for name, reply := range map[string]any{
		"odd array":         []any{"name", "mymaster", "ip"},
		"array value":       []any{"flags", []any{"master"}},
		"non-string key":    map[any]any{1.5: "x"},
		"not a map":         "OK",
		"nil":               nil,
		"nested map value":  map[string]any{"ip": map[any]any{}},
		"array key in flat": []any{[]any{"k"}, "v"},
	} {
		if got, err := parseFieldMap(reply); err == nil {
			t.Errorf("%s: parseFieldMap = %v, want an error", name, got)
		}
	}
}

func TestParseMasterAddr(t *testing.T) {
	host, port, err := parseMasterAddr([]any{"10.0.0.5", "6380"})
	if err != nil || host != "10.0.0.5" || port != 6380 {
		t.Errorf("parseMasterAddr = %q %d %v", host, port, err)
	}
	for _, reply := range []any{
		[]any{"10.0.0.5"}, []any{"10.0.0.5", "6380", "x"}, []any{"", "6380"}, []any{"h", "0"},
		[]any{"h", "70000"}, []any{"h", "port"}, []any{[]any{}, "1"}, "10.0.0.5:6380", nil,
	} {
		if host, port, err := parseMasterAddr(reply); err == nil {
			t.Errorf("parseMasterAddr(%#v) = %q %d, want an error", reply, host, port)
		}
	}
}

func TestParseReplicaHosts(t *testing.T) {
	reply := []any{
		[]any{"name", "10.0.0.6:6379", "ip", "10.0.0.6", "port", "6379", "flags", "slave"},
		map[any]any{"name": "r.example:6379", "ip": "r.example", "port": int64(6379), "flags": "slave"},
	}
	got, err := parseReplicaHosts(reply)
	if err != nil || !reflect.DeepEqual(got, []string{"10.0.0.6", "r.example"}) {
		t.Errorf("parseReplicaHosts = %q, %v", got, err)
	}
	if got, err := parseReplicaHosts([]any{}); err != nil || len(got) != 0 {
		t.Errorf("no replicas: %q, %v", got, err)
	}
	for name, bad := range map[string]any{
		"not an array":        "OK",
		"an entry with no ip": []any{[]any{"name", "x", "port", "6379"}},
		"an odd field list":   []any{[]any{"ip"}},
	} {
		if got, err := parseReplicaHosts(bad); err == nil {
			t.Errorf("%s: parseReplicaHosts = %q, want an error", name, got)
		}
	}
}
