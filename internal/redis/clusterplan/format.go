package clusterplan

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

func formatRanges(ranges []redis.SlotRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func hostPort(m *Member) string { return net.JoinHostPort(m.IP, strconv.Itoa(m.Port)) }

// short abbreviates a node ID for messages, as redis-cli does.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// waitsNamed is how many waits a message names before it counts the rest.
const waitsNamed = 3

// firstWaits keeps the first waitsNamed items of s and says how many more there are.
func firstWaits(s []string) []string {
	if len(s) > waitsNamed {
		return append(s[:waitsNamed:waitsNamed], fmt.Sprintf("and %d more", len(s)-waitsNamed))
	}
	return s
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
