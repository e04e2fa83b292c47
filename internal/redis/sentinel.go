package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// SENTINEL commands: the operator follows the sentinels' view of the master and checks their
// quorum, and leaves the choice of a master to the sentinels themselves (a failover it asks
// for is theirs to carry out, see SentinelFailover).

// SentinelMasterAddr asks a sentinel where the master of group is now (SENTINEL
// GET-MASTER-ADDR-BY-NAME). known is false when the sentinel does not monitor that group (nil reply).
func (c *Client) SentinelMasterAddr(ctx context.Context, group string) (host string, port int, known bool, err error) {
	command := "SENTINEL GET-MASTER-ADDR-BY-NAME " + group
	if group == "" {
		return "", 0, false, c.wrap(command, errors.New("empty group name"))
	}
	reply, err := c.rdb.Do(ctx, "sentinel", "get-master-addr-by-name", group).Result()
	if errors.Is(err, goredis.Nil) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, c.wrap(command, err)
	}
	host, port, err = parseMasterAddr(reply)
	if err != nil {
		return "", 0, false, c.wrap(command, err)
	}
	return host, port, true, nil
}

// SentinelMaster returns the state a sentinel keeps for the group (SENTINEL MASTER), as field -> value
// (e.g. "ip", "port", "flags", "num-other-sentinels", "quorum", "num-slaves").
// A group the sentinel does not monitor is a server error.
func (c *Client) SentinelMaster(ctx context.Context, group string) (map[string]string, error) {
	command := "SENTINEL MASTER " + group
	if group == "" {
		return nil, c.wrap(command, errors.New("empty group name"))
	}
	reply, err := c.rdb.Do(ctx, "sentinel", "master", group).Result()
	if err != nil {
		return nil, c.wrap(command, err)
	}
	fields, err := parseFieldMap(reply)
	return fields, c.wrap(command, err)
}

// SentinelCkQuorum is nil when the sentinels monitoring group can reach the quorum and the majority
// needed to authorize a failover (SENTINEL CKQUORUM); otherwise its error carries the sentinel's
// explanation (a server error, so IsServerError(err) is true).
func (c *Client) SentinelCkQuorum(ctx context.Context, group string) error {
	command := "SENTINEL CKQUORUM " + group
	if group == "" {
		return c.wrap(command, errors.New("empty group name"))
	}
	return c.wrap(command, c.rdb.Do(ctx, "sentinel", "ckquorum", group).Err())
}

// parseMasterAddr reads the [host, port] pair of GET-MASTER-ADDR-BY-NAME.
func parseMasterAddr(reply any) (host string, port int, err error) {
	a, err := replyArray(reply)
	if err != nil {
		return "", 0, err
	}
	if len(a) != 2 {
		return "", 0, fmt.Errorf("want [host, port], got %d elements", len(a))
	}
	host, err = replyString(a[0])
	if err != nil {
		return "", 0, fmt.Errorf("host: %w", err)
	}
	p, err := replyInt(a[1])
	if err != nil {
		return "", 0, fmt.Errorf("port: %w", err)
	}
	if host == "" || p <= 0 || p > 65535 {
		return "", 0, fmt.Errorf("invalid master address %q port %d", host, p)
	}
	return host, int(p), nil
}

// parseFieldMap turns a field/value reply into a map of strings. Sentinel sends a RESP3 map
// to HELLO 3 clients and a flat field/value array to RESP2 ones; both mean the same.
func parseFieldMap(reply any) (map[string]string, error) {
	pairs, err := replyMap(reply)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]string, len(pairs))
	for _, p := range pairs {
		value, err := replyString(p.value)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", p.key, err)
		}
		fields[p.key] = value
	}
	return fields, nil
}

// SentinelSetAuthPass gives a sentinel the password of group's master and replicas (SENTINEL
// SET <group> auth-pass): it drops its links to them and authenticates anew with it, and writes
// it to its config file. The password is in no error this returns.
func (c *Client) SentinelSetAuthPass(ctx context.Context, group, password string) error {
	command := "SENTINEL SET " + group + " auth-pass"
	if group == "" {
		return c.wrap(command, errors.New("empty group name"))
	}
	return c.wrap(command, c.rdb.Do(ctx, "sentinel", "set", group, "auth-pass", password).Err())
}

