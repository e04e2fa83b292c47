package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// ClusterObservation is what one look at a cluster node returns: CLUSTER NODES, ROLE and
// CLUSTER INFO, each with its own error.
type ClusterObservation struct {
	Nodes    Topology
	NodesErr error
	Role     Role
	RoleErr  error
	Info     ClusterInfo
	InfoErr  error
}

// ObserveCluster asks the node for CLUSTER NODES, ROLE and CLUSTER INFO in one round trip
// (pipelined), so that re-reading a steady cluster costs one round trip per pod.
func (c *Client) ObserveCluster(ctx context.Context) ClusterObservation {
	pipe := c.rdb.Pipeline()
	nodes := pipe.ClusterNodes(ctx)
	role := pipe.Do(ctx, "role")
	info := pipe.ClusterInfo(ctx)
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var o ClusterObservation
	if text, err := nodes.Result(); err != nil {
		o.NodesErr = c.wrap("CLUSTER NODES", err)
	} else {
		o.Nodes, err = ParseClusterNodes(text)
		o.NodesErr = c.wrap("CLUSTER NODES", err)
	}
	if reply, err := role.Result(); err != nil {
		o.RoleErr = c.wrap("ROLE", err)
	} else {
		o.Role, err = ParseRole(reply)
		o.RoleErr = c.wrap("ROLE", err)
	}
	o.Info, o.InfoErr = parseInfoCmd(c, info)
	return o
}

func parseInfoCmd(c *Client, cmd *goredis.StringCmd) (ClusterInfo, error) {
	text, err := cmd.Result()
	if err != nil {
		return ClusterInfo{}, c.wrap("CLUSTER INFO", err)
	}
	info, err := ParseClusterInfo(text)
	return info, c.wrap("CLUSTER INFO", err)
}
