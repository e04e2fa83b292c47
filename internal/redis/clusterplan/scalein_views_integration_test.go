//go:build integration

package clusterplan_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A 4 → 3 scale-in whose last SETSLOT NODE did not reach one master, on real cluster-mode
// servers: the departing master serves nothing by its own word, the lagging master still maps
// the slot (with its keys, now on the new owner) to it. The plan keeps the departing pod and
// re-announces the slot: BUMPEPOCH on the owner, SETSLOT NODE on the laggard, run as the
// operator runs them. Once every view agrees, and only then, the pod may go; the keys are
// read back from the owner, and every node routes the slot there.
func TestDepartingMasterWaitsUntilALaggingMasterIsToldTheSlotsOwner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := redis.NewPool(redis.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	c := redistest.StartCluster(t, pool, 4, 0, redistest.ServerOptions{})

	// The departing master (leader-3) is the one that serves the keys' slot.
	const tag, keys = "{scale-in}", 40
	direct := func(s *redistest.Server) *goredis.Client {
		rc := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = rc.Close() })
		return rc
	}
	slot := int(direct(c.Masters[0]).ClusterKeySlot(ctx, tag).Val())
	topo, err := c.Client(t, c.Masters[0]).ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ownerNode, _ := topo.SlotOwner(slot)
	servers := slices.Clone(c.Masters)
	at := slices.IndexFunc(servers, func(s *redistest.Server) bool { return c.IDs[s.Addr()] == ownerNode.ID })
	servers[at], servers[3] = servers[3], servers[at]
	departing, owner, laggard := servers[3], servers[0], servers[1]
	pods := map[*redistest.Server]string{}
	for i, s := range servers {
		pods[s] = fmt.Sprintf("c-leader-%d", i)
	}
	for i := 0; i < keys; i++ {
		if err := direct(departing).Set(ctx, fmt.Sprintf("%s:%d", tag, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	observe := func() []clusterplan.Member {
		var members []clusterplan.Member
		for i, s := range servers {
			m := clusterplan.Member{Pod: pods[s], Role: clusterplan.Leader, Ordinal: i, IP: s.Host, Port: s.Port, BusPort: s.BusPort}
			if v, err := c.Client(t, s).ClusterNodes(ctx); err == nil {
				m.View = &v
			}
			members = append(members, m)
		}
		return members
	}
	design := clusterplan.Design{Leaders: 3}

	// Drain leader-3 onto leader-0 as the operator does, but tell leader-1 of every slot
	// except the one with keys.
	me, _ := topo.NodeByID(c.IDs[departing.Addr()])
	var drained []int
	for _, r := range me.Slots {
		for s := r.Start; s <= r.End; s++ {
			drained = append(drained, s)
		}
	}
	src, dst := c.Client(t, departing), c.Client(t, owner)
	// As the operator does (keepDepartingMasterAlone): an emptied master stays a master.
	if err := src.ConfigSet(ctx, "cluster-allow-replica-migration", "no"); err != nil {
		t.Fatal(err)
	}
	srcID, dstID := c.IDs[departing.Addr()], c.IDs[owner.Addr()]
	mustAll := func(errs []error) {
		t.Helper()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	mustAll(dst.ClusterSetSlotEach(ctx, drained, redis.SlotImporting, srcID))
	mustAll(src.ClusterSetSlotEach(ctx, drained, redis.SlotMigrating, dstID))
	if moved, err := src.MigrateSlots(ctx, drained, owner.Host, owner.Port, redis.MigrateOptions{Replace: true}); err != nil || moved != keys {
		t.Fatalf("moved %d keys, %v", moved, err)
	}
	mustAll(dst.ClusterSetSlotEach(ctx, drained, redis.SlotNode, dstID))
	mustAll(src.ClusterSetSlotEach(ctx, drained, redis.SlotNode, dstID))
	mustAll(c.Client(t, servers[2]).ClusterSetSlotEach(ctx, drained, redis.SlotNode, dstID))
	others := slices.DeleteFunc(slices.Clone(drained), func(s int) bool { return s == slot })
	mustAll(c.Client(t, laggard).ClusterSetSlotEach(ctx, others, redis.SlotNode, dstID))

	// The laggard's view, and the plan on it. Gossip may have told it meanwhile: the test then
	// puts the stale mapping back (SETSLOT NODE to the departing node, as a lost message
	// leaves it) and reads again.
	var members []clusterplan.Member
	redistest.WaitFor(t, 30*time.Second, "an observation with the laggard's stale view", func() error {
		members = observe()
		if n, ok := members[1].View.NodeByID(srcID); ok && n.OwnsSlot(slot) {
			return nil
		}
		mustAll([]error{c.Client(t, laggard).ClusterSetSlot(ctx, slot, redis.SlotNode, srcID)})
		return errors.New("gossip told the laggard first")
	})
	if me, _ := members[3].View.Myself(); me.SlotCount() != 0 {
		t.Fatalf("leader-3 serves %d slots by its own word, want 0", me.SlotCount())
	}
	plan := clusterplan.PlanScaleIn(design, members)
	if plan.Leaders != 4 || plan.Reason == "" {
		t.Fatalf("PlanScaleIn = %d leaders (%q): leader-3 must stay while leader-1 maps slot %d to it", plan.Leaders, plan.Reason, slot)
	}
	want := []clusterplan.StepKind{clusterplan.StepBumpEpoch, clusterplan.StepSetSlotNode}
	if len(plan.Steps) != 2 || plan.Steps[0].Kind != want[0] || plan.Steps[0].On != "c-leader-0" ||
		plan.Steps[1].Kind != want[1] || plan.Steps[1].On != "c-leader-1" || plan.Steps[1].NodeID != dstID ||
		len(plan.Steps[1].Slots) != 1 || plan.Steps[1].Slots[0] != (redis.SlotRange{Start: slot, End: slot}) {
		t.Fatalf("steps %v; want BUMPEPOCH on leader-0, then SETSLOT %d NODE leader-0 on leader-1", plan.Steps, slot)
	}

	// Run them, as the operator's execStep does, and read every view again.
	for _, step := range plan.Steps {
		cl := c.Client(t, servers[slices.IndexFunc(servers, func(s *redistest.Server) bool { return pods[s] == step.On })])
		switch step.Kind {
		case clusterplan.StepBumpEpoch:
			if _, err := cl.ClusterBumpEpoch(ctx); err != nil {
				t.Fatal(err)
			}
		case clusterplan.StepSetSlotNode:
			mustAll(cl.ClusterSetSlotEach(ctx, []int{slot}, redis.SlotNode, step.NodeID))
		}
	}
	redistest.WaitFor(t, 30*time.Second, "every view to agree leader-3 serves nothing", func() error {
		plan = clusterplan.PlanScaleIn(design, observe())
		if plan.Leaders != 3 || plan.Reason != "" || len(plan.Steps) != 0 {
			return fmt.Errorf("PlanScaleIn = %d leaders (%q), steps %v", plan.Leaders, plan.Reason, plan.Steps)
		}
		return nil
	})

	// Real outcomes: every node routes the slot to leader-0, whose config epoch is the
	// greatest in the laggard's view, and the keys are there.
	for _, s := range servers {
		v, err := c.Client(t, s).ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := v.SlotOwner(slot); !ok || n.ID != dstID {
			t.Errorf("%s routes slot %d to %s, want leader-0", pods[s], slot, n.ID)
		}
		shards, err := direct(s).ClusterShards(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		served := false
		for _, shard := range shards {
			for _, r := range shard.Slots {
				if int(r.Start) <= slot && slot <= int(r.End) {
					served = slices.ContainsFunc(shard.Nodes, func(n goredis.Node) bool { return n.ID == dstID && n.Role == "master" })
					if !served {
						t.Errorf("%s: CLUSTER SHARDS gives slot %d to %+v, want leader-0", pods[s], slot, shard.Nodes)
					}
				}
			}
		}
		if !served {
			t.Errorf("%s: CLUSTER SHARDS serves slot %d nowhere on leader-0", pods[s], slot)
		}
	}
	lv, _ := c.Client(t, laggard).ClusterNodes(ctx)
	ownerSeen, _ := lv.NodeByID(dstID)
	departingSeen, _ := lv.NodeByID(srcID)
	if ownerSeen.ConfigEpoch <= departingSeen.ConfigEpoch {
		t.Errorf("the laggard sees leader-0 at epoch %d, leader-3 at %d: the owner's claim must win", ownerSeen.ConfigEpoch, departingSeen.ConfigEpoch)
	}
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("%s:%d", tag, i)
		if got, err := direct(owner).Get(ctx, key).Int(); err != nil || got != i {
			t.Errorf("GET %s on leader-0 = %d, %v", key, got, err)
		}
	}
	if n, err := src.ClusterCountKeysInSlot(ctx, slot); err != nil || n != 0 {
		t.Errorf("leader-3 still holds %d keys of slot %d, %v", n, slot, err)
	}
}