// SentinelReset makes a sentinel forget what it learnt of group: its replicas and the other
// sentinels, which it finds again within seconds (from the master's INFO and the hello
// messages of the sentinels that run). The operator resets a sentinel only when it counts
// sentinels that are gone, which would otherwise weigh as voters forever. group is one exact
// name: the command takes a glob pattern, and a name with pattern characters is refused.
func (c *Client) SentinelReset(ctx context.Context, group string) error {
	command := "SENTINEL RESET " + group
	if group == "" || strings.ContainsAny(group, "*?[]\\") {
		return c.wrap(command, errors.New("a group name without pattern characters is required"))
	}
	return c.wrap(command, c.rdb.Do(ctx, "sentinel", sentinelResetSubcommand, group).Err())
}

// SentinelReplicaHosts lists the hosts of the replicas a sentinel knows for group (SENTINEL
// REPLICAS), as it would connect to them. A group the sentinel does not monitor is a server error.
func (c *Client) SentinelReplicaHosts(ctx context.Context, group string) ([]string, error) {
	replicas, err := c.SentinelReplicas(ctx, group)
	if err != nil {
		return nil, err
	}
	hosts, err := replicaHosts(replicas)
	return hosts, c.wrap("SENTINEL REPLICAS "+group, err)
}

// SentinelReplicas returns the state a sentinel keeps for each replica of group (SENTINEL
// REPLICAS), each as field -> value ("ip", "flags", "master-link-down-time", "slave-priority",
// "slave-repl-offset", ...). A group the sentinel does not monitor is a server error.
func (c *Client) SentinelReplicas(ctx context.Context, group string) ([]map[string]string, error) {
	command := "SENTINEL REPLICAS " + group
	if group == "" {
		return nil, c.wrap(command, errors.New("empty group name"))
	}
	reply, err := c.rdb.Do(ctx, "sentinel", "replicas", group).Result()
	if err != nil {
		return nil, c.wrap(command, err)
	}
	replicas, err := parseReplicas(reply)
	return replicas, c.wrap(command, err)
}

// parseReplicas reads each replica's field map in a SENTINEL REPLICAS reply.
func parseReplicas(reply any) ([]map[string]string, error) {
	entries, err := replyArray(reply)
	if err != nil {
		return nil, err
	}
	replicas := make([]map[string]string, 0, len(entries))
	for i, e := range entries {
		fields, err := parseFieldMap(e)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		replicas = append(replicas, fields)
	}
	return replicas, nil
}

// parseReplicaHosts reads the "ip" field of each replica's field map in a SENTINEL REPLICAS reply.
func parseReplicaHosts(reply any) ([]string, error) {
	replicas, err := parseReplicas(reply)
	if err != nil {
		return nil, err
	}
	return replicaHosts(replicas)
}

// replicaHosts takes each replica's "ip" field, which every one must have.
func replicaHosts(replicas []map[string]string) ([]string, error) {
	hosts := make([]string, 0, len(replicas))
	for i, fields := range replicas {
		if fields["ip"] == "" {
			return nil, fmt.Errorf("replica %d: no ip field", i)
		}
		hosts = append(hosts, fields["ip"])
	}
	return hosts, nil
}

// SentinelSetDownAfter sets how long a sentinel waits before it holds group's master (and its
// replicas) down (SENTINEL SET <group> down-after-milliseconds); the sentinel writes it to its
// config file. A period under a millisecond is refused.
func (c *Client) SentinelSetDownAfter(ctx context.Context, group string, period time.Duration) error {
	command := "SENTINEL SET " + group + " down-after-milliseconds"
	if group == "" || period < time.Millisecond {
		return c.wrap(command, fmt.Errorf("group %q, period %s: a group and a period of at least 1ms are required", group, period))
	}
	return c.wrap(command, c.rdb.Do(ctx, "sentinel", "set", group, "down-after-milliseconds", strconv.FormatInt(period.Milliseconds(), 10)).Err())
}

// SentinelFailover asks a sentinel to fail group's master over now, without the other
// sentinels' agreement (SENTINEL FAILOVER): it picks the replica as in any failover and the
// others follow the new configuration. A sentinel that finds no replica to promote answers
// NOGOODSLAVE, one already failing over INPROG (server errors).
func (c *Client) SentinelFailover(ctx context.Context, group string) error {
	command := "SENTINEL FAILOVER " + group
	if group == "" {
		return c.wrap(command, errors.New("empty group name"))
	}
	return c.wrap(command, c.rdb.Do(ctx, "sentinel", "failover", group).Err())
}
