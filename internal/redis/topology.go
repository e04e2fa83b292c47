package redis

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// NodeIDLength is the length of a cluster node ID: 40 hexadecimal characters.
const NodeIDLength = 40

// NodeFlags is the set of flags CLUSTER NODES reports for a node.
type NodeFlags uint16

// Flags in the order Redis prints them.
const (
	FlagMyself     NodeFlags = 1 << iota // the node answering the command
	FlagMaster                           // primary
	FlagReplica                          // "slave"
	FlagPFail                            // "fail?": this node suspects the node is down
	FlagFail                             // the majority of masters agreed the node is down
	FlagHandshake                        // not yet trusted, still in the MEET handshake
	FlagNoAddr                           // address unknown
	FlagNoFailover                       // replica that will not try to fail over
)

var flagNames = []struct {
	flag NodeFlags
	name string
}{
	{FlagMyself, "myself"},
	{FlagMaster, "master"},
	{FlagReplica, "slave"},
	{FlagPFail, "fail?"},
	{FlagFail, "fail"},
	{FlagHandshake, "handshake"},
	{FlagNoAddr, "noaddr"},
	{FlagNoFailover, "nofailover"},
}

// Has reports whether every flag of f is set.
func (fl NodeFlags) Has(f NodeFlags) bool { return fl&f == f }

// String renders the flags as CLUSTER NODES does, "noflags" when none is set.
func (fl NodeFlags) String() string {
	var names []string
	for _, fn := range flagNames {
		if fl.Has(fn.flag) {
			names = append(names, fn.name)
		}
	}
	if len(names) == 0 {
		return "noflags"
	}
	return strings.Join(names, ",")
}

// LinkState is the state of the cluster bus link to a node.
type LinkState string

// Link states of CLUSTER NODES.
const (
	LinkConnected    LinkState = "connected"
	LinkDisconnected LinkState = "disconnected"
)

// Address is where a node serves clients and the cluster bus: "ip:port@cport[,hostname]".
// Nodes whose address is unknown have an empty IP.
type Address struct {
	IP       string
	Port     int
	BusPort  int
	Hostname string
	// Aux holds "key=value" auxiliary fields that Redis 7.2+ may append (shard-id, tls-port).
	Aux map[string]string
}

// HostPort is "ip:port", bracketed for IPv6, ready for dialing. It is empty when the IP is unknown.
func (a Address) HostPort() string {
	if a.IP == "" {
		return ""
	}
	return net.JoinHostPort(a.IP, strconv.Itoa(a.Port))
}

// String renders the address as CLUSTER NODES does.
func (a Address) String() string {
	var b strings.Builder
	b.WriteString(a.IP)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(a.Port))
	b.WriteByte('@')
	b.WriteString(strconv.Itoa(a.BusPort))
	if a.Hostname != "" || len(a.Aux) > 0 {
		b.WriteByte(',')
		b.WriteString(a.Hostname)
	}
	keys := make([]string, 0, len(a.Aux))
	for k := range a.Aux {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(',')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(a.Aux[k])
	}
	return b.String()
}

// ParseAddress parses the address field of CLUSTER NODES: "ip:port@cport[,hostname[,key=value...]]".
// The "@cport" part is optional (Redis before 4.0 did not print it).
func ParseAddress(s string) (Address, error) {
	hostPort, rest, hasBus := strings.Cut(s, "@")
	var extras []string
	if hasBus {
		parts := strings.Split(rest, ",")
		busPort, err := parsePort(parts[0])
		if err != nil {
			return Address{}, fmt.Errorf("address %q: bus port: %w", s, err)
		}
		extras = parts[1:]
		addr, err := parseHostPort(hostPort)
		if err != nil {
			return Address{}, fmt.Errorf("address %q: %w", s, err)
		}
		addr.BusPort = busPort
		if err := addr.parseExtras(extras); err != nil {
			return Address{}, fmt.Errorf("address %q: %w", s, err)
		}
		return addr, nil
	}
	addr, err := parseHostPort(hostPort)
	if err != nil {
		return Address{}, fmt.Errorf("address %q: %w", s, err)
	}
	return addr, nil
}

func parseHostPort(s string) (Address, error) {
	colon := strings.LastIndexByte(s, ':')
	if colon < 0 {
		return Address{}, fmt.Errorf("no port")
	}
	ip := s[:colon]
	// Redis prints IPv6 addresses bare; accept the bracketed form too.
	if len(ip) >= 2 && ip[0] == '[' && ip[len(ip)-1] == ']' {
		ip = ip[1 : len(ip)-1]
	}
	if strings.ContainsAny(ip, "[]@, \t") {
		return Address{}, fmt.Errorf("IP %q has characters no address has", ip)
	}
	port, err := parsePort(s[colon+1:])
	if err != nil {
		return Address{}, err
	}
	return Address{IP: ip, Port: port}, nil
}

