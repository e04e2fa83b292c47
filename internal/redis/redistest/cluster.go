package redistest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// FormTimeout bounds each wait while a cluster forms; generous for a loaded 2-core machine.
const FormTimeout = 60 * time.Second

// Cluster is a cluster formed of test servers.
type Cluster struct {
	Servers  []*Server
	Masters  []*Server
	Replicas []*Server
	// IDs maps each server's address to its node ID.
	IDs  map[string]string
	Pool *redis.Pool
	Auth redis.Auth
}

// Client returns the pooled client of s.
func (c *Cluster) Client(t testing.TB, s *Server) *redis.Client {
	t.Helper()
	client, err := c.Pool.Client(s.Endpoint(c.Auth))
	if err != nil {
		t.Fatalf("client for %s: %v", s.Addr(), err)
	}
	return client
}

// StartCluster starts masters*(1+replicasPerMaster) cluster-mode servers and forms a cluster.
func StartCluster(t testing.TB, pool *redis.Pool, masters, replicasPerMaster int, opts ServerOptions) *Cluster {
	t.Helper()
	opts.Cluster = true
	servers := StartServers(t, masters*(1+replicasPerMaster), opts)
	return FormCluster(t, pool, servers, masters, redis.Auth{Password: opts.Password})
}

// FormCluster makes a cluster of servers with the operator's client, the way an operator
// would: MEET every node, split the slots evenly over the first `masters` servers, make each
// remaining server a replica (round robin over the masters), and wait until every node
// reports cluster_state:ok and every replica's link is up.
func FormCluster(t testing.TB, pool *redis.Pool, servers []*Server, masters int, auth redis.Auth) *Cluster {
	t.Helper()
	if masters <= 0 || masters > len(servers) {
		t.Fatalf("form cluster: %d masters out of %d servers", masters, len(servers))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*FormTimeout)
	defer cancel()
	c := &Cluster{Servers: servers, Masters: servers[:masters], Replicas: servers[masters:], IDs: map[string]string{}, Pool: pool, Auth: auth}

	for _, s := range servers {
		id, err := c.Client(t, s).ClusterMyID(ctx)
		if err != nil {
			t.Fatalf("form cluster: %v", err)
		}
		c.IDs[s.Addr()] = id
	}
	first := c.Client(t, servers[0])
	for _, s := range servers[1:] {
		if err := first.ClusterMeet(ctx, s.Host, s.Port, s.BusPort); err != nil {
			t.Fatalf("form cluster: %v", err)
		}
	}
	WaitFor(t, FormTimeout, "every node to know every other node", func() error {
		for _, s := range servers {
			topo, err := c.Client(t, s).ClusterNodes(ctx)
			if err != nil {
				return err
			}
			if len(topo.Nodes) != len(servers) || len(topo.HandshakeNodes()) > 0 || len(topo.NodesWithoutAddr()) > 0 {
				return fmt.Errorf("%s knows %d nodes, %d in handshake", s.Addr(), len(topo.Nodes), len(topo.HandshakeNodes()))
			}
		}
		return nil
	})

	for i, r := range redis.SplitSlots(masters) {
		if err := c.Client(t, c.Masters[i]).ClusterAddSlotsRange(ctx, r); err != nil {
			t.Fatalf("form cluster: %v", err)
		}
	}
	for i, s := range c.Replicas {
		masterID := c.IDs[c.Masters[i%masters].Addr()]
		if err := c.Client(t, s).ClusterReplicate(ctx, masterID); err != nil {
			t.Fatalf("form cluster: %v", err)
		}
	}
	c.WaitHealthy(t)
	return c
}

// WaitHealthy waits until every running server reports cluster_state:ok with all slots ok,
// every running replica's replication link is up, and all running servers agree on every
// node's role, master and slots (cluster_state:ok alone does not mean gossip has settled).
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), FormTimeout)
	defer cancel()
	WaitFor(t, FormTimeout, "cluster_state:ok on every node, replicas in sync, and one shared view", func() error {
		var firstView, firstAddr string
		for _, s := range c.Servers {
			if !s.Running() {
				continue
			}
			client := c.Client(t, s)
			topo, err := client.ClusterNodes(ctx)
			if err != nil {
				return err
			}
			view := summarize(topo)
			if firstAddr == "" {
				firstView, firstAddr = view, s.Addr()
			} else if view != firstView {
				return fmt.Errorf("%s and %s disagree:\n%s\n%s", firstAddr, s.Addr(), firstView, view)
			}
			info, err := client.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !info.OK() || info.SlotsOK != redis.SlotCount {
				return fmt.Errorf("%s: cluster_state:%s slots_ok:%d", s.Addr(), info.State, info.SlotsOK)
			}
			role, err := client.Role(ctx)
			if err != nil {
				return err
			}
			if role.Kind == redis.RoleSlave && !role.LinkUp() {
				return fmt.Errorf("%s: replication link %s", s.Addr(), role.ReplicationState)
			}
		}
		return nil
	})
}

// summarize renders what all nodes must agree on: each node's role, master, slots and
// failure flags, in ID order.
func summarize(topo redis.Topology) string {
	nodes := append([]redis.Node(nil), topo.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s master=%v of=%s fail=%v pfail=%v slots=%v\n", n.ID, n.IsMaster(), n.MasterID,
			n.Is(redis.FlagFail), n.Is(redis.FlagPFail), redis.NormalizeSlotRanges(n.Slots))
	}
	return b.String()
}

// WaitFor polls cond every 100ms until it returns nil, failing the test with the last
// error after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
