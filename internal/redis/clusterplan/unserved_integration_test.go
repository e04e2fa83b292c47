//go:build integration

package clusterplan_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// The stalled 4 → 3 scale-in, built on real cluster-mode servers (a master and a replica per
// shard): slot 5461, leader-0's in the three-leader design, went to leader-3 (which then
// holds the greatest config epoch), and on its way back leader-3 gave it up while leader-0's
// claim was lost. No node claims it by its own word; leader-0 and the others map it to
// leader-3, so ADDSLOTS on leader-0 answers "busy" for ever. The plan's steps, run as the
// operator's execStep runs them, make every node map it to leader-0, with cluster_state:ok
// and all 16384 slots assigned everywhere, and the scale-in may then let leader-3 go.
func TestUnservedSlotMappedToTheDepartingLeaderIsClaimedByItsLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := redis.NewPool(redis.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	c := redistest.StartCluster(t, pool, 4, 1, redistest.ServerOptions{})
	leaders := c.Masters
	followers := c.Replicas // follower i replicates leader i
	id := func(s *redistest.Server) string { return c.IDs[s.Addr()] }
	mustAll := func(errs []error) {
		t.Helper()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	// move gives slots from one master to another as the operator does (no keys here):
	// IMPORTING on the target, MIGRATING on the source, then NODE on the target (which bumps
	// its epoch), the source and the other masters. tellTarget false loses the target's claim.
	move := func(slots []int, from, to *redistest.Server, tellTarget bool) {
		t.Helper()
		mustAll(c.Client(t, to).ClusterSetSlotEach(ctx, slots, redis.SlotImporting, id(from)))
		mustAll(c.Client(t, from).ClusterSetSlotEach(ctx, slots, redis.SlotMigrating, id(to)))
		if tellTarget {
			mustAll(c.Client(t, to).ClusterSetSlotEach(ctx, slots, redis.SlotNode, id(to)))
		} else {
			for _, s := range slots {
				if err := c.Client(t, to).ClusterSetSlot(ctx, s, redis.SlotStable, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		mustAll(c.Client(t, from).ClusterSetSlotEach(ctx, slots, redis.SlotNode, id(to)))
		if !tellTarget {
			return // the others keep the last owner they heard of
		}
		for _, s := range leaders {
			if s != from && s != to {
				mustAll(c.Client(t, s).ClusterSetSlotEach(ctx, slots, redis.SlotNode, id(to)))
			}
		}
	}
	// As the operator does (keepDepartingMasterAlone): an emptied master stays a master.
	if err := c.Client(t, leaders[3]).ConfigSet(ctx, "cluster-allow-replica-migration", "no"); err != nil {
		t.Fatal(err)
	}
	const slot = 5461
	var drained []int
	for s := 12288; s <= redis.MaxSlot; s++ {
		drained = append(drained, s)
	}
	move(drained, leaders[3], leaders[2], true)
	move([]int{slot}, leaders[1], leaders[3], true)
	waitEveryView(ctx, t, c, "every node to map slot 5461 to leader-3", func(v redis.Topology) error {
		if n, ok := v.SlotOwner(slot); !ok || n.ID != id(leaders[3]) {
			return fmt.Errorf("slot %d maps to %q", slot, n.ID)
		}
		return nil
	})
	move([]int{slot}, leaders[3], leaders[0], false)

	observe := func() []clusterplan.Member {
		var members []clusterplan.Member
		for _, set := range []struct {
			role    clusterplan.PodRole
			servers []*redistest.Server
		}{{clusterplan.Leader, leaders}, {clusterplan.Follower, followers}} {
			for i, s := range set.servers {
				m := clusterplan.Member{Pod: fmt.Sprintf("c-%s-%d", set.role, i), Role: set.role, Ordinal: i, IP: s.Host, Port: s.Port, BusPort: s.BusPort}
				if v, err := c.Client(t, s).ClusterNodes(ctx); err == nil {
					m.View = &v
				}
				members = append(members, m)
			}
		}
		return members
	}
	design := clusterplan.Design{Leaders: 3, Followers: 3}

	// The stalled state, as Redis shows it: nobody claims the slot, leader-0 maps it to
	// leader-3 and refuses ADDSLOTS, the scale-in keeps leader-3.
	members := observe()
	for _, m := range members {
		if me, _ := m.View.Myself(); me.OwnsSlot(slot) {
			t.Fatalf("%s claims slot %d by its own word; the state needs nobody to", m.Pod, slot)
		}
	}
	if v := members[0].View; v == nil || !mapsTo(*v, slot, id(leaders[3])) {
		t.Fatalf("leader-0's view must map slot %d to leader-3", slot)
	}
	busy := c.Client(t, leaders[0]).ClusterAddSlotsRange(ctx, redis.SlotRange{Start: slot, End: slot})
	if busy == nil || !strings.Contains(busy.Error(), "busy") {
		t.Fatalf("ADDSLOTSRANGE %d on leader-0 = %v, want Redis to answer busy", slot, busy)
	}
	if p := clusterplan.PlanScaleIn(design, members); p.Leaders != 4 {
		t.Fatalf("PlanScaleIn lets leader-3 go while leader-0 maps slot %d to it: %+v", slot, p)
	}

	// Plan and run, as the operator does, until the plan asks nothing of the slots.
	claimed := false
	for round := 0; round < 5; round++ {
		members = observe()
		plan := clusterplan.Compute(design, members)
		var slotSteps []clusterplan.Step
		for _, s := range plan.Steps {
			switch s.Kind {
			case clusterplan.StepAddSlots, clusterplan.StepBumpEpoch, clusterplan.StepSetSlotNode:
				slotSteps = append(slotSteps, s)
			}
		}
		if len(slotSteps) == 0 {
			break
		}
		if round == 0 {
			want := []string{"BumpEpoch c-leader-0", "SetSlotNode c-leader-0", "SetSlotNode c-leader-1", "SetSlotNode c-leader-2"}
			var got []string
			for _, s := range slotSteps {
				got = append(got, string(s.Kind)+" "+s.On)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("steps %q; want %q", got, want)
			}
		}
		for _, step := range slotSteps {
			at := slices.IndexFunc(members, func(m clusterplan.Member) bool { return m.Pod == step.On })
			cl, err := pool.Client(redis.NewEndpoint(members[at].IP, members[at].Port, redis.Auth{}))
			if err != nil {
				t.Fatal(err)
			}
			switch step.Kind {
			case clusterplan.StepAddSlots:
				err = cl.ClusterAddSlotsRange(ctx, step.Slots...)
			case clusterplan.StepBumpEpoch:
				_, err = cl.ClusterBumpEpoch(ctx)
			case clusterplan.StepSetSlotNode:
				var slots []int
				for _, r := range step.Slots {
					for s := r.Start; s <= r.End; s++ {
						slots = append(slots, s)
					}
				}
				err = errors.Join(cl.ClusterSetSlotEach(ctx, slots, redis.SlotNode, step.NodeID)...)
				claimed = claimed || step.On == step.To
			}
			if err != nil {
				t.Fatalf("%v: %v", step, err)
			}
		}
	}
	if !claimed {
		t.Fatal("no step made leader-0 claim the slot")
	}

	// Every node, replicas too (told by gossip alone), maps the slot to leader-0 and serves
	// every slot; leader-0 takes writes to it; the scale-in lets leader-3 go.
	waitEveryView(ctx, t, c, "every node to map slot 5461 to leader-0 with cluster_state:ok and 16384 slots", func(v redis.Topology) error {
		if !mapsTo(v, slot, id(leaders[0])) {
			n, _ := v.SlotOwner(slot)
			return fmt.Errorf("slot %d maps to %q", slot, n.ID)
		}
		if !v.AllSlotsCovered() {
			return fmt.Errorf("slots %v unassigned", v.UnassignedSlots())
		}
		return nil
	})
	redistest.WaitFor(t, 30*time.Second, "cluster_state:ok everywhere", func() error {
		for _, s := range c.Servers {
			info, err := c.Client(t, s).ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !info.OK() || info.SlotsAssigned != redis.SlotCount {
				return fmt.Errorf("%s: state %s, %d slots assigned", s.Addr(), info.State, info.SlotsAssigned)
			}
		}
		return nil
	})
	if me, _ := observe()[0].View.Myself(); !me.OwnsSlot(slot) {
		t.Fatalf("leader-0 does not claim slot %d by its own word", slot)
	}
	direct := goredis.NewClient(&goredis.Options{Addr: leaders[0].Addr()})
	t.Cleanup(func() { _ = direct.Close() })
	key := keyInSlot(ctx, t, direct, slot)
	if err := direct.Set(ctx, key, "served", 0).Err(); err != nil {
		t.Fatalf("SET %s (slot %d) on leader-0: %v", key, slot, err)
	}
	redistest.WaitFor(t, 30*time.Second, "the scale-in to let leader-3 go", func() error {
		if p := clusterplan.PlanScaleIn(design, observe()); p.Leaders != 3 {
			return fmt.Errorf("PlanScaleIn keeps %d leaders: %s (steps %v)", p.Leaders, p.Reason, p.Steps)
		}
		return nil
	})
}

func mapsTo(v redis.Topology, slot int, id string) bool {
	n, ok := v.SlotOwner(slot)
	return ok && n.ID == id
}

// waitEveryView waits until cond holds for every server's CLUSTER NODES.
func waitEveryView(ctx context.Context, t *testing.T, c *redistest.Cluster, what string, cond func(redis.Topology) error) {
	t.Helper()
	redistest.WaitFor(t, 30*time.Second, what, func() error {
		for _, s := range c.Servers {
			v, err := c.Client(t, s).ClusterNodes(ctx)
			if err != nil {
				return err
			}
			if err := cond(v); err != nil {
				return fmt.Errorf("%s: %w", s.Addr(), err)
			}
		}
		return nil
	})
}

// keyInSlot returns a key that hashes to slot, asking the server (CLUSTER KEYSLOT) in batches.
func keyInSlot(ctx context.Context, t *testing.T, rc *goredis.Client, slot int) string {
	t.Helper()
	const batch = 4096
	for base := 0; base < 64*batch; base += batch {
		pipe := rc.Pipeline()
		cmds := make([]*goredis.IntCmd, batch)
		for i := range cmds {
			cmds[i] = pipe.ClusterKeySlot(ctx, fmt.Sprintf("k%d", base+i))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			if int(cmd.Val()) == slot {
				return fmt.Sprintf("k%d", base+i)
			}
		}
	}
	t.Fatalf("no key found for slot %d", slot)
	return ""
}
