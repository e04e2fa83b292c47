package redis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ClusterState is cluster_state of CLUSTER INFO.
type ClusterState string

// Cluster states.
const (
	ClusterStateOK   ClusterState = "ok"
	ClusterStateFail ClusterState = "fail"
)

// ClusterInfo is the parsed CLUSTER INFO reply.
type ClusterInfo struct {
	State         ClusterState
	SlotsAssigned int
	SlotsOK       int
	SlotsPFail    int
	SlotsFail     int
	KnownNodes    int
	Size          int // masters serving at least one slot
	CurrentEpoch  uint64
	MyEpoch       uint64
	// Other holds every field not above (message statistics and fields of newer versions).
	Other map[string]string
}

// OK reports whether the node reports cluster_state:ok.
func (ci ClusterInfo) OK() bool { return ci.State == ClusterStateOK }

var clusterInfoInts = []struct {
	key string
	get func(*ClusterInfo) *int
}{
	{"cluster_slots_assigned", func(ci *ClusterInfo) *int { return &ci.SlotsAssigned }},
	{"cluster_slots_ok", func(ci *ClusterInfo) *int { return &ci.SlotsOK }},
	{"cluster_slots_pfail", func(ci *ClusterInfo) *int { return &ci.SlotsPFail }},
	{"cluster_slots_fail", func(ci *ClusterInfo) *int { return &ci.SlotsFail }},
	{"cluster_known_nodes", func(ci *ClusterInfo) *int { return &ci.KnownNodes }},
	{"cluster_size", func(ci *ClusterInfo) *int { return &ci.Size }},
}

var clusterInfoEpochs = []struct {
	key string
	get func(*ClusterInfo) *uint64
}{
	{"cluster_current_epoch", func(ci *ClusterInfo) *uint64 { return &ci.CurrentEpoch }},
	{"cluster_my_epoch", func(ci *ClusterInfo) *uint64 { return &ci.MyEpoch }},
}

// ParseClusterInfo parses CLUSTER INFO. cluster_state is required; a known numeric field
// that is not a number is an error.
func ParseClusterInfo(text string) (ClusterInfo, error) {
	fields := parseKeyValueLines(text)
	var ci ClusterInfo
	state, ok := fields["cluster_state"]
	if !ok || state == "" {
		return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: no cluster_state")
	}
	ci.State = ClusterState(state)
	delete(fields, "cluster_state")
	for _, f := range clusterInfoInts {
		v, ok := fields[f.key]
		if !ok {
			continue
		}
		if !isDigits(v) {
			return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: %s=%q is not a number", f.key, v)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: %s: %w", f.key, err)
		}
		*f.get(&ci) = n
		delete(fields, f.key)
	}
	for _, f := range clusterInfoEpochs {
		v, ok := fields[f.key]
		if !ok {
			continue
		}
		if !isDigits(v) {
			return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: %s=%q is not a number", f.key, v)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return ClusterInfo{}, fmt.Errorf("CLUSTER INFO: %s: %w", f.key, err)
		}
		*f.get(&ci) = n
		delete(fields, f.key)
	}
	if len(fields) > 0 {
		ci.Other = fields
	}
	return ci, nil
}

// String renders the info in CLUSTER INFO format.
func (ci ClusterInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_state:%s\r\n", ci.State)
	for _, f := range clusterInfoInts {
		fmt.Fprintf(&b, "%s:%d\r\n", f.key, *f.get(&ci))
	}
	for _, f := range clusterInfoEpochs {
		fmt.Fprintf(&b, "%s:%d\r\n", f.key, *f.get(&ci))
	}
	keys := make([]string, 0, len(ci.Other))
	for k := range ci.Other {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:%s\r\n", k, ci.Other[k])
	}
	return b.String()
}

// parseKeyValueLines reads "key:value" lines as INFO and CLUSTER INFO print them, skipping
// blank lines, "# Section" headers and lines without a colon. Values keep inner colons.
func parseKeyValueLines(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok || key == "" {
			continue
		}
		out[key] = value
	}
	return out
}

// ParseInfo parses an INFO reply into a flat key → value map; section headers are dropped
// because keys are unique across sections.
func ParseInfo(text string) map[string]string { return parseKeyValueLines(text) }
