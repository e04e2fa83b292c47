//go:build integration

package controller

import (
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestOrphanedSlotsGoWhereTheirKeysAre: two slots that no node claims while the other views
// still map them to a node (what a stale UPDATE leaves behind, made here by hand behind the
// operator's back). Slot A was moved by hand, with its keys, from leader-0 to leader-1, which
// then dropped it (DELSLOTS keeps the keys); slot B, without keys, was handed by its owner
// leader-2 to leader-0, which never took it. CLUSTER ADDSLOTS is refused for both on their
// designed leaders ("already busy"): the operator must give A to the master holding its keys
// (leader-1, not its designed leader-0) and B to leader-2, and every key must read back.
func TestOrphanedSlotsGoWhereTheirKeysAre(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixture(t, 3, 0)
	f.runPods()
	f.waitReady(60 * time.Second)
	f.writeKeys(200)
	leader0, leader1, leader2 := f.name+"-leader-0", f.name+"-leader-1", f.name+"-leader-2"
	id0, id1, id2 := f.nodeID(leader0), f.nodeID(leader1), f.nodeID(leader2)
	c0, c1, c2 := f.nodeClient(leader0), f.nodeClient(leader1), f.nodeClient(leader2)

	// Slot A: the slot of a key leader-0 serves; slot B: one of leader-2's without keys.
	slotA, slotB := -1, -1
	for i := 0; i < 200 && slotA < 0; i++ {
		slot := int(c0.ClusterKeySlot(f.ctx, fmt.Sprintf("key-%d", i)).Val())
		if owner, _ := f.topology(leader0).SlotOwner(slot); owner.ID == id0 {
			slotA = slot
		}
	}
	for slot := 16383; slot > 10922 && slotB < 0; slot-- {
		if n, _ := c2.ClusterCountKeysInSlot(f.ctx, slot).Result(); n == 0 {
			slotB = slot
		}
	}
	if slotA < 0 || slotB < 0 {
		t.Fatalf("no slot to orphan: A %d, B %d", slotA, slotB)
	}
	keysA := c0.ClusterCountKeysInSlot(f.ctx, slotA).Val()

	f.setSkip(true)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Slot A moves by hand, with its keys, from leader-0 to leader-1.
	must("IMPORTING", c1.Do(f.ctx, "CLUSTER", "SETSLOT", slotA, "IMPORTING", id0).Err())
	must("MIGRATING", c0.Do(f.ctx, "CLUSTER", "SETSLOT", slotA, "MIGRATING", id1).Err())
	keys, err := c0.ClusterGetKeysInSlot(f.ctx, slotA, 1000).Result()
	must("GETKEYSINSLOT", err)
	host, port := f.kubelet.pod(leader1).ip, f.port
	must("MIGRATE", c0.Do(f.ctx, append([]any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}, toAny(keys)...)...).Err())
	for _, c := range []*goredis.Client{c1, c0, c2} {
		must("SETSLOT NODE", c.Do(f.ctx, "CLUSTER", "SETSLOT", slotA, "NODE", id1).Err())
	}
	// leader-1 drops it, keeping the keys.
	must("DELSLOTS", c1.Do(f.ctx, "CLUSTER", "DELSLOTS", slotA).Err())
	// Slot B: leader-2 hands it to leader-0, which never takes it.
	must("SETSLOT NODE", c2.Do(f.ctx, "CLUSTER", "SETSLOT", slotB, "NODE", id0).Err())

	// The orphans as the test means them: no node claims either slot, leader-0 maps A to
	// leader-1, and ADDSLOTS on the designed leaders is refused.
	for _, pod := range []string{leader0, leader1, leader2} {
		me, _ := f.topology(pod).Myself()
		if me.OwnsSlot(slotA) || me.OwnsSlot(slotB) {
			t.Fatalf("%s claims slot %d or %d: no orphan to adopt", pod, slotA, slotB)
		}
	}
	if owner, ok := f.topology(leader0).SlotOwner(slotA); !ok || owner.ID != id1 {
		t.Fatalf("leader-0 must still map slot %d to leader-1, maps it to %v", slotA, owner.ID)
	}
	if err := c0.Do(f.ctx, "CLUSTER", "ADDSLOTS", slotA).Err(); err == nil {
		t.Fatalf("ADDSLOTS %d on leader-0 was accepted: the slot is no orphan Redis refuses to assign", slotA)
	}
	if got := c1.ClusterCountKeysInSlot(f.ctx, slotA).Val(); got != keysA || got == 0 {
		t.Fatalf("leader-1 holds %d keys of slot %d, want the %d moved", got, slotA, keysA)
	}

	f.setSkip(false)
	f.poke()
	waitUntil(t, 60*time.Second, "the orphans owned again, where their keys are", func() error {
		for pod, want := range map[string]map[int]string{leader0: {slotA: id1, slotB: id2}, leader1: {slotA: id1, slotB: id2}, leader2: {slotA: id1, slotB: id2}} {
			topo, err := f.tryTopology(pod)
			if err != nil {
				return err
			}
			for slot, id := range want {
				if owner, ok := topo.SlotOwner(slot); !ok || owner.ID != id {
					return fmt.Errorf("%s maps slot %d to %q, want %s", pod, slot, owner.ID, id)
				}
			}
		}
		return nil
	})
	f.waitReady(60 * time.Second)
	f.readKeys(200)
	f.assertEvents("ClusterAdoptSlots")
}
