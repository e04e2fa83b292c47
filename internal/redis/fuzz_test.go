package redis

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
)

func FuzzParseClusterNodes(f *testing.F) {
	f.Add(healthyNodes)
	f.Add(troubledNodes)
	f.Add("")
	f.Add(idA + " :6379@16379 myself,master - 0 0 0 connected\n")
	f.Add(idA + " 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [5460->-" + idB + "] [100-<-" + idC + "]\n")
	f.Add(idA + " fd00::5:6379@16379,host,shard-id=" + idB + " slave " + idB + " 0 1 2 connected\n")
	f.Add(idA + " [::1]:6379 noflags,shiny - 0 0 0 disconnected 0 2-3 16383\n")
	f.Fuzz(func(t *testing.T, text string) {
		topo, err := ParseClusterNodes(text)
		if err != nil {
			return
		}
		checkTopologyInvariants(t, topo)
		rendered := topo.String()
		again, err := ParseClusterNodes(rendered)
		if err != nil {
			t.Fatalf("rendered topology does not parse: %v\n%s", err, rendered)
		}
		if !reflect.DeepEqual(again, topo) {
			t.Fatalf("round trip changed the topology:\n%+v\n%+v", topo, again)
		}
		if again.String() != rendered {
			t.Fatalf("rendering is not stable:\n%q\n%q", rendered, again.String())
		}
	})
}

func checkTopologyInvariants(t *testing.T, topo Topology) {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range topo.Nodes {
		if _, err := parseNodeID(n.ID); err != nil {
			t.Fatalf("invalid node ID kept: %v", err)
		}
		if seen[n.ID] {
			t.Fatalf("node %s twice", n.ID)
		}
		seen[n.ID] = true
		if n.MasterID != "" {
			if _, err := parseNodeID(n.MasterID); err != nil {
				t.Fatalf("invalid master ID kept: %v", err)
			}
		}
		if n.Addr.Port < 0 || n.Addr.Port > 65535 || n.Addr.BusPort < 0 || n.Addr.BusPort > 65535 {
			t.Fatalf("port out of range: %+v", n.Addr)
		}
		for _, r := range n.Slots {
			if !r.Valid() {
				t.Fatalf("slot range %v outside 0..%d", r, MaxSlot)
			}
		}
		for _, m := range append(append([]SlotMigration(nil), n.Migrating...), n.Importing...) {
			if m.Slot < 0 || m.Slot > MaxSlot {
				t.Fatalf("migrating/importing slot %d outside 0..%d", m.Slot, MaxSlot)
			}
			if _, err := parseNodeID(m.NodeID); err != nil {
				t.Fatalf("migration to invalid node kept: %v", err)
			}
		}
		if got, ok := topo.NodeByID(n.ID); !ok || got.ID != n.ID {
			t.Fatalf("NodeByID(%s) missed", n.ID)
		}
	}
	assigned, unassigned := topo.AssignedSlots(), topo.UnassignedSlots()
	if CountSlots(assigned)+CountSlots(unassigned) != SlotCount {
		t.Fatalf("assigned %v + unassigned %v != %d slots", assigned, unassigned, SlotCount)
	}
	if topo.AllSlotsCovered() != (len(unassigned) == 0) {
		t.Fatal("AllSlotsCovered disagrees with UnassignedSlots")
	}
	for _, r := range unassigned {
		if !r.Valid() {
			t.Fatalf("unassigned range %v invalid", r)
		}
		if n, ok := topo.SlotOwner(r.Start); ok {
			t.Fatalf("slot %d unassigned but owned by %s", r.Start, n.ID)
		}
	}
	for _, r := range assigned {
		if _, ok := topo.SlotOwner(r.End); !ok {
			t.Fatalf("slot %d assigned but has no owner", r.End)
		}
	}
	masters := topo.Masters()
	replicas := 0
	for _, m := range masters {
		replicas += len(topo.ReplicasOf(m.ID))
	}
	if replicas > len(topo.Replicas()) {
		t.Fatalf("more replicas of masters (%d) than replicas (%d)", replicas, len(topo.Replicas()))
	}
	_, _ = topo.Myself()
	_ = topo.FailedNodes()
	_ = topo.SuspectedNodes()
	_ = topo.HandshakeNodes()
	_ = topo.NodesWithoutAddr()
	_ = topo.MigratingSlots()
	_ = topo.ImportingSlots()
}

