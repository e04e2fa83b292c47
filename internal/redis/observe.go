package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// ClusterObservation is what one look at a cluster node returns: CLUSTER NODES, ROLE,
// CLUSTER INFO and INFO server, each with its own error.
type ClusterObservation struct {
	Nodes     Topology
	NodesErr  error
	Role      Role
	RoleErr   error
	Info      ClusterInfo
	InfoErr   error
	Server    ServerInfo
	ServerErr error
}

// ObserveCluster asks the node for CLUSTER NODES, ROLE, CLUSTER INFO and INFO server in one
// round trip (pipelined), so that re-reading a steady cluster costs one round trip per pod.
// INFO server is read every time, not once: a pod may come back on another image.
func (c *Client) ObserveCluster(ctx context.Context) ClusterObservation {
	pipe := c.rdb.Pipeline()
	nodes := pipe.ClusterNodes(ctx)
	role := pipe.Do(ctx, "role")
	info := pipe.ClusterInfo(ctx)
	server := pipe.Info(ctx, "server")
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
	if text, err := server.Result(); err != nil {
		o.ServerErr = c.wrap("INFO server", err)
	} else {
		o.Server, err = ParseServerInfo(text)
		o.ServerErr = c.wrap("INFO server", err)
	}
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
