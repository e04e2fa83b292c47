package clusterplan

import (
	"maps"
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
	f.Add(strings.Join(seed, "\x00"), uint8(3), uint8(3), uint8(0))
	fresh := empty(healthy())
	var alone []string
	for _, n := range fresh {
		alone = append(alone, c.viewOf(n, []node{n}).String())
	}
	f.Add(strings.Join(alone, "\x00"), uint8(3), uint8(3), uint8(0))
	four := cluster{known: fourByFour()}
	var scaled []string
	for _, n := range fourByFour() {
		scaled = append(scaled, four.viewOf(n, fourByFour()).String())
	}
	f.Add(strings.Join(scaled, "\x00"), uint8(2), uint8(2), uint8(2))

	// departing adds leader and follower pods beyond the design, as during a scale-in.
	f.Fuzz(func(t *testing.T, views string, leaders, followers, departing uint8) {
		design := Design{Leaders: int(leaders%4) + 1, Followers: int(followers % 7)}
		extraLeaders, extraFollowers := int(departing%3), int(departing/3%3)
		texts := strings.Split(views, "\x00")
		var members []Member
		ips := map[string]bool{}
		podsOf := design.Leaders + extraLeaders
		for i := 0; i < podsOf+design.Followers+extraFollowers; i++ {
			role, ordinal := Leader, i
			if i >= podsOf {
				role, ordinal = Follower, i-podsOf
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
		for _, o := range Outages(design, members) {
			if o == "" {
				t.Fatal("an empty outage")
			}
		}
		pods := map[string]bool{}
		for _, m := range members {
			pods[m.Pod] = true
		}
		for _, s := range EarlySlots(design, members) {
			if s.Kind != StepAddSlots || !strings.HasPrefix(s.On, string(Leader)) || len(s.Slots) != 1 || !s.Slots[0].Valid() {
				t.Fatalf("early slots must give a leader one valid range: %v", s)
			}
		}
		a := Roll(design, members, departing%2 == 0)
		if (a.Delete != "" && !pods[a.Delete]) || (a.Failover != "" && !pods[a.Failover]) {
			t.Fatalf("roll names an unknown pod: %+v", a)
		}
		if a.Failover != "" {
			assertKnownEverywhere(t, members, a.Failover)
		}
		for _, m := range members {
			if p := PlanRequestedFailover(members, m.Pod); p.Failover != "" {
				assertKnownEverywhere(t, members, p.Failover)
			}
		}
		keepLeaders, keepFollowers, _ := Keep(design, members)
		if keepLeaders < design.Leaders || keepLeaders > podsOf || keepFollowers < design.Followers || keepFollowers > design.Followers+extraFollowers {
			t.Fatalf("Keep = %d leaders, %d followers: outside the design and the pods", keepLeaders, keepFollowers)
		}
		ids := map[string]string{} // pod → node ID it reports
		for _, m := range members {
			if m.View != nil {
				if me, ok := m.View.Myself(); ok {
					ids[m.Pod] = me.ID
				}
			}
		}
		assertAddressHolders(t, members)
		for _, s := range plan.Steps {
			if !pods[s.On] {
				t.Fatalf("step on unknown pod: %v", s)
			}
			switch s.Kind {
			case StepMeet:
				if !ips[s.IP] {
					t.Fatalf("meet of an address that is no pod's: %v", s)
				}
			case StepAddSlots, StepAdoptSlots:
				if !strings.HasPrefix(s.On, string(Leader)) || len(s.Slots) == 0 {
					t.Fatalf("unserved slots go to a leader: %v", s)
				}
				for _, r := range s.Slots {
					if !r.Valid() {
						t.Fatalf("invalid slot range in %v", s)
					}
				}
			case StepReplicate, StepForget:
				if len(s.NodeID) != redis.NodeIDLength {
					t.Fatalf("bad node ID in %v", s)
				}
			case StepMigrate:
				if !pods[s.To] || s.To == s.On || ids[s.To] != s.NodeID || !ips[s.IP] || len(s.Slots) == 0 {
					t.Fatalf("migrate must name another pod by its node ID and address: %v", s)
				}
				for _, r := range s.Slots {
					if !r.Valid() {
						t.Fatalf("invalid slot range in %v", s)
					}
				}
			case StepFailover:
				assertKnownEverywhere(t, members, s.On)
			default:
				t.Fatalf("unknown step %v", s)
			}
		}
	})
}

// assertKnownEverywhere fails unless every member that answers as a master serving slots (a
// voter) has the pod's node at the pod's address, linked, neither suspected nor failing: a
// failover asked otherwise elects nobody and blocks the next election for four node timeouts.
func assertKnownEverywhere(t *testing.T, members []Member, pod string) {
	t.Helper()
	var candidate *Member
	for i := range members {
		if members[i].Pod == pod {
			candidate = &members[i]
		}
	}
	if candidate == nil || candidate.View == nil {
		t.Fatalf("failover on %s, which does not answer", pod)
	}
	me, ok := candidate.View.Myself()
	if !ok {
		t.Fatalf("failover on %s, which has no myself line", pod)
	}
	for _, m := range members {
		if m.Pod == pod || m.View == nil {
			continue
		}
		if self, ok := m.View.Myself(); !ok || !self.IsMaster() || self.SlotCount() == 0 {
			continue
		}
		seen, ok := m.View.NodeByID(me.ID)
		switch {
		case !ok:
			t.Fatalf("failover on %s, which master %s does not know", pod, m.Pod)
		case seen.Addr.IP != candidate.IP || seen.Addr.Port != candidate.Port || seen.Addr.BusPort != candidate.BusPort:
			t.Fatalf("failover on %s (at %s:%d@%d), which master %s knows at %s@%d", pod, candidate.IP, candidate.Port, candidate.BusPort, m.Pod, seen.Addr.HostPort(), seen.Addr.BusPort)
		case seen.Link != redis.LinkConnected || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail):
			t.Fatalf("failover on %s, which master %s sees with link %s, flags %s", pod, m.Pod, seen.Link, seen.Flags)
		}
		if me.IsReplica() && (!seen.IsReplica() || seen.MasterID != me.MasterID) {
			t.Fatalf("failover on %s, which master %s takes for %s of %q", pod, m.Pod, seen.Flags, seen.MasterID)
		}
		if me.IsReplica() {
			claimed, _ := candidate.View.NodeByID(me.MasterID)
			if known, ok := m.View.NodeByID(me.MasterID); ok && known.ConfigEpoch > claimed.ConfigEpoch {
				t.Fatalf("failover on %s, which claims its master's config epoch %d, master %s knows %d", pod, claimed.ConfigEpoch, m.Pod, known.ConfigEpoch)
			}
		}
	}
}

// assertAddressHolders checks AddressHolders against members, with each pod's previous holder
// taken from the first view's nodes: an answering pod holds its address by its own line only
// (a master serving slots), a silent one only by what held it before, and with nobody
// answering what held before stands.
func assertAddressHolders(t *testing.T, members []Member) {
	t.Helper()
	previous := map[string]string{}
	answering := 0
	for i, m := range members {
		if m.View != nil {
			answering++
		}
		if v := members[0].View; v != nil && i < len(v.Nodes) {
			previous[m.Pod] = v.Nodes[i].ID
		}
	}
	holders := AddressHolders(members, previous)
	if answering == 0 && !maps.Equal(holders, previous) {
		t.Fatalf("with nobody answering the holders changed: %v, before %v", holders, previous)
	}
	for _, m := range members {
		id, held := holders[m.Pod]
		if m.View == nil {
			if held && previous[m.Pod] != id {
				t.Fatalf("silent pod %s held by %s, which did not hold it before (%s)", m.Pod, id, previous[m.Pod])
			}
			continue
		}
		me, ok := m.View.Myself()
		serving := ok && me.IsMaster() && me.SlotCount() > 0
		if held != serving || held && id != me.ID {
			t.Fatalf("answering pod %s held by %q (%v); its own line: %+v", m.Pod, id, held, me)
		}
	}
	for pod := range holders {
		if memberOf(members, pod) == nil && holders[pod] != previous[pod] {
			t.Fatalf("pod %s of no member held by %s", pod, holders[pod])
		}
	}
}
