//go:build integration

package redis_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

func clusterClient(t *testing.T, c *redistest.Cluster) *goredis.ClusterClient {
	t.Helper()
	var addrs []string
	for _, s := range c.Servers {
		addrs = append(addrs, s.Addr())
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Password: c.Auth.Password})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func TestClusterFormationReshardAndKeys(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	c := redistest.StartCluster(t, pool, 3, 1, redistest.ServerOptions{})

	// The model, from every node's point of view.
	for _, s := range c.Servers {
		topo, err := c.Client(t, s).ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		masters := topo.Masters()
		if len(masters) != 3 {
			t.Fatalf("%s sees %d masters, want 3:\n%s", s.Addr(), len(masters), topo)
		}
		for _, m := range masters {
			if reps := topo.ReplicasOf(m.ID); len(reps) != 1 {
				t.Errorf("%s: master %s has %d replicas, want 1", s.Addr(), m.ID, len(reps))
			}
		}
		if !topo.AllSlotsCovered() {
			t.Errorf("%s: unassigned slots %v", s.Addr(), topo.UnassignedSlots())
		}
		me, ok := topo.Myself()
		if !ok || me.ID != c.IDs[s.Addr()] || me.Addr.HostPort() != s.Addr() || me.Addr.BusPort != s.BusPort {
			t.Errorf("%s: myself = %+v, want ID %s", s.Addr(), me, c.IDs[s.Addr()])
		}
		if n, ok := topo.NodeByAddr(c.Servers[5].Addr()); !ok || n.ID != c.IDs[c.Servers[5].Addr()] {
			t.Errorf("%s: NodeByAddr(%s) = %+v", s.Addr(), c.Servers[5].Addr(), n)
		}
		if len(topo.FailedNodes())+len(topo.HandshakeNodes())+len(topo.NodesWithoutAddr()) != 0 {
			t.Errorf("%s: unhealthy nodes in a healthy cluster:\n%s", s.Addr(), topo)
		}
	}

	first := c.Client(t, c.Servers[0])
	info, err := first.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.OK() || info.SlotsAssigned != redis.SlotCount || info.SlotsOK != redis.SlotCount ||
		info.KnownNodes != 6 || info.Size != 3 || info.SlotsFail != 0 || info.SlotsPFail != 0 {
		t.Errorf("CLUSTER INFO = %+v", info)
	}
	// One pipelined look gives the same three answers.
	seen := first.ObserveCluster(ctx)
	if seen.NodesErr != nil || seen.RoleErr != nil || seen.InfoErr != nil {
		t.Fatalf("ObserveCluster: %v, %v, %v", seen.NodesErr, seen.RoleErr, seen.InfoErr)
	}
	if me, ok := seen.Nodes.Myself(); !ok || len(seen.Nodes.Nodes) != 6 || seen.Role.Kind != redis.RoleMaster || !me.IsMaster() || seen.Info.State != info.State || seen.Info.KnownNodes != info.KnownNodes {
		t.Errorf("ObserveCluster = %+v", seen)
	}

	shards, err := first.ClusterShards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fromShards := redis.TopologyFromShards(shards)
	if len(shards) != 3 || len(fromShards.Masters()) != 3 || len(fromShards.Replicas()) != 3 || !fromShards.AllSlotsCovered() {
		t.Errorf("CLUSTER SHARDS = %+v", shards)
	}
	for _, sh := range shards {
		master, ok := sh.Master()
		if !ok || len(sh.Nodes) != 2 || master.Health != redis.HealthOnline || master.IP != redistest.Host {
			t.Errorf("shard %+v", sh)
		}
	}
	// RESP2 sends the same reply as flat arrays; the model must come out the same.
	resp2, err := newPool(t, redis.Options{Protocol: 2}).Client(c.Servers[0].Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	shards2, err := resp2.ClusterShards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := shardLayout(shards), shardLayout(shards2); !reflect.DeepEqual(a, b) {
		t.Errorf("RESP3 and RESP2 shards differ:\n%v\n%v", a, b)
	}

	// Keys across all slots through a cluster-aware client.
	cc := clusterClient(t, c)
	const keys = 300
	for i := 0; i < keys; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET key:%d: %v", i, err)
		}
	}
	for i := 0; i < keys; i++ {
		if got, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Int(); err != nil || got != i {
			t.Fatalf("GET key:%d = %d, %v", i, got, err)
		}
	}
	for _, m := range c.Masters {
		ks, err := c.Client(t, m).Info(ctx, "keyspace")
		if err != nil {
			t.Fatal(err)
		}
		if ks["db0"] == "" {
			t.Errorf("master %s holds no keys: %v", m.Addr(), ks)
		}
	}

	t.Run("reshard one slot with its keys", func(t *testing.T) {
		const tag = "{moving}"
		slot := int(cc.ClusterKeySlot(ctx, tag).Val())
		topo, _ := first.ClusterNodes(ctx)
		owner, _ := topo.SlotOwner(slot)
		var source, target *redistest.Server
		for _, m := range c.Masters {
			if c.IDs[m.Addr()] == owner.ID {
				source = m
			} else if target == nil {
				target = m
			}
		}
		src, dst := c.Client(t, source), c.Client(t, target)
		srcID, dstID := c.IDs[source.Addr()], c.IDs[target.Addr()]
		const moving = 57
		for i := 0; i < moving; i++ {
			if err := cc.Set(ctx, fmt.Sprintf("%s:%d", tag, i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := src.ClusterCountKeysInSlot(ctx, slot); err != nil || n != moving {
			t.Fatalf("source holds %d keys in slot %d, %v", n, slot, err)
		}

		if err := dst.ClusterSetSlot(ctx, slot, redis.SlotImporting, srcID); err != nil {
			t.Fatal(err)
		}
		if err := src.ClusterSetSlot(ctx, slot, redis.SlotMigrating, dstID); err != nil {
			t.Fatal(err)
		}
		// Both ends now print the move; the model keeps it apart from owned slots.
		srcTopo, err := src.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		srcMe, _ := srcTopo.Myself()
		if !reflect.DeepEqual(srcMe.Migrating, []redis.SlotMigration{{Slot: slot, NodeID: dstID}}) || !srcMe.OwnsSlot(slot) {
			t.Errorf("source: migrating %+v, owns %v", srcMe.Migrating, srcMe.OwnsSlot(slot))
		}
		dstTopo, err := dst.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dstMe, _ := dstTopo.Myself()
		if !reflect.DeepEqual(dstMe.Importing, []redis.SlotMigration{{Slot: slot, NodeID: srcID}}) || dstMe.OwnsSlot(slot) {
			t.Errorf("target: importing %+v, owns %v", dstMe.Importing, dstMe.OwnsSlot(slot))
		}

		before := src.CommandCount()
		moved, err := src.MigrateKeys(ctx, slot, target.Host, target.Port, redis.MigrateOptions{BatchSize: 10})
		if err != nil || moved != moving {
			t.Fatalf("MigrateKeys moved %d keys, %v", moved, err)
		}
		// 6 batches of GETKEYSINSLOT+MIGRATE, the final empty GETKEYSINSLOT, and the HELLO
		// opening the connection MIGRATE runs on.
		if got := src.CommandCount() - before; got != 14 {
			t.Errorf("MigrateKeys sent %d commands, want 14", got)
		}
		for _, m := range c.Masters {
			if err := c.Client(t, m).ClusterSetSlot(ctx, slot, redis.SlotNode, dstID); err != nil {
				t.Fatal(err)
			}
		}
		redistest.WaitFor(t, redistest.FormTimeout, "every node to see the slot on the target", func() error {
			for _, s := range c.Servers {
				topo, err := c.Client(t, s).ClusterNodes(ctx)
				if err != nil {
					return err
				}
				if owner, _ := topo.SlotOwner(slot); owner.ID != dstID {
					return fmt.Errorf("%s sees slot %d on %s", s.Addr(), slot, owner.ID)
				}
				if len(topo.MigratingSlots())+len(topo.ImportingSlots()) != 0 {
					return fmt.Errorf("%s still shows a move", s.Addr())
				}
			}
			return nil
		})
		if n, err := dst.ClusterCountKeysInSlot(ctx, slot); err != nil || n != moving {
			t.Errorf("target holds %d keys in slot %d, %v", n, slot, err)
		}
		if n, err := src.ClusterCountKeysInSlot(ctx, slot); err != nil || n != 0 {
			t.Errorf("source still holds %d keys in slot %d, %v", n, slot, err)
		}
		for i := 0; i < moving; i++ {
			if got, err := cc.Get(ctx, fmt.Sprintf("%s:%d", tag, i)).Int(); err != nil || got != i {
				t.Fatalf("GET after reshard = %d, %v", got, err)
			}
		}
		c.WaitHealthy(t)
	})

	t.Run("reshard many slots together, pipelined", func(t *testing.T) {
		topo, _ := first.ClusterNodes(ctx)
		owner, _ := topo.SlotOwner(0)
		var source, target *redistest.Server
		for _, m := range c.Masters {
			if c.IDs[m.Addr()] == owner.ID {
				source = m
			} else if target == nil {
				target = m
			}
		}
		src, dst := c.Client(t, source), c.Client(t, target)
		srcID, dstID := c.IDs[source.Addr()], c.IDs[target.Addr()]
		var slots []int
		for slot := 0; slot < 1000; slot++ {
			slots = append(slots, slot)
		}
		want := 0
		for i := 0; i < keys; i++ {
			if cc.ClusterKeySlot(ctx, fmt.Sprintf("key:%d", i)).Val() < 1000 {
				want++
			}
		}
		for _, err := range dst.ClusterSetSlotEach(ctx, slots, redis.SlotImporting, srcID) {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, err := range src.ClusterSetSlotEach(ctx, slots, redis.SlotMigrating, dstID) {
			if err != nil {
				t.Fatal(err)
			}
		}
		moved, err := src.MigrateSlots(ctx, slots, target.Host, target.Port, redis.MigrateOptions{BatchSize: 2})
		if err != nil || moved != want {
			t.Fatalf("MigrateSlots moved %d keys, %v; want %d", moved, err, want)
		}
		for _, m := range c.Masters {
			for _, err := range c.Client(t, m).ClusterSetSlotEach(ctx, slots, redis.SlotNode, dstID) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		// A slot this node does not own is refused per slot, the others pass.
		errs := src.ClusterSetSlotEach(ctx, []int{0, 1}, redis.SlotMigrating, dstID)
		if len(errs) != 2 || errs[0] == nil || !strings.Contains(errs[0].Error(), "not the owner") {
			t.Errorf("SETSLOT MIGRATING of a slot given away: %v", errs)
		}
		redistest.WaitFor(t, redistest.FormTimeout, "every node to see slots 0-999 on the target", func() error {
			for _, s := range c.Servers {
				topo, err := c.Client(t, s).ClusterNodes(ctx)
				if err != nil {
					return err
				}
				for _, slot := range []int{0, 500, 999} {
					if owner, _ := topo.SlotOwner(slot); owner.ID != dstID {
						return fmt.Errorf("%s sees slot %d on %s", s.Addr(), slot, owner.ID)
					}
				}
			}
			return nil
		})
		for i := 0; i < keys; i++ {
			if got, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Int(); err != nil || got != i {
				t.Fatalf("GET key:%d after the reshard = %d, %v", i, got, err)
			}
		}
		c.WaitHealthy(t)
	})
}

func TestClusterFailover(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	c := redistest.StartCluster(t, pool, 3, 1, redistest.ServerOptions{})
	cc := clusterClient(t, c)
	for i := 0; i < 100; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("before:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	replica := c.Replicas[0]
	oldMaster := c.Masters[0]
	replicaID, oldMasterID := c.IDs[replica.Addr()], c.IDs[oldMaster.Addr()]
	topo, err := c.Client(t, replica).ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me, _ := topo.Myself(); !me.IsReplica() || me.MasterID != oldMasterID {
		t.Fatalf("replica before failover: %+v", me)
	}

	if err := c.Client(t, replica).ClusterFailover(ctx, redis.FailoverDefault); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, redistest.FormTimeout, "the replica to be master in every node's model", func() error {
		for _, s := range c.Servers {
			topo, err := c.Client(t, s).ClusterNodes(ctx)
			if err != nil {
				return err
			}
			promoted, _ := topo.NodeByID(replicaID)
			demoted, _ := topo.NodeByID(oldMasterID)
			if !promoted.IsMaster() || !demoted.IsReplica() || demoted.MasterID != replicaID {
				return fmt.Errorf("%s: promoted %v, demoted %v of %s", s.Addr(), promoted.Flags, demoted.Flags, demoted.MasterID)
			}
			if got := ids(topo.ReplicasOf(replicaID)); !reflect.DeepEqual(got, []string{oldMasterID}) {
				return fmt.Errorf("%s: replicas of the new master: %v", s.Addr(), got)
			}
		}
		return nil
	})
	role, err := c.Client(t, replica).Role(ctx)
	if err != nil || role.Kind != redis.RoleMaster {
		t.Errorf("ROLE of the promoted node = %+v, %v", role, err)
	}
	c.WaitHealthy(t)
	for i := 0; i < 100; i++ {
		if got, err := cc.Get(ctx, fmt.Sprintf("before:%d", i)).Int(); err != nil || got != i {
			t.Fatalf("GET before:%d after failover = %d, %v", i, got, err)
		}
	}

	t.Run("a killed master is failed over and rejoins as replica", func(t *testing.T) {
		// replica is the master now, with oldMaster as its replica.
		replica.Kill(t)
		observer := c.Client(t, c.Masters[1])
		redistest.WaitFor(t, redistest.FormTimeout, "the cluster to mark the dead master failed and promote its replica", func() error {
			topo, err := observer.ClusterNodes(ctx)
			if err != nil {
				return err
			}
			if got := ids(topo.FailedNodes()); !reflect.DeepEqual(got, []string{replicaID}) {
				return fmt.Errorf("failed nodes %v", got)
			}
			if promoted, _ := topo.NodeByID(oldMasterID); !promoted.IsMaster() {
				return fmt.Errorf("old master not promoted back: %v", promoted.Flags)
			}
			if !topo.AllSlotsCovered() {
				return fmt.Errorf("unassigned %v", topo.UnassignedSlots())
			}
			return nil
		})
		info, err := observer.ClusterInfo(ctx)
		if err != nil || info.KnownNodes != 6 {
			t.Errorf("CLUSTER INFO with a dead node: %+v, %v", info, err)
		}

		pool.Evict(replica.Endpoint(redis.Auth{}))
		replica.Restart(t)
		c.WaitHealthy(t)
		topo, err := c.Client(t, replica).ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if me, _ := topo.Myself(); me.ID != replicaID || !me.IsReplica() || me.MasterID != oldMasterID {
			t.Errorf("restarted node: %+v", me)
		}
		if len(topo.FailedNodes()) != 0 {
			t.Errorf("failed nodes after restart: %v", ids(topo.FailedNodes()))
		}
		for i := 0; i < 100; i++ {
			if got, err := cc.Get(ctx, fmt.Sprintf("before:%d", i)).Int(); err != nil || got != i {
				t.Fatalf("GET before:%d after the crash = %d, %v", i, got, err)
			}
		}
	})
}

// shardLayout is what must not depend on the protocol: who serves which slots, and in which role.
func shardLayout(shards []redis.Shard) []string {
	var out []string
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			out = append(out, fmt.Sprintf("%v %s %s %s:%d", sh.Slots, n.ID, n.Role, n.IP, n.Port))
		}
	}
	sort.Strings(out)
	return out
}

func ids(nodes []redis.Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	sort.Strings(out)
	return out
}

// A node says which server it runs with the rest of what the operator observes, and takes its
// slots slot by slot (CLUSTER ADDSLOTS), as the operator sends them to servers before Redis 7.
func TestObservationNamesTheServerAndAddSlotsWorksEverywhere(t *testing.T) {
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	s := redistest.StartServer(t, redistest.ServerOptions{Cluster: true})
	c, err := pool.Client(s.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	seen := c.ObserveCluster(ctx)
	if seen.ServerErr != nil || seen.Server.Name != "redis" || !strings.HasPrefix(seen.Server.Version, "7.") || !seen.Server.Has(7, 0) {
		t.Fatalf("INFO server observed as %v (%v), want the installed redis 7", seen.Server, seen.ServerErr)
	}
	want := []redis.SlotRange{{Start: 0, End: 99}, {Start: 200, End: 200}, {Start: 16000, End: 16383}}
	if err := c.ClusterAddSlots(ctx, want...); err != nil {
		t.Fatal(err)
	}
	topo, err := c.ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me, ok := topo.Myself(); !ok || !reflect.DeepEqual(me.Slots, want) {
		t.Errorf("the node serves %v, want %v", me.Slots, want)
	}
	if err := c.ClusterAddSlots(ctx, redis.SlotRange{Start: 50, End: 60}); err == nil {
		t.Error("slots assigned twice")
	}
}
