package redis

import (
	"reflect"
	"strings"
	"testing"
)

// Node IDs used across the tests; Redis generates 40 random hex characters.
const (
	idA = "7bcf39e4f06614da599a25eeefc7bff3ac751ea3"
	idB = "04613024c1ac78f9cb05d1667e5ccd754fdcf361"
	idC = "0fbe5aeb845b9fa3fce15cbfb689596e34a8b944"
	idD = "fbe37d0831ce1ffd8dbda44f39339fb4119e2b2d"
	idE = "a7f8114121a951e3bf1ae62a0d05b10d627690d1"
	idF = "0d673e88c1757272125fb846a36869a2cb06b2bd"
	idG = "4f38c4deb976dc64cc5919976981dc0baee63efd"
)

// A healthy 3-master/3-replica cluster on Kubernetes as Redis 7 prints it with
// cluster-announce-hostname set, seen from the first master.
const healthyNodes = idA + " 10.244.0.12:6379@16379,redis-cluster-leader-0.redis-cluster-leader-headless.default.svc myself,master - 0 0 1 connected 0-5460\n" +
	idB + " 10.244.1.9:6379@16379,redis-cluster-leader-1.redis-cluster-leader-headless.default.svc master - 0 1718000001234 2 connected 5461-10922\n" +
	idC + " 10.244.2.4:6379@16379,redis-cluster-leader-2.redis-cluster-leader-headless.default.svc master - 0 1718000002001 3 connected 10923-16383\n" +
	idD + " 10.244.1.10:6379@16379,redis-cluster-follower-0.redis-cluster-follower-headless.default.svc slave " + idA + " 0 1718000001500 1 connected\n" +
	idE + " 10.244.2.5:6379@16379,redis-cluster-follower-1.redis-cluster-follower-headless.default.svc slave " + idB + " 0 1718000000990 2 connected\n" +
	idF + " 10.244.0.13:6379@16379,redis-cluster-follower-2.redis-cluster-follower-headless.default.svc slave " + idC + " 0 1718000002500 3 connected\n"

// A cluster in trouble, seen from a replica: a master failed and lost its address, a node
// is only suspected, a new pod is in the handshake, a slot is being moved, and the text has
// CRLF line ends, blank lines and trailing spaces.
const troubledNodes = "\r\n" +
	idA + " 10.244.0.12:6379@16379 master - 0 1718000001000 7 connected 0-5460 5462 \r\n" +
	idB + " :0@0 master,fail,noaddr - 1718000000000 1717999990000 2 disconnected 5463-10922\r\n" +
	idC + " 10.244.2.4:6379@16379 master,fail? - 1718000003000 1718000000500 3 connected 10923-16383 5461\r\n" +
	idD + " 10.244.1.10:6379@16379 myself,slave " + idA + " 0 0 1 connected\r\n" +
	idE + " 10.244.2.5:6379@16379 slave,nofailover " + idB + " 0 1718000000990 2 connected\r\n" +
	"   \r\n" +
	idG + " 10.244.3.2:6379@16379 handshake - 1718000004000 0 0 disconnected\r\n"