func (a *Address) parseExtras(extras []string) error {
	for i, e := range extras {
		key, value, isAux := strings.Cut(e, "=")
		if i == 0 && !isAux {
			a.Hostname = e
			continue
		}
		if e == "" {
			continue
		}
		if !isAux || key == "" {
			return fmt.Errorf("auxiliary field %q is not key=value", e)
		}
		if a.Aux == nil {
			a.Aux = map[string]string{}
		}
		a.Aux[key] = value
	}
	return nil
}

func parsePort(s string) (int, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("port %q is not a number", s)
	}
	port, err := strconv.Atoi(s)
	if err != nil || port > 65535 {
		return 0, fmt.Errorf("port %q is not a number in 0..65535", s)
	}
	return port, nil
}

// Node is one line of CLUSTER NODES.
type Node struct {
	ID    string
	Addr  Address
	Flags NodeFlags
	// UnknownFlags keeps flags this package does not know, so newer Redis versions still parse.
	UnknownFlags []string
	// MasterID is the master of a replica; empty for masters ("-" in the text).
	MasterID string
	// PingSent and PongReceived are Unix times in milliseconds, 0 when none is pending or known.
	PingSent     int64
	PongReceived int64
	ConfigEpoch  uint64
	Link         LinkState
	// Slots are the ranges the node serves, in the order Redis printed them.
	Slots []SlotRange
	// Migrating lists "[slot->-node]": slots this node is moving to another node.
	// They stay in Slots while the move lasts; only the answering node reports them.
	Migrating []SlotMigration
	// Importing lists "[slot-<-node]": slots this node is receiving from another node.
	Importing []SlotMigration
}

// Is reports whether every flag of f is set on the node.
func (n Node) Is(f NodeFlags) bool { return n.Flags.Has(f) }

// IsMaster reports whether the node is a primary.
func (n Node) IsMaster() bool { return n.Flags.Has(FlagMaster) }

// IsReplica reports whether the node is a replica.
func (n Node) IsReplica() bool { return n.Flags.Has(FlagReplica) }

// HasAddr reports whether the node's address is known.
func (n Node) HasAddr() bool { return n.Addr.IP != "" && !n.Flags.Has(FlagNoAddr) }

// SlotCount is the number of distinct slots the node serves.
func (n Node) SlotCount() int { return CountSlots(n.Slots) }

// OwnsSlot reports whether the node serves slot.
func (n Node) OwnsSlot(slot int) bool {
	for _, r := range n.Slots {
		if r.Contains(slot) {
			return true
		}
	}
	return false
}

// String renders the node as one CLUSTER NODES line, without the newline.
func (n Node) String() string {
	var b strings.Builder
	b.WriteString(n.ID)
	b.WriteByte(' ')
	b.WriteString(n.Addr.String())
	b.WriteByte(' ')
	flags := n.Flags.String()
	if len(n.UnknownFlags) > 0 {
		if n.Flags == 0 {
			flags = strings.Join(n.UnknownFlags, ",")
		} else {
			flags += "," + strings.Join(n.UnknownFlags, ",")
		}
	}
	b.WriteString(flags)
	b.WriteByte(' ')
	if n.MasterID == "" {
		b.WriteByte('-')
	} else {
		b.WriteString(n.MasterID)
	}
	fmt.Fprintf(&b, " %d %d %d %s", n.PingSent, n.PongReceived, n.ConfigEpoch, n.Link)
	for _, r := range n.Slots {
		b.WriteByte(' ')
		b.WriteString(r.String())
	}
	for _, m := range n.Migrating {
		fmt.Fprintf(&b, " [%d->-%s]", m.Slot, m.NodeID)
	}
	for _, m := range n.Importing {
		fmt.Fprintf(&b, " [%d-<-%s]", m.Slot, m.NodeID)
	}
	return b.String()
}

