package clusterplan

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// orphanFixture is the healthy 3×3 cluster in which leader-1 no longer claims slot 6000 by
// its own word while every other view still maps it to leader-1 (an UPDATE from a stale
// view took it, or a SETSLOT by hand).
func orphanFixture() (cluster, []Member) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	lost := healthy()
	lost[1].slots = "5462-5999 6001-10922"
	members[1].View = c.viewOf(lost[1], lost)
	return c, members
}

func TestSlotsNoNodeClaimsButAViewMapsAreAdoptedNotAdded(t *testing.T) {
	_, members := orphanFixture()
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepAdoptSlots, 1)
	step := plan.Steps[0]
	if step.On != "c-leader-1" || formatRanges(step.Slots) != "6000" {
		t.Fatalf("want slot 6000 adopted on its designed leader c-leader-1, got %v", step)
	}
	if !strings.Contains(step.Reason, "c-leader-0's view maps slot 6000 to c-leader-1") {
		t.Errorf("the reason must say which view maps the slot where: %q", step.Reason)
	}
}

func TestUnmappedSlotsAreAddedAndMappedOnesAdopted(t *testing.T) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	// Slot 7000 is mapped by no view (never assigned, or unmapped by every node); slot 6000
	// is still mapped to leader-1 by the others.
	everyone := healthy()
	everyone[1].slots = "5462-6999 7001-10922"
	for i := range members {
		members[i].View = c.viewOf(healthy()[i], everyone)
	}
	lost := healthy()
	lost[1].slots = "5462-5999 6001-6999 7001-10922"
	members[1].View = c.viewOf(lost[1], lost)
	plan := Compute(threeByThree, members)
	if len(plan.Steps) != 2 {
		t.Fatalf("want an AddSlots and an AdoptSlots step, got %+v", plan)
	}
	got := map[StepKind]string{}
	for _, s := range plan.Steps {
		if s.On != "c-leader-1" {
			t.Errorf("both go to the slots' designed leader: %v", s)
		}
		got[s.Kind] = formatRanges(s.Slots)
	}
	if got[StepAddSlots] != "7000" || got[StepAdoptSlots] != "6000" {
		t.Errorf("want 7000 added and 6000 adopted, got %v", got)
	}
}

func TestOrphansAreJudgedOnFreshViews(t *testing.T) {
	c, members := orphanFixture()
	if got, silent := Orphans(members, []int{6000, 6001}); silent != "" || !slices.Equal(got, []int{6000}) {
		t.Errorf("want slot 6000 still an orphan and 6001 claimed, got %v (silent %q)", got, silent)
	}

	// The owner claims it again by the time of the fresh read: nothing to adopt.
	if got, _ := Orphans(c.members(healthy()), []int{6000}); len(got) != 0 {
		t.Errorf("a slot its owner claims is no orphan, got %v", got)
	}

	// A move of the slot under way (leader-2 importing it): its ends decide, not adoption.
	importing := healthy()
	importing[2].importing = map[int]string{6000: "c-leader-1"}
	members[2].View = c.viewOf(importing[2], importing)
	if got, _ := Orphans(members, []int{6000}); len(got) != 0 {
		t.Errorf("a slot being moved is no orphan, got %v", got)
	}

	// A pod without a view: nothing is decided.
	_, members = orphanFixture()
	members[4].View = nil
	if got, silent := Orphans(members, []int{6000}); got != nil || silent != "c-follower-1" {
		t.Errorf("want no orphan and the silent pod named, got %v, %q", got, silent)
	}
}

func TestAnOrphanGoesWhereItsKeysAre(t *testing.T) {
	slots := []int{10, 20, 30}
	keys := map[string][]int64{
		"c-leader-0": {0, 5, 0},
		"c-leader-1": {0, 0, 2},
		"c-leader-2": {0, 0, 1},
	}
	a := Adopt(slots, keys, "c-leader-0")
	if !slices.Equal(a.Takers["c-leader-0"], []int{10, 20}) || len(a.Takers["c-leader-1"]) != 0 || len(a.Takers["c-leader-2"]) != 0 {
		t.Errorf("want slot 10 (no keys) to the designed leader and 20 to the only holder of its keys, got %v", a.Takers)
	}
	if a.Keys["c-leader-0"] != 5 {
		t.Errorf("want the 5 keys leader-0 holds counted, got %v", a.Keys)
	}
	if len(a.Problems) != 1 || !strings.Contains(a.Problems[0], "slot 30") || !strings.Contains(a.Problems[0], "c-leader-1, c-leader-2") {
		t.Errorf("a slot with keys on two masters is left alone, naming them: %v", a.Problems)
	}
}

// FuzzAdopt: every orphan is either taken by exactly one master, one holding its keys when
// any does, or named in a problem when several do.
func FuzzAdopt(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 0, 3})
	f.Fuzz(func(t *testing.T, counts []byte) {
		pods := []string{"a", "b", "c"}
		slots := make([]int, len(counts)/len(pods))
		for i := range slots {
			slots[i] = i * 7
		}
		keys := map[string][]int64{}
		for p, pod := range pods {
			for i := range slots {
				keys[pod] = append(keys[pod], int64(counts[i*len(pods)+p]%3))
			}
		}
		a := Adopt(slots, keys, "a")
		for i, slot := range slots {
			var holders, takers []string
			for _, pod := range pods {
				if keys[pod][i] > 0 {
					holders = append(holders, pod)
				}
				if slices.Contains(a.Takers[pod], slot) {
					takers = append(takers, pod)
				}
			}
			problem := slices.ContainsFunc(a.Problems, func(p string) bool { return strings.Contains(p, "slot "+strconv.Itoa(slot)+" ") })
			switch {
			case len(holders) > 1:
				if len(takers) != 0 || !problem {
					t.Fatalf("slot %d with keys on %v: taken by %v, problem %v", slot, holders, takers, problem)
				}
			case len(holders) == 1:
				if !slices.Equal(takers, holders) || problem {
					t.Fatalf("slot %d with keys on %v taken by %v", slot, holders, takers)
				}
			default:
				if !slices.Equal(takers, []string{"a"}) || problem {
					t.Fatalf("slot %d without keys taken by %v, want the fallback", slot, takers)
				}
			}
		}
	})
}
