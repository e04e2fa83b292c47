package redis

import (
	"fmt"
	"strconv"
	"strings"
)

// ServerInfo is what INFO server says a node runs. The operator decides what to send a node
// by it, not by the resource's clusterVersion (which users set by hand, or not at all).
type ServerInfo struct {
	// Name is "redis" or "valkey" (server_name; Redis does not write it).
	Name string
	// Version is the server's own version: valkey_version on Valkey, else redis_version.
	Version string
	// api is the Redis version whose commands the server has: redis_version, which Valkey
	// keeps at the Redis release it is compatible with (7.2.4 on Valkey 8).
	api [2]int
}

// ParseServerInfo reads INFO server.
func ParseServerInfo(text string) (ServerInfo, error) {
	fields := parseKeyValueLines(text)
	redisVersion := fields["redis_version"]
	if redisVersion == "" {
		return ServerInfo{}, fmt.Errorf("INFO server: no redis_version")
	}
	api, err := majorMinor(redisVersion)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("INFO server: redis_version: %w", err)
	}
	s := ServerInfo{Name: "redis", Version: redisVersion, api: api}
	if name := fields["server_name"]; name != "" {
		s.Name = name
	}
	if v := fields["valkey_version"]; v != "" {
		s.Version = v
		if s.Name == "redis" {
			s.Name = "valkey"
		}
	}
	return s, nil
}

// Has tells whether the server has the commands and settings of Redis major.minor; false when
// the server is not known (zero ServerInfo): the caller then sends what every version has.
func (s ServerInfo) Has(major, minor int) bool {
	return s.api[0] > major || s.api[0] == major && s.api[1] >= minor
}

// Known tells whether INFO server was read.
func (s ServerInfo) Known() bool { return s.Version != "" }

// String is "redis 7.0.15" or "valkey 8.0.1".
func (s ServerInfo) String() string {
	if !s.Known() {
		return "unknown server"
	}
	return s.Name + " " + s.Version
}

func majorMinor(version string) ([2]int, error) {
	parts := strings.SplitN(version, ".", 3)
	var out [2]int
	for i := range min(len(parts), 2) {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return out, fmt.Errorf("%q is not a version", version)
		}
		out[i] = n
	}
	return out, nil
}