// ParseClusterNodeLine parses one line of CLUSTER NODES.
func ParseClusterNodeLine(line string) (Node, error) {
	fields := strings.Fields(line)
	if len(fields) < 8 {
		return Node{}, fmt.Errorf("want at least 8 fields, got %d", len(fields))
	}
	var n Node
	var err error
	if n.ID, err = parseNodeID(fields[0]); err != nil {
		return Node{}, err
	}
	if n.Addr, err = ParseAddress(fields[1]); err != nil {
		return Node{}, err
	}
	if err := n.parseFlags(fields[2]); err != nil {
		return Node{}, err
	}
	if fields[3] != "-" {
		if n.MasterID, err = parseNodeID(fields[3]); err != nil {
			return Node{}, fmt.Errorf("master: %w", err)
		}
	}
	if n.PingSent, err = parseMillis(fields[4]); err != nil {
		return Node{}, fmt.Errorf("ping-sent: %w", err)
	}
	if n.PongReceived, err = parseMillis(fields[5]); err != nil {
		return Node{}, fmt.Errorf("pong-recv: %w", err)
	}
	if !isDigits(fields[6]) {
		return Node{}, fmt.Errorf("config epoch %q is not a number", fields[6])
	}
	if n.ConfigEpoch, err = strconv.ParseUint(fields[6], 10, 64); err != nil {
		return Node{}, fmt.Errorf("config epoch %q: %w", fields[6], err)
	}
	switch LinkState(fields[7]) {
	case LinkConnected, LinkDisconnected:
		n.Link = LinkState(fields[7])
	default:
		return Node{}, fmt.Errorf("link state %q is neither connected nor disconnected", fields[7])
	}
	for _, f := range fields[8:] {
		if err := n.parseSlotField(f); err != nil {
			return Node{}, err
		}
	}
	return n, nil
}

func (n *Node) parseFlags(s string) error {
	if s == "" {
		return fmt.Errorf("empty flags")
	}
	for _, name := range strings.Split(s, ",") {
		if name == "noflags" {
			continue
		}
		known := false
		for _, fn := range flagNames {
			if fn.name == name {
				n.Flags |= fn.flag
				known = true
				break
			}
		}
		if known {
			continue
		}
		if name == "" {
			return fmt.Errorf("flags %q: empty flag", s)
		}
		n.UnknownFlags = append(n.UnknownFlags, name)
	}
	return nil
}

func (n *Node) parseSlotField(f string) error {
	if !strings.HasPrefix(f, "[") {
		r, err := ParseSlotRange(f)
		if err != nil {
			return err
		}
		n.Slots = append(n.Slots, r)
		return nil
	}
	body, ok := strings.CutSuffix(f[1:], "]")
	if !ok {
		return fmt.Errorf("slot migration %q: missing ]", f)
	}
	if slotText, nodeID, ok := strings.Cut(body, "->-"); ok {
		m, err := parseMigration(slotText, nodeID)
		if err != nil {
			return fmt.Errorf("migrating slot %q: %w", f, err)
		}
		n.Migrating = append(n.Migrating, m)
		return nil
	}
	if slotText, nodeID, ok := strings.Cut(body, "-<-"); ok {
		m, err := parseMigration(slotText, nodeID)
		if err != nil {
			return fmt.Errorf("importing slot %q: %w", f, err)
		}
		n.Importing = append(n.Importing, m)
		return nil
	}
	return fmt.Errorf("slot migration %q: neither ->- nor -<-", f)
}

func parseMigration(slotText, nodeID string) (SlotMigration, error) {
	slot, err := parseSlot(slotText)
	if err != nil {
		return SlotMigration{}, err
	}
	id, err := parseNodeID(nodeID)
	if err != nil {
		return SlotMigration{}, err
	}
	return SlotMigration{Slot: slot, NodeID: id}, nil
}

func parseNodeID(s string) (string, error) {
	if len(s) != NodeIDLength {
		return "", fmt.Errorf("node ID %q: want %d hex characters", s, NodeIDLength)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		isHex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		if !isHex {
			return "", fmt.Errorf("node ID %q: not hexadecimal", s)
		}
	}
	return s, nil
}

