package clusterplan

import (
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// FuzzCompute feeds arbitrary CLUSTER NODES views to the planner: it must not panic, and every
// step must name a pod of the cluster and act on what the views show.
func FuzzCompute(f *testing.F) {
	c := cluster{known: healthy()}
	var seed []string
	for _, n := range healthy() {
		seed = append(seed, c.viewOf(n, healthy()).String())
	}
	f.Add(strings.Join(seed, "\x00"), uint8(3), uint8(3))
	fresh := empty(healthy())
	var alone []string
	for _, n := range fresh {
		alone = append(alone, c.viewOf(n, []node{n}).String())
	}
	f.Add(strings.Join(alone, "\x00"), uint8(3), uint8(3))

	f.Fuzz(func(t *testing.T, views string, leaders, followers uint8) {
		design := Design{Leaders: int(leaders%4) + 1, Followers: int(followers % 7)}
		texts := strings.Split(views, "\x00")
		var members []Member
		ips := map[string]bool{}
		for i := 0; i < design.Leaders+design.Followers; i++ {
			role, ordinal := Leader, i
			if i >= design.Leaders {
				role, ordinal = Follower, i-design.Leaders
			}
			m := Member{Pod: string(role) + "-" + string(rune('a'+i)), Role: role, Ordinal: ordinal,
				IP: "10.0.0." + string(rune('1'+i)), Port: 6379, BusPort: 16379}
			ips[m.IP] = true
			if i < len(texts) {
				if topo, err := redis.ParseClusterNodes(texts[i]); err == nil {
					m.View = &topo
				}
			}
			members = append(members, m)
		}
		plan := Compute(design, members)
		pods := map[string]bool{}
		for _, m := range members {
			pods[m.Pod] = true
		}
		for _, s := range plan.Steps {
			if !pods[s.On] {
				t.Fatalf("step on unknown pod: %v", s)
			}
			switch s.Kind {
			case StepMeet:
				if !ips[s.IP] {
					t.Fatalf("meet of an address that is no pod's: %v", s)
				}
			case StepAddSlots:
				for _, r := range s.Slots {
					if !r.Valid() {
						t.Fatalf("invalid slot range in %v", s)
					}
				}
			case StepReplicate, StepForget:
				if len(s.NodeID) != redis.NodeIDLength {
					t.Fatalf("bad node ID in %v", s)
				}
			case StepFailover:
			default:
				t.Fatalf("unknown step %v", s)
			}
		}
	})
}