func TestParseClusterNodesHealthy(t *testing.T) {
	topo, err := ParseClusterNodes(healthyNodes)
	if err != nil {
		t.Fatalf("ParseClusterNodes: %v", err)
	}
	if len(topo.Nodes) != 6 {
		t.Fatalf("got %d nodes, want 6", len(topo.Nodes))
	}
	want := Node{
		ID: idA,
		Addr: Address{
			IP: "10.244.0.12", Port: 6379, BusPort: 16379,
			Hostname: "redis-cluster-leader-0.redis-cluster-leader-headless.default.svc",
		},
		Flags: FlagMyself | FlagMaster,
		Link:  LinkConnected, ConfigEpoch: 1,
		Slots: []SlotRange{{0, 5460}},
	}
	if !reflect.DeepEqual(topo.Nodes[0], want) {
		t.Errorf("node 0:\n got %+v\nwant %+v", topo.Nodes[0], want)
	}
	replica := topo.Nodes[4]
	if replica.MasterID != idB || !replica.IsReplica() || replica.PongReceived != 1718000000990 || replica.ConfigEpoch != 2 {
		t.Errorf("replica parsed as %+v", replica)
	}
	if replica.Addr.HostPort() != "10.244.2.5:6379" {
		t.Errorf("HostPort = %q", replica.Addr.HostPort())
	}

	if got := ids(topo.Masters()); !reflect.DeepEqual(got, []string{idA, idB, idC}) {
		t.Errorf("Masters = %v", got)
	}
	for _, m := range topo.Masters() {
		if reps := topo.ReplicasOf(m.ID); len(reps) != 1 {
			t.Errorf("master %s has %d replicas, want 1", m.ID, len(reps))
		}
	}
	if !topo.AllSlotsCovered() || len(topo.UnassignedSlots()) != 0 {
		t.Errorf("slots not covered: %v", topo.UnassignedSlots())
	}
	if me, ok := topo.Myself(); !ok || me.ID != idA {
		t.Errorf("Myself = %v, %v", me.ID, ok)
	}
	if n, ok := topo.NodeByAddr("10.244.2.4:6379"); !ok || n.ID != idC {
		t.Errorf("NodeByAddr(ip) = %v, %v", n.ID, ok)
	}
	if n, ok := topo.NodeByAddr("redis-cluster-follower-2.redis-cluster-follower-headless.default.svc:6379"); !ok || n.ID != idF {
		t.Errorf("NodeByAddr(hostname) = %v, %v", n.ID, ok)
	}
	if _, ok := topo.NodeByAddr("10.244.2.4:6380"); ok {
		t.Error("NodeByAddr matched a wrong port")
	}
	if n, ok := topo.SlotOwner(10922); !ok || n.ID != idB {
		t.Errorf("SlotOwner(10922) = %v, %v", n.ID, ok)
	}
	if len(topo.FailedNodes())+len(topo.SuspectedNodes())+len(topo.HandshakeNodes())+len(topo.NodesWithoutAddr()) != 0 {
		t.Error("healthy cluster reports failed, suspected, handshake or address-less nodes")
	}
}

func TestParseClusterNodesTroubled(t *testing.T) {
	topo, err := ParseClusterNodes(troubledNodes)
	if err != nil {
		t.Fatalf("ParseClusterNodes: %v", err)
	}
	if len(topo.Nodes) != 6 {
		t.Fatalf("got %d nodes, want 6", len(topo.Nodes))
	}
	if got := ids(topo.FailedNodes()); !reflect.DeepEqual(got, []string{idB}) {
		t.Errorf("FailedNodes = %v", got)
	}
	if got := ids(topo.SuspectedNodes()); !reflect.DeepEqual(got, []string{idC}) {
		t.Errorf("SuspectedNodes = %v", got)
	}
	if got := ids(topo.HandshakeNodes()); !reflect.DeepEqual(got, []string{idG}) {
		t.Errorf("HandshakeNodes = %v", got)
	}
	if got := ids(topo.NodesWithoutAddr()); !reflect.DeepEqual(got, []string{idB}) {
		t.Errorf("NodesWithoutAddr = %v", got)
	}
	failed, _ := topo.NodeByID(idB)
	if failed.Link != LinkDisconnected || failed.PingSent != 1718000000000 || failed.Addr.HostPort() != "" {
		t.Errorf("failed node parsed as %+v", failed)
	}
	if me, ok := topo.Myself(); !ok || me.ID != idD || me.MasterID != idA {
		t.Errorf("Myself = %+v", me)
	}
	if e, _ := topo.NodeByID(idE); !e.Is(FlagNoFailover) || !e.IsReplica() {
		t.Errorf("nofailover replica flags = %v", e.Flags)
	}
	if h, _ := topo.NodeByID(idG); h.IsMaster() || h.IsReplica() || h.Flags != FlagHandshake {
		t.Errorf("handshake node flags = %v", h.Flags)
	}
	// Slot 5461 moved to C and 5462 to A: still fully assigned, failed owner included.
	if !topo.AllSlotsCovered() {
		t.Errorf("unassigned: %v", topo.UnassignedSlots())
	}
	if a, _ := topo.NodeByID(idA); a.SlotCount() != 5462 || !a.OwnsSlot(5462) || a.OwnsSlot(5461) {
		t.Errorf("A owns %d slots: %v", a.SlotCount(), a.Slots)
	}
	// The failed master stays a master for the model; the controller decides what to do.
	if got := len(topo.Masters()); got != 3 {
		t.Errorf("Masters = %d, want 3", got)
	}
}