func FuzzParseClusterInfo(f *testing.F) {
	f.Add(healthyClusterInfo)
	f.Add("cluster_state:fail\ncluster_slots_assigned:0\n")
	f.Add("# x\ncluster_state:ok\r\ncluster_my_epoch:18446744073709551615\r\nfoo:bar:baz\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		ci, err := ParseClusterInfo(text)
		if err != nil {
			return
		}
		if ci.State == "" {
			t.Fatal("parsed without a state")
		}
		again, err := ParseClusterInfo(ci.String())
		if err != nil {
			t.Fatalf("rendered info does not parse: %v\n%q", err, ci.String())
		}
		if !reflect.DeepEqual(again, ci) {
			t.Fatalf("round trip changed the info:\n%+v\n%+v", ci, again)
		}
		_ = ParseInfo(text)
	})
}

func FuzzParseClusterShards(f *testing.F) {
	f.Add(encodeRESP(shardsRESP2()))
	f.Add(encodeRESP(shardsRESP3()))
	f.Add([]byte("*0\r\n"))
	f.Add([]byte("*1\r\n%2\r\n+slots\r\n*2\r\n:0\r\n:16383\r\n+nodes\r\n*1\r\n%1\r\n+id\r\n$40\r\n" + idA + "\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, _, err := decodeRESP(data, 0)
		if err != nil {
			return
		}
		shards, err := ParseClusterShards(reply)
		if err != nil {
			return
		}
		for _, s := range shards {
			for _, r := range s.Slots {
				if !r.Valid() {
					t.Fatalf("slot range %v outside 0..%d", r, MaxSlot)
				}
			}
			for _, n := range s.Nodes {
				if _, err := parseNodeID(n.ID); err != nil {
					t.Fatalf("invalid node ID kept: %v", err)
				}
				if n.Port < 0 || n.Port > 65535 || n.TLSPort < 0 || n.TLSPort > 65535 {
					t.Fatalf("port out of range: %+v", n)
				}
			}
		}
		// Encoding the parsed shards as either protocol and parsing again gives them back.
		for _, resp3 := range []bool{false, true} {
			again, err := ParseClusterShards(shardsReply(shards, resp3))
			if err != nil || !reflect.DeepEqual(again, shards) {
				t.Fatalf("round trip (RESP3=%v) changed the shards: %v\n%+v\n%+v", resp3, err, shards, again)
			}
		}
		topo := TopologyFromShards(shards)
		for _, n := range topo.Nodes {
			for _, r := range n.Slots {
				if !r.Valid() {
					t.Fatalf("topology slot range %v invalid", r)
				}
			}
		}
		if CountSlots(topo.AssignedSlots())+CountSlots(topo.UnassignedSlots()) != SlotCount {
			t.Fatal("assigned + unassigned != all slots")
		}
	})
}