func parseMillis(s string) (int64, error) {
	if !isDigits(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Topology is a cluster as one node sees it, parsed from CLUSTER NODES (or built from
// CLUSTER SHARDS, which carries less).
type Topology struct {
	Nodes []Node
}

// ParseClusterNodes parses the whole CLUSTER NODES reply. Blank lines and surrounding
// whitespace are ignored; any malformed line or a repeated node ID is an error naming the line.
func ParseClusterNodes(text string) (Topology, error) {
	var t Topology
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n, err := ParseClusterNodeLine(line)
		if err != nil {
			return Topology{}, fmt.Errorf("CLUSTER NODES line %d: %w", i+1, err)
		}
		if seen[n.ID] {
			return Topology{}, fmt.Errorf("CLUSTER NODES line %d: node %s listed twice", i+1, n.ID)
		}
		seen[n.ID] = true
		t.Nodes = append(t.Nodes, n)
	}
	return t, nil
}

// String renders the topology in CLUSTER NODES format, one line per node.
func (t Topology) String() string {
	var b strings.Builder
	for _, n := range t.Nodes {
		b.WriteString(n.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func (t Topology) filter(keep func(Node) bool) []Node {
	var out []Node
	for _, n := range t.Nodes {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// Masters are the nodes flagged master, failed or not.
func (t Topology) Masters() []Node { return t.filter(Node.IsMaster) }

// Replicas are the nodes flagged replica, failed or not.
func (t Topology) Replicas() []Node { return t.filter(Node.IsReplica) }

// ReplicasOf are the replicas whose master is masterID.
func (t Topology) ReplicasOf(masterID string) []Node {
	return t.filter(func(n Node) bool { return n.IsReplica() && n.MasterID == masterID })
}

// NodeByID finds a node by its ID.
func (t Topology) NodeByID(id string) (Node, bool) {
	for _, n := range t.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// NodeByAddr finds a node by "host:port", matching either its IP or its announced hostname.
func (t Topology) NodeByAddr(hostPort string) (Node, bool) {
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return Node{}, false
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return Node{}, false
	}
	for _, n := range t.Nodes {
		if n.Addr.Port == port && host != "" && (n.Addr.IP == host || n.Addr.Hostname == host) {
			return n, true
		}
	}
	return Node{}, false
}

// Myself is the node that answered CLUSTER NODES. A topology built from CLUSTER SHARDS has none.
func (t Topology) Myself() (Node, bool) {
	for _, n := range t.Nodes {
		if n.Is(FlagMyself) {
			return n, true
		}
	}
	return Node{}, false
}

// FailedNodes are the nodes the cluster agreed are down (flag "fail").
func (t Topology) FailedNodes() []Node {
	return t.filter(func(n Node) bool { return n.Is(FlagFail) })
}

// SuspectedNodes are the nodes the answering node alone thinks are down (flag "fail?" without "fail").
func (t Topology) SuspectedNodes() []Node {
	return t.filter(func(n Node) bool { return n.Is(FlagPFail) && !n.Is(FlagFail) })
}

// HandshakeNodes are the nodes still in the MEET handshake.
func (t Topology) HandshakeNodes() []Node {
	return t.filter(func(n Node) bool { return n.Is(FlagHandshake) })
}

// NodesWithoutAddr are the nodes whose address is unknown (flag "noaddr" or an empty IP).
func (t Topology) NodesWithoutAddr() []Node {
	return t.filter(func(n Node) bool { return !n.HasAddr() })
}

// AssignedSlots are the slots any node serves, merged and sorted.
func (t Topology) AssignedSlots() []SlotRange {
	var all []SlotRange
	for _, n := range t.Nodes {
		all = append(all, n.Slots...)
	}
	return NormalizeSlotRanges(all)
}

// UnassignedSlots are the slots no node serves, as sorted ranges.
func (t Topology) UnassignedSlots() []SlotRange {
	var all []SlotRange
	for _, n := range t.Nodes {
		all = append(all, n.Slots...)
	}
	return MissingSlots(all)
}

// AllSlotsCovered reports whether every slot 0..MaxSlot is served by some node. Failed
// owners still count: this is about assignment, CLUSTER INFO tells about health.
func (t Topology) AllSlotsCovered() bool { return len(t.UnassignedSlots()) == 0 }

// SlotOwner is the node serving slot.
func (t Topology) SlotOwner(slot int) (Node, bool) {
	for _, n := range t.Nodes {
		if n.OwnsSlot(slot) {
			return n, true
		}
	}
	return Node{}, false
}

// MigratingSlots are all "[slot->-node]" entries, keyed by the node reporting them.
func (t Topology) MigratingSlots() map[string][]SlotMigration {
	out := map[string][]SlotMigration{}
	for _, n := range t.Nodes {
		if len(n.Migrating) > 0 {
			out[n.ID] = n.Migrating
		}
	}
	return out
}

// ImportingSlots are all "[slot-<-node]" entries, keyed by the node reporting them.
func (t Topology) ImportingSlots() map[string][]SlotMigration {
	out := map[string][]SlotMigration{}
	for _, n := range t.Nodes {
		if len(n.Importing) > 0 {
			out[n.ID] = n.Importing
		}
	}
	return out
}