func TestParseClusterNodesMigration(t *testing.T) {
	// Both ends of a slot move, as the source and the target print them during resharding.
	source := idA + " 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [5460->-" + idB + "] [100->-" + idC + "]\n" +
		idB + " 127.0.0.1:30002@40002 master - 0 1718000001234 2 connected 5461-10922\n" +
		idC + " 127.0.0.1:30003@40003 master - 0 1718000001234 3 connected 10923-16383\n"
	target := idB + " 127.0.0.1:30002@40002 myself,master - 0 0 2 connected 5461-10922 [5460-<-" + idA + "]\n" +
		idA + " 127.0.0.1:30001@40001 master - 0 1718000001234 1 connected 0-5460\n"

	src, err := ParseClusterNodes(source)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := src.NodeByID(idA)
	wantMigrating := []SlotMigration{{5460, idB}, {100, idC}}
	if !reflect.DeepEqual(a.Migrating, wantMigrating) || a.Importing != nil {
		t.Errorf("migrating = %+v importing = %+v", a.Migrating, a.Importing)
	}
	if !reflect.DeepEqual(a.Slots, []SlotRange{{0, 5460}}) || a.SlotCount() != 5461 {
		t.Errorf("migration entries counted as owned: %v", a.Slots)
	}
	if got := src.MigratingSlots(); !reflect.DeepEqual(got, map[string][]SlotMigration{idA: wantMigrating}) {
		t.Errorf("MigratingSlots = %v", got)
	}

	dst, err := ParseClusterNodes(target)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := dst.NodeByID(idB)
	if !reflect.DeepEqual(b.Importing, []SlotMigration{{5460, idA}}) || b.Migrating != nil || b.OwnsSlot(5460) {
		t.Errorf("importing = %+v migrating = %+v slots = %v", b.Importing, b.Migrating, b.Slots)
	}
	if got := dst.ImportingSlots(); len(got[idB]) != 1 {
		t.Errorf("ImportingSlots = %v", got)
	}
	if got := dst.UnassignedSlots(); !reflect.DeepEqual(got, []SlotRange{{10923, 16383}}) {
		t.Errorf("UnassignedSlots = %v", got)
	}
}