func FuzzParseRole(f *testing.F) {
	f.Add(encodeRESP([]any{"master", int64(3129659), []any{[]any{"10.0.0.1", "6379", "3129242"}}}))
	f.Add(encodeRESP([]any{"slave", "10.0.0.1", int64(6379), "connected", int64(3167038)}))
	f.Add(encodeRESP([]any{"sentinel", []any{"mymaster"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, _, err := decodeRESP(data, 0)
		if err != nil {
			return
		}
		r, err := ParseRole(reply)
		if err != nil {
			return
		}
		if r.Kind != RoleMaster && r.Kind != RoleSlave && r.Kind != RoleSentinel {
			t.Fatalf("unknown role kind %q accepted", r.Kind)
		}
	})
}

// shardsReply encodes shards the way go-redis hands a CLUSTER SHARDS reply to Do.
func shardsReply(shards []Shard, resp3 bool) any {
	asMap := func(kv []any) any {
		if !resp3 {
			return kv
		}
		m := map[any]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	out := []any{}
	for _, s := range shards {
		slots := []any{}
		for _, r := range s.Slots {
			slots = append(slots, int64(r.Start), int64(r.End))
		}
		nodes := []any{}
		for _, n := range s.Nodes {
			nodes = append(nodes, asMap([]any{
				"id", n.ID, "endpoint", n.Endpoint, "ip", n.IP, "hostname", n.Hostname,
				"port", int64(n.Port), "tls-port", int64(n.TLSPort), "role", n.Role,
				"replication-offset", n.ReplicationOffset, "health", n.Health,
			}))
		}
		out = append(out, asMap([]any{"slots", slots, "nodes", nodes}))
	}
	return out
}

// encodeRESP writes a reply value in RESP (maps as RESP3 "%"), for fuzz seeds.
func encodeRESP(v any) []byte {
	var b bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch x := v.(type) {
		case nil:
			b.WriteString("_\r\n")
		case string:
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(x), x)
		case int64:
			fmt.Fprintf(&b, ":%d\r\n", x)
		case []any:
			fmt.Fprintf(&b, "*%d\r\n", len(x))
			for _, e := range x {
				enc(e)
			}
		case map[any]any:
			fmt.Fprintf(&b, "%%%d\r\n", len(x))
			for k, e := range x {
				enc(k)
				enc(e)
			}
		default:
			panic(fmt.Sprintf("encodeRESP: %T", v))
		}
	}
	enc(v)
	return b.Bytes()
}

// decodeRESP is a small RESP2/RESP3 reader producing the same Go values go-redis's Do
// returns, so fuzzed bytes become realistic replies.
func decodeRESP(data []byte, depth int) (any, []byte, error) {
	if depth > 16 {
		return nil, nil, errors.New("too deep")
	}
	end := bytes.Index(data, []byte("\r\n"))
	if end < 1 {
		return nil, nil, errors.New("no line")
	}
	kind, line, rest := data[0], string(data[1:end]), data[end+2:]
	count := func() (int, error) {
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 || n > len(rest) {
			return 0, errors.New("bad length")
		}
		return n, nil
	}
	switch kind {
	case '+':
		return line, rest, nil
	case '-':
		return errors.New(line), rest, nil
	case ':':
		n, err := strconv.ParseInt(line, 10, 64)
		return n, rest, err
	case '_':
		return nil, rest, nil
	case '$':
		n, err := count()
		if err != nil || len(rest) < n+2 {
			return nil, nil, errors.New("short bulk")
		}
		return string(rest[:n]), rest[n+2:], nil
	case '*':
		n, err := count()
		if err != nil {
			return nil, nil, err
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			var v any
			if v, rest, err = decodeRESP(rest, depth+1); err != nil {
				return nil, nil, err
			}
			out = append(out, v)
		}
		return out, rest, nil
	case '%':
		n, err := count()
		if err != nil {
			return nil, nil, err
		}
		out := make(map[any]any, n)
		for i := 0; i < n; i++ {
			var k, v any
			if k, rest, err = decodeRESP(rest, depth+1); err != nil {
				return nil, nil, err
			}
			switch k.(type) {
			case string, int64, nil:
			default:
				return nil, nil, errors.New("unhashable key")
			}
			if v, rest, err = decodeRESP(rest, depth+1); err != nil {
				return nil, nil, err
			}
			out[k] = v
		}
		return out, rest, nil
	default:
		return nil, nil, errors.New("unknown type")
	}
}

func FuzzParseServerInfo(f *testing.F) {
	f.Add("# Server\r\nredis_version:7.0.15\r\n")
	f.Add("redis_version:7.2.4\nserver_name:valkey\nvalkey_version:8.0.1\n")
	f.Add("redis_version:-1.x\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseServerInfo(text)
		if err != nil {
			return
		}
		if !s.Known() || s.Name == "" || !s.Has(0, 0) {
			t.Fatalf("parsed %q into %+v", text, s)
		}
	})
}
