package clusterplan

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// A cluster restored from a backup: each leader started with its shard's keys and claimed
// the slots it holds keys of (Redis does, at epoch 0), leaving holes where the backup had no
// key. Alone, no restored leader is given slots early; met, the plan gives only the holes, each
// to its designed leader, and no step takes a claimed slot from the node holding its keys.
func TestRestoredLeadersKeepTheSlotsTheyClaimed(t *testing.T) {
	nodes := empty(healthy())
	nodes[0].slots, nodes[0].epoch = "0-99 101-5000 5100-5461", -1
	nodes[1].slots, nodes[1].epoch = "5462-10922", -1
	nodes[2].slots, nodes[2].epoch = "10923-16000", -1
	c := cluster{known: nodes}
	var all []string
	for _, n := range nodes {
		all = append(all, n.pod)
	}
	if steps := EarlySlots(threeByThree, c.members(nodes, all...)); len(steps) != 0 {
		t.Errorf("early slots for restored leaders: %v", steps)
	}
	plan := Compute(threeByThree, c.members(nodes))
	assertSteps(t, plan, StepAddSlots, 2)
	got := map[string]string{}
	for _, s := range plan.Steps {
		got[s.On] = formatRanges(s.Slots)
	}
	if got["c-leader-0"] != "100,5001-5099" || got["c-leader-2"] != "16001-16383" {
		t.Errorf("holes assigned %v; want each to its designed leader and nothing else", got)
	}
	claimed := map[string][]redis.SlotRange{}
	for _, n := range nodes[:3] {
		for _, text := range strings.Fields(n.slots) {
			r, err := redis.ParseSlotRange(text)
			if err != nil {
				t.Fatal(err)
			}
			claimed[n.pod] = append(claimed[n.pod], r)
		}
	}
	for _, s := range plan.Steps {
		for pod, ranges := range claimed {
			if pod == s.On {
				continue
			}
			for _, mine := range ranges {
				for _, r := range s.Slots {
					if _, overlap := intersect(mine, r); overlap {
						t.Errorf("step %v takes slots %s that %s claimed with their keys", s, r, pod)
					}
				}
			}
		}
	}
}
