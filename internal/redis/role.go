package redis

import (
	"fmt"
	"strconv"
)

// RoleKind is the first element of the ROLE reply.
type RoleKind string

// Roles reported by ROLE.
const (
	RoleMaster   RoleKind = "master"
	RoleSlave    RoleKind = "slave"
	RoleSentinel RoleKind = "sentinel"
)

// Role is the parsed ROLE reply.
type Role struct {
	Kind RoleKind
	// ReplicationOffset is the master's offset for a master, the processed offset for a replica.
	ReplicationOffset int64
	// Replicas connected to a master.
	Replicas []RoleReplica
	// For a replica: its master and the state of the link ("connect", "connecting", "sync", "connected").
	MasterIP         string
	MasterPort       int
	ReplicationState string
	// For a sentinel: the monitored master names.
	MasterNames []string
}

// RoleReplica is a replica as its master lists it in ROLE.
type RoleReplica struct {
	IP     string
	Port   int
	Offset int64
}

// LinkUp reports whether a replica's link to its master is up.
func (r Role) LinkUp() bool { return r.Kind == RoleSlave && r.ReplicationState == "connected" }

// NoMasterHost and NoMasterPort are the master of a replica that waits to be told its master:
// port 0 on loopback, where no server can listen, so it never links and, never linked, refuses
// to be synced from (NOMASTERLINK). Replication pods start as its replicas.
const (
	NoMasterHost = "127.0.0.1"
	NoMasterPort = 0
)

// WaitsForMaster: the server is a replica of NoMasterHost, as it started: no one told it its
// master since.
func (r Role) WaitsForMaster() bool {
	return r.Kind == RoleSlave && r.MasterIP == NoMasterHost && r.MasterPort == NoMasterPort
}

// ParseRole parses the ROLE reply as go-redis returns it from Do.
func ParseRole(reply any) (Role, error) {
	a, err := replyArray(reply)
	if err != nil {
		return Role{}, fmt.Errorf("ROLE: %w", err)
	}
	if len(a) == 0 {
		return Role{}, fmt.Errorf("ROLE: empty reply")
	}
	kind, err := replyString(a[0])
	if err != nil {
		return Role{}, fmt.Errorf("ROLE: %w", err)
	}
	switch RoleKind(kind) {
	case RoleMaster:
		return parseMasterRole(a)
	case RoleSlave:
		return parseSlaveRole(a)
	case RoleSentinel:
		return parseSentinelRole(a)
	default:
		return Role{}, fmt.Errorf("ROLE: unknown role %s", strconv.Quote(kind))
	}
}

// parseMasterRole parses ["master", offset, [[ip, port, offset], ...]].
func parseMasterRole(a []any) (Role, error) {
	if len(a) < 3 {
		return Role{}, fmt.Errorf("ROLE master: want 3 elements, got %d", len(a))
	}
	r := Role{Kind: RoleMaster}
	var err error
	if r.ReplicationOffset, err = replyInt(a[1]); err != nil {
		return Role{}, fmt.Errorf("ROLE master offset: %w", err)
	}
	replicas, err := replyArray(a[2])
	if err != nil {
		return Role{}, fmt.Errorf("ROLE master replicas: %w", err)
	}
	for i, rep := range replicas {
		rr, err := parseRoleReplica(i, rep)
		if err != nil {
			return Role{}, err
		}
		r.Replicas = append(r.Replicas, rr)
	}
	return r, nil
}

// parseRoleReplica parses the i-th [ip, port, offset] of a master's ROLE reply.
func parseRoleReplica(i int, v any) (RoleReplica, error) {
	fields, err := replyArray(v)
	if err != nil || len(fields) < 3 {
		return RoleReplica{}, fmt.Errorf("ROLE master replica %d: want [ip, port, offset]", i)
	}
	var rr RoleReplica
	if rr.IP, err = replyString(fields[0]); err != nil {
		return RoleReplica{}, fmt.Errorf("ROLE master replica %d ip: %w", i, err)
	}
	port, err := replyInt(fields[1])
	if err != nil {
		return RoleReplica{}, fmt.Errorf("ROLE master replica %d port: %w", i, err)
	}
	rr.Port = int(port)
	if rr.Offset, err = replyInt(fields[2]); err != nil {
		return RoleReplica{}, fmt.Errorf("ROLE master replica %d offset: %w", i, err)
	}
	return rr, nil
}

// parseSlaveRole parses ["slave", master ip, master port, state, offset].
func parseSlaveRole(a []any) (Role, error) {
	if len(a) < 5 {
		return Role{}, fmt.Errorf("ROLE slave: want 5 elements, got %d", len(a))
	}
	r := Role{Kind: RoleSlave}
	var err error
	if r.MasterIP, err = replyString(a[1]); err != nil {
		return Role{}, fmt.Errorf("ROLE slave master ip: %w", err)
	}
	port, err := replyInt(a[2])
	if err != nil {
		return Role{}, fmt.Errorf("ROLE slave master port: %w", err)
	}
	r.MasterPort = int(port)
	if r.ReplicationState, err = replyString(a[3]); err != nil {
		return Role{}, fmt.Errorf("ROLE slave state: %w", err)
	}
	if r.ReplicationOffset, err = replyInt(a[4]); err != nil {
		return Role{}, fmt.Errorf("ROLE slave offset: %w", err)
	}
	return r, nil
}

// parseSentinelRole parses ["sentinel", [master name, ...]]; the list is optional.
func parseSentinelRole(a []any) (Role, error) {
	r := Role{Kind: RoleSentinel}
	if len(a) < 2 {
		return r, nil
	}
	names, err := replyArray(a[1])
	if err != nil {
		return Role{}, fmt.Errorf("ROLE sentinel: %w", err)
	}
	for _, n := range names {
		s, err := replyString(n)
		if err != nil {
			return Role{}, fmt.Errorf("ROLE sentinel: %w", err)
		}
		r.MasterNames = append(r.MasterNames, s)
	}
	return r, nil
}
