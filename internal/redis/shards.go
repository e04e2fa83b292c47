package redis

import (
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// Shard is one entry of CLUSTER SHARDS: the slots a master serves and the nodes holding them.
type Shard struct {
	Slots []SlotRange
	Nodes []ShardNode
}

// ShardNode is a node as CLUSTER SHARDS describes it.
type ShardNode struct {
	ID                string
	Endpoint          string // what clients should connect to: IP, hostname or "?"
	IP                string
	Hostname          string
	Port              int
	TLSPort           int
	Role              string // "master" or "replica"
	ReplicationOffset int64
	Health            string // "online", "failed" or "loading"
}

// Shard node roles and health values.
const (
	ShardRoleMaster  = "master"
	ShardRoleReplica = "replica"
	HealthOnline     = "online"
	HealthFailed     = "failed"
	HealthLoading    = "loading"
)

// Master is the shard's master node, if it lists one.
func (s Shard) Master() (ShardNode, bool) {
	for _, n := range s.Nodes {
		if n.Role == ShardRoleMaster {
			return n, true
		}
	}
	return ShardNode{}, false
}

// ParseClusterShards parses the CLUSTER SHARDS reply as go-redis returns it from Do: an
// array of shards, each a RESP3 map or a RESP2 flat key/value array of "slots" (flat
// start/end integers) and "nodes" (array of maps). Unknown keys are ignored.
func ParseClusterShards(reply any) ([]Shard, error) {
	list, err := replyArray(reply)
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	shards := make([]Shard, 0, len(list))
	for i, entry := range list {
		s, err := parseShard(entry)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SHARDS shard %d: %w", i, err)
		}
		shards = append(shards, s)
	}
	return shards, nil
}

func parseShard(v any) (Shard, error) {
	pairs, err := replyMap(v)
	if err != nil {
		return Shard{}, err
	}
	var s Shard
	for _, p := range pairs {
		switch p.key {
		case "slots":
			if s.Slots, err = parseShardSlots(p.value); err != nil {
				return Shard{}, fmt.Errorf("slots: %w", err)
			}
		case "nodes":
			if s.Nodes, err = parseShardNodes(p.value); err != nil {
				return Shard{}, err
			}
		}
	}
	return s, nil
}

// parseShardSlots parses a shard's "slots": flat start/end pairs, each a valid range.
func parseShardSlots(v any) ([]SlotRange, error) {
	bounds, err := replyArray(v)
	if err != nil {
		return nil, err
	}
	if len(bounds)%2 != 0 {
		return nil, fmt.Errorf("odd number of bounds %d", len(bounds))
	}
	var slots []SlotRange
	for j := 0; j < len(bounds); j += 2 {
		start, err := replyInt(bounds[j])
		if err != nil {
			return nil, err
		}
		end, err := replyInt(bounds[j+1])
		if err != nil {
			return nil, err
		}
		r := SlotRange{Start: int(start), End: int(end)}
		if start < 0 || end > MaxSlot || !r.Valid() {
			return nil, fmt.Errorf("invalid range %d-%d", start, end)
		}
		slots = append(slots, r)
	}
	return slots, nil
}

// parseShardNodes parses a shard's "nodes": an array of node maps.
func parseShardNodes(v any) ([]ShardNode, error) {
	nodes, err := replyArray(v)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	var out []ShardNode
	for j, nv := range nodes {
		n, err := parseShardNode(nv)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", j, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseShardNode(v any) (ShardNode, error) {
	pairs, err := replyMap(v)
	if err != nil {
		return ShardNode{}, err
	}
	var n ShardNode
	for _, p := range pairs {
		var err error
		switch p.key {
		case "id":
			var id string
			if id, err = replyString(p.value); err == nil {
				n.ID, err = parseNodeID(id)
			}
		case "endpoint":
			n.Endpoint, err = replyString(p.value)
		case "ip":
			n.IP, err = replyString(p.value)
		case "hostname":
			n.Hostname, err = replyString(p.value)
		case "port":
			n.Port, err = replyPort(p.value)
		case "tls-port":
			n.TLSPort, err = replyPort(p.value)
		case "role":
			n.Role, err = replyString(p.value)
		case "replication-offset":
			n.ReplicationOffset, err = replyInt(p.value)
		case "health":
			n.Health, err = replyString(p.value)
		}
		if err != nil {
			return ShardNode{}, fmt.Errorf("%s: %w", p.key, err)
		}
	}
	if n.ID == "" {
		return ShardNode{}, fmt.Errorf("no id")
	}
	return n, nil
}

func replyPort(v any) (int, error) {
	p, err := replyInt(v)
	if err != nil {
		return 0, err
	}
	if p < 0 || p > 65535 {
		return 0, fmt.Errorf("port %d out of range", p)
	}
	return int(p), nil
}

// ShardsFromGoRedis converts go-redis's typed ClusterShards() result, validating it like
// ParseClusterShards does.
func ShardsFromGoRedis(in []goredis.ClusterShard) ([]Shard, error) {
	out := make([]Shard, 0, len(in))
	for i, gs := range in {
		var s Shard
		for _, r := range gs.Slots {
			sr := SlotRange{Start: int(r.Start), End: int(r.End)}
			if r.Start < 0 || r.End > MaxSlot || !sr.Valid() {
				return nil, fmt.Errorf("CLUSTER SHARDS shard %d: invalid range %d-%d", i, r.Start, r.End)
			}
			s.Slots = append(s.Slots, sr)
		}
		for _, gn := range gs.Nodes {
			id, err := parseNodeID(gn.ID)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER SHARDS shard %d: %w", i, err)
			}
			if gn.Port < 0 || gn.Port > 65535 || gn.TLSPort < 0 || gn.TLSPort > 65535 {
				return nil, fmt.Errorf("CLUSTER SHARDS shard %d node %s: port out of range", i, id)
			}
			s.Nodes = append(s.Nodes, ShardNode{
				ID: id, Endpoint: gn.Endpoint, IP: gn.IP, Hostname: gn.Hostname,
				Port: int(gn.Port), TLSPort: int(gn.TLSPort), Role: gn.Role,
				ReplicationOffset: gn.ReplicationOffset, Health: gn.Health,
			})
		}
		out = append(out, s)
	}
	return out, nil
}

// TopologyFromShards builds the CLUSTER NODES model from CLUSTER SHARDS so the same helpers
// (masters, replicas, coverage) apply. CLUSTER SHARDS carries less: bus ports, epochs,
// ping times, link state and the "myself" flag stay zero; health "failed" becomes FlagFail;
// the TLS port stands in for the port when only it is set.
func TopologyFromShards(shards []Shard) Topology {
	var t Topology
	for _, s := range shards {
		master, hasMaster := s.Master()
		for _, sn := range s.Nodes {
			n := Node{
				ID:   sn.ID,
				Addr: Address{IP: sn.IP, Port: sn.Port, Hostname: sn.Hostname},
			}
			if n.Addr.Port == 0 {
				n.Addr.Port = sn.TLSPort
			}
			if sn.Role == ShardRoleMaster {
				n.Flags |= FlagMaster
				n.Slots = append([]SlotRange(nil), s.Slots...)
			} else {
				n.Flags |= FlagReplica
				if hasMaster {
					n.MasterID = master.ID
				}
			}
			if sn.Health == HealthFailed {
				n.Flags |= FlagFail
			}
			if sn.IP == "" {
				n.Flags |= FlagNoAddr
			}
			t.Nodes = append(t.Nodes, n)
		}
	}
	return t
}