func TestParseClusterNodeLineForms(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Node
	}{
		{
			name: "fresh node before any MEET",
			line: idA + " :6379@16379 myself,master - 0 0 0 connected",
			want: Node{ID: idA, Addr: Address{Port: 6379, BusPort: 16379}, Flags: FlagMyself | FlagMaster, Link: LinkConnected},
		},
		{
			name: "single slots and ranges mixed",
			line: idA + " 127.0.0.1:7000@17000 master - 0 1718000000000 4 connected 0 2-3 5 16383",
			want: Node{
				ID: idA, Addr: Address{IP: "127.0.0.1", Port: 7000, BusPort: 17000}, Flags: FlagMaster,
				PongReceived: 1718000000000, ConfigEpoch: 4, Link: LinkConnected,
				Slots: []SlotRange{{0, 0}, {2, 3}, {5, 5}, {16383, 16383}},
			},
		},
		{
			name: "IPv6 as Redis prints it",
			line: idA + " fd00:10:244::5:6379@16379 slave " + idB + " 0 1718000000000 2 connected",
			want: Node{
				ID: idA, Addr: Address{IP: "fd00:10:244::5", Port: 6379, BusPort: 16379}, Flags: FlagReplica,
				MasterID: idB, PongReceived: 1718000000000, ConfigEpoch: 2, Link: LinkConnected,
			},
		},
		{
			name: "auxiliary fields of Redis 7.2 without hostname",
			line: idA + " 10.0.0.1:6379@16379,,tls-port=0,shard-id=" + idC + " master - 0 0 1 connected 0-16383",
			want: Node{
				ID:    idA,
				Addr:  Address{IP: "10.0.0.1", Port: 6379, BusPort: 16379, Aux: map[string]string{"tls-port": "0", "shard-id": idC}},
				Flags: FlagMaster, ConfigEpoch: 1, Link: LinkConnected, Slots: []SlotRange{{0, 16383}},
			},
		},
		{
			name: "pre-4.0 address without bus port and noflags",
			line: idA + " 10.0.0.1:6379 noflags - 0 0 0 disconnected",
			want: Node{ID: idA, Addr: Address{IP: "10.0.0.1", Port: 6379}, Link: LinkDisconnected},
		},
		{
			name: "unknown flag from a newer Redis is kept",
			line: idA + " 10.0.0.1:6379@16379 master,shiny - 0 0 9 connected",
			want: Node{ID: idA, Addr: Address{IP: "10.0.0.1", Port: 6379, BusPort: 16379}, Flags: FlagMaster,
				UnknownFlags: []string{"shiny"}, ConfigEpoch: 9, Link: LinkConnected},
		},
		{
			name: "tabs and repeated spaces",
			line: idA + "\t10.0.0.1:6379@16379  master\t-  0 0 1 connected   1-2",
			want: Node{ID: idA, Addr: Address{IP: "10.0.0.1", Port: 6379, BusPort: 16379}, Flags: FlagMaster,
				ConfigEpoch: 1, Link: LinkConnected, Slots: []SlotRange{{1, 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClusterNodeLine(tt.line)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tt.want)
			}
			again, err := ParseClusterNodeLine(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseClusterNodesErrors(t *testing.T) {
	good := idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected 0-5460"
	tests := []struct {
		name, text, wantErr string
	}{
		{"too few fields", idA + " 10.0.0.1:6379@16379 master - 0 0 1", "at least 8 fields"},
		{"short node ID", "abc 10.0.0.1:6379@16379 master - 0 0 1 connected", "node ID"},
		{"non-hex node ID", strings.Repeat("z", 40) + " 10.0.0.1:6379@16379 master - 0 0 1 connected", "not hexadecimal"},
		{"bad master ID", idA + " 10.0.0.1:6379@16379 slave nope 0 0 1 connected", "master"},
		{"slot past the end", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected 0-16384", "out of range"},
		{"reversed range", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected 10-5", "end before start"},
		{"negative slot", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected -5", "not a number"},
		{"bad link state", idA + " 10.0.0.1:6379@16379 master - 0 0 1 linked", "link state"},
		{"port out of range", idA + " 10.0.0.1:65536@16379 master - 0 0 1 connected", "port"},
		{"no port", idA + " 10.0.0.1@16379 master - 0 0 1 connected", "no port"},
		{"bad bus port", idA + " 10.0.0.1:6379@x master - 0 0 1 connected", "bus port"},
		{"bad aux field", idA + " 10.0.0.1:6379@16379,host,junk master - 0 0 1 connected", "auxiliary"},
		{"empty flag", idA + " 10.0.0.1:6379@16379 master,,slave - 0 0 1 connected", "empty flag"},
		{"negative epoch", idA + " 10.0.0.1:6379@16379 master - 0 0 -1 connected", "config epoch"},
		{"bad ping", idA + " 10.0.0.1:6379@16379 master - x 0 1 connected", "ping-sent"},
		{"unterminated migration", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected [5->-" + idB, "missing ]"},
		{"migration without arrow", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected [5-" + idB + "]", "neither"},
		{"migration of a bad slot", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected [16384->-" + idB + "]", "out of range"},
		{"migration to a bad node", idA + " 10.0.0.1:6379@16379 master - 0 0 1 connected [5-<-xyz]", "node ID"},
		{"duplicate node", good + "\n" + good + "\n", "listed twice"},
		{"error names the line", good + "\n\n" + idB + " garbage", "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseClusterNodes(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseClusterNodesEmpty(t *testing.T) {
	for _, text := range []string{"", "\n", " \r\n\r\n  "} {
		topo, err := ParseClusterNodes(text)
		if err != nil || len(topo.Nodes) != 0 {
			t.Errorf("ParseClusterNodes(%q) = %v, %v", text, topo, err)
		}
		if topo.AllSlotsCovered() {
			t.Errorf("empty topology covers all slots")
		}
		if got := topo.UnassignedSlots(); !reflect.DeepEqual(got, []SlotRange{{0, MaxSlot}}) {
			t.Errorf("UnassignedSlots = %v", got)
		}
	}
}

func TestTopologyRoundTrip(t *testing.T) {
	for _, text := range []string{healthyNodes, troubledNodes} {
		topo, err := ParseClusterNodes(text)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseClusterNodes(topo.String())
		if err != nil || !reflect.DeepEqual(again, topo) {
			t.Fatalf("round trip lost data:\n%s\n%v", topo.String(), err)
		}
	}
	// Rendering a healthy, canonical reply reproduces it byte for byte.
	topo, _ := ParseClusterNodes(healthyNodes)
	if topo.String() != healthyNodes {
		t.Errorf("render differs:\n%s\nwant\n%s", topo.String(), healthyNodes)
	}
}

func TestSlotHelpers(t *testing.T) {
	split := SplitSlots(3)
	if !reflect.DeepEqual(split, []SlotRange{{0, 5461}, {5462, 10922}, {10923, 16383}}) {
		t.Errorf("SplitSlots(3) = %v", split)
	}
	for _, n := range []int{1, 2, 3, 5, 7, 100} {
		ranges := SplitSlots(n)
		if len(ranges) != n || CountSlots(ranges) != SlotCount || len(MissingSlots(ranges)) != 0 {
			t.Errorf("SplitSlots(%d) = %v", n, ranges)
		}
	}
	if SplitSlots(0) != nil {
		t.Error("SplitSlots(0) not nil")
	}
	got := NormalizeSlotRanges([]SlotRange{{10, 20}, {0, 5}, {6, 8}, {15, 30}, {40, 40}})
	if !reflect.DeepEqual(got, []SlotRange{{0, 8}, {10, 30}, {40, 40}}) {
		t.Errorf("NormalizeSlotRanges = %v", got)
	}
	if got := MissingSlots([]SlotRange{{1, 10}, {12, MaxSlot - 1}}); !reflect.DeepEqual(got, []SlotRange{{0, 0}, {11, 11}, {MaxSlot, MaxSlot}}) {
		t.Errorf("MissingSlots = %v", got)
	}
	if CountSlots([]SlotRange{{0, 9}, {5, 14}}) != 15 {
		t.Error("CountSlots counts overlaps twice")
	}
	for _, s := range []string{"0", "16383", "0-16383", "5-5"} {
		if _, err := ParseSlotRange(s); err != nil {
			t.Errorf("ParseSlotRange(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "-", "1-", "-1", "+1", "16384", "3-2", "a", "1-2-3"} {
		if r, err := ParseSlotRange(s); err == nil {
			t.Errorf("ParseSlotRange(%q) = %v, want error", s, r)
		}
	}
}

func ids(nodes []Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}
