package redis

import (
	"reflect"
	"strings"
	"testing"
)

// CLUSTER INFO of a Redis 7.0 node in a healthy 6-node cluster.
const healthyClusterInfo = "cluster_state:ok\r\n" +
	"cluster_slots_assigned:16384\r\n" +
	"cluster_slots_ok:16384\r\n" +
	"cluster_slots_pfail:0\r\n" +
	"cluster_slots_fail:0\r\n" +
	"cluster_known_nodes:6\r\n" +
	"cluster_size:3\r\n" +
	"cluster_current_epoch:6\r\n" +
	"cluster_my_epoch:2\r\n" +
	"cluster_stats_messages_ping_sent:1483\r\n" +
	"cluster_stats_messages_pong_sent:1520\r\n" +
	"cluster_stats_messages_sent:3003\r\n" +
	"cluster_stats_messages_ping_received:1515\r\n" +
	"cluster_stats_messages_pong_received:1483\r\n" +
	"cluster_stats_messages_meet_received:5\r\n" +
	"cluster_stats_messages_received:3003\r\n" +
	"total_cluster_links_buffer_limit_exceeded:0\r\n"

func TestParseClusterInfo(t *testing.T) {
	tests := []struct {
		name string
		text string
		want ClusterInfo
	}{
		{
			name: "healthy",
			text: healthyClusterInfo,
			want: ClusterInfo{
				State: ClusterStateOK, SlotsAssigned: 16384, SlotsOK: 16384, KnownNodes: 6, Size: 3,
				CurrentEpoch: 6, MyEpoch: 2,
				Other: map[string]string{
					"cluster_stats_messages_ping_sent": "1483", "cluster_stats_messages_pong_sent": "1520",
					"cluster_stats_messages_sent": "3003", "cluster_stats_messages_ping_received": "1515",
					"cluster_stats_messages_pong_received": "1483", "cluster_stats_messages_meet_received": "5",
					"cluster_stats_messages_received": "3003", "total_cluster_links_buffer_limit_exceeded": "0",
				},
			},
		},
		{
			name: "a master failed",
			text: "cluster_state:fail\ncluster_slots_assigned:16384\ncluster_slots_ok:10923\ncluster_slots_pfail:0\n" +
				"cluster_slots_fail:5461\ncluster_known_nodes:6\ncluster_size:3\ncluster_current_epoch:7\ncluster_my_epoch:7\n\n",
			want: ClusterInfo{State: ClusterStateFail, SlotsAssigned: 16384, SlotsOK: 10923, SlotsFail: 5461,
				KnownNodes: 6, Size: 3, CurrentEpoch: 7, MyEpoch: 7},
		},
		{
			name: "fresh node",
			text: "cluster_state:fail\r\ncluster_slots_assigned:0\r\ncluster_known_nodes:1\r\ncluster_size:0  \r\n",
			want: ClusterInfo{State: ClusterStateFail, KnownNodes: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClusterInfo(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tt.want)
			}
			again, err := ParseClusterInfo(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip: %+v, %v", again, err)
			}
		})
	}
	if ci, _ := ParseClusterInfo(healthyClusterInfo); !ci.OK() {
		t.Error("healthy cluster not OK")
	}
}

func TestParseClusterInfoErrors(t *testing.T) {
	for text, wantErr := range map[string]string{
		"":                                       "no cluster_state",
		"cluster_known_nodes:6\r\n":              "no cluster_state",
		"cluster_state:ok\r\ncluster_size:x\r\n": "cluster_size",
		"cluster_state:ok\r\ncluster_my_epoch:-1\r\n":                        "cluster_my_epoch",
		"cluster_state:ok\r\ncluster_current_epoch:99999999999999999999\r\n": "cluster_current_epoch",
	} {
		if _, err := ParseClusterInfo(text); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseClusterInfo(%q) err = %v, want %q", text, err, wantErr)
		}
	}
}

func TestParseInfo(t *testing.T) {
	text := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" +
		"slave0:ip=10.244.1.10,port=6379,state=online,offset=8148,lag=0\r\n" +
		"master_replid:2f0fcdb7e1ad4d1c3e8c4fe0b4b6a9b3f4d2c1a0\r\n\r\n# Server\r\nredis_version:7.0.15\r\n" +
		"executable:/usr/bin/redis-server\r\nno-colon-line\r\n"
	got := ParseInfo(text)
	want := map[string]string{
		"role": "master", "connected_slaves": "1",
		"slave0":        "ip=10.244.1.10,port=6379,state=online,offset=8148,lag=0",
		"master_replid": "2f0fcdb7e1ad4d1c3e8c4fe0b4b6a9b3f4d2c1a0", "redis_version": "7.0.15",
		"executable": "/usr/bin/redis-server",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseInfo =\n%v\nwant\n%v", got, want)
	}
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  Role
	}{
		{
			name: "master with replicas, RESP2 strings inside",
			reply: []any{"master", int64(3129659), []any{
				[]any{"10.244.1.10", "6379", "3129242"},
				[]any{"10.244.2.5", "6379", "3129543"},
			}},
			want: Role{Kind: RoleMaster, ReplicationOffset: 3129659, Replicas: []RoleReplica{
				{"10.244.1.10", 6379, 3129242}, {"10.244.2.5", 6379, 3129543},
			}},
		},
		{
			name:  "master alone",
			reply: []any{"master", int64(0), []any{}},
			want:  Role{Kind: RoleMaster},
		},
		{
			name:  "replica connected",
			reply: []any{"slave", "10.244.0.12", int64(6379), "connected", int64(3167038)},
			want:  Role{Kind: RoleSlave, MasterIP: "10.244.0.12", MasterPort: 6379, ReplicationState: "connected", ReplicationOffset: 3167038},
		},
		{
			name:  "replica syncing before any offset",
			reply: []any{"slave", "10.244.0.12", int64(6379), "sync", int64(-1)},
			want:  Role{Kind: RoleSlave, MasterIP: "10.244.0.12", MasterPort: 6379, ReplicationState: "sync", ReplicationOffset: -1},
		},
		{
			name:  "sentinel",
			reply: []any{"sentinel", []any{"mymaster", "other"}},
			want:  Role{Kind: RoleSentinel, MasterNames: []string{"mymaster", "other"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRole(tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if r, _ := ParseRole([]any{"slave", "h", int64(1), "connected", int64(5)}); !r.LinkUp() {
		t.Error("connected replica link not up")
	}
	for _, bad := range []any{nil, "master", []any{}, []any{"leader"}, []any{"master", "x", []any{}},
		[]any{"master", int64(1), []any{[]any{"ip", "port"}}}, []any{"slave", "h", int64(1)}} {
		if _, err := ParseRole(bad); err == nil {
			t.Errorf("ParseRole(%#v) accepted", bad)
		}
	}
}
