package replicationplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fuzzMembers decodes up to eight pods from data, four bytes each: what ROLE answers (nothing,
// master, replica with its link up or down), whose address a replica follows (any pod's, or
// one no pod has), the offset, and whether the pod is ready and outdated.
func fuzzMembers(data []byte) []Member {
	var members []Member
	for i := 0; i+3 < len(data) && len(members) < 8; i += 4 {
		ordinal := len(members)
		var role *redis.Role
		offset := int64(data[i+2] % 8) // few values, so that ties are common
		switch data[i] % 4 {
		case 1:
			role = master(offset)
		case 2, 3:
			state := "connected"
			if data[i]%4 == 3 {
				state = "sync"
			}
			role = replica(fmt.Sprintf("10.0.0.%d", data[i+1]%10), state, offset)
		}
		m := pod(ordinal, fmt.Sprintf("10.0.0.%d", ordinal), role)
		m.Ready, m.Outdated, m.Terminating = data[i+3]&1 != 0, data[i+3]&2 != 0, data[i+3]&4 != 0
		members = append(members, m)
	}
	return members
}

// FuzzDecisions checks the invariants of the choices made around a master's departure: the
// chosen replica is always an eligible candidate and never the departing master, the roll
// order names every outdated pod that stays exactly once with the master last, and an agreed
// sentinel master has more than half of the answers.
func FuzzDecisions(f *testing.F) {
	// A Ready replication of three, rr-0 master, everything outdated.
	f.Add([]byte{1, 0, 5, 3, 2, 0, 5, 3, 2, 0, 4, 3}, uint8(3), uint8(0), false, "10.0.0.0\x0010.0.0.0\x00")
	// Scale-in to two with rr-2 the master, the replicas at equal offsets.
	f.Add([]byte{2, 2, 5, 1, 2, 2, 5, 1, 1, 0, 5, 1}, uint8(2), uint8(2), false, "10.0.0.2\x0010.0.0.1")
	// Link down, not ready, silent and stray replicas; sentinels that disagree.
	f.Add([]byte{3, 1, 7, 3, 1, 0, 7, 2, 0, 0, 0, 0, 2, 9, 7, 3, 2, 1, 6, 1}, uint8(4), uint8(1), true, "a\x00b\x00a\x00\x00c")
	// The pod named master answers as a replica: the roll must still say why it waits.
	f.Add([]byte("2007"), uint8('='), uint8(0), false, "0")
	f.Fuzz(func(t *testing.T, data []byte, size, masterIndex uint8, sentinels bool, reports string) {
		members := fuzzMembers(data)
		n := int(size % 10)
		masterPod := fmt.Sprintf("rr-%d", masterIndex%10) // may name no pod
		byPod := map[string]*Member{}
		for i := range members {
			byPod[members[i].Pod] = &members[i]
		}

		var all []*Member
		for i := range members {
			all = append(all, &members[i])
		}
		best := BestReplica(all)
		for _, m := range all {
			if m.Role == nil {
				continue
			}
			if best == nil {
				t.Fatalf("no best replica although %s answered", m.Pod)
			}
			if m.Role.ReplicationOffset > best.Role.ReplicationOffset ||
				m.Role.ReplicationOffset == best.Role.ReplicationOffset && m.Ordinal < best.Ordinal {
				t.Fatalf("BestReplica chose %s (offset %d) over %s (offset %d)", best.Pod, best.Role.ReplicationOffset, m.Pod, m.Role.ReplicationOffset)
			}
		}
		if best != nil && best.Role == nil {
			t.Fatalf("BestReplica chose %s, which did not answer", best.Pod)
		}

		for why, name := range map[Departure]string{ScaleIn: "scale-in", RollingUpdate: "rolling update", Deleted: "deletion"} {
			h := PlanHandOver(masterPod, members, n, why)
			if h.To != "" && h.Wait != "" {
				t.Fatalf("%s: both hands over and waits: %+v", name, h)
			}
			if h.To == "" {
				continue
			}
			to, from := byPod[h.To], byPod[masterPod]
			switch {
			case to == nil || from == nil:
				t.Fatalf("%s: hand-over names unknown pods: %+v", name, h)
			case to == from:
				t.Fatalf("%s: the departing master %s is its own successor", name, h.To)
			case to.Role == nil || !to.Role.LinkUp() || to.Role.MasterIP != from.IP || !to.Ready || to.Ordinal >= n:
				t.Fatalf("%s: %s is not a ready replica in sync with %s that stays: %+v", name, h.To, masterPod, *to)
			case to.Terminating:
				t.Fatalf("%s: hands over to %s, whose pod terminates", name, h.To)
			case why == RollingUpdate && to.Outdated:
				t.Fatalf("rolling update hands over to the outdated %s", h.To)
			case from.Role == nil || from.Role.Kind != redis.RoleMaster:
				t.Fatalf("%s: hands over from %s, which is no master", name, masterPod)
			}
		}

		order := RollOrder(members, n, masterPod)
		var want []string
		for _, m := range members {
			if m.Outdated && m.Ordinal < n {
				want = append(want, m.Pod)
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(want))) {
			t.Fatalf("roll order %v does not cover the outdated pods that stay %v exactly once", order, want)
		}
		for i, p := range order {
			if p == masterPod && i != len(order)-1 {
				t.Fatalf("roll order %v replaces the master %s before a replica", order, masterPod)
			}
			if i > 0 && order[i-1] != masterPod && p != masterPod && byPod[order[i-1]].Ordinal < byPod[p].Ordinal {
				t.Fatalf("roll order %v is not highest ordinal first", order)
			}
		}

		a := Roll(members, n, masterPod, sentinels)
		switch {
		case a.Delete != "" && a.HandOverTo != "":
			t.Fatalf("roll both deletes and hands over: %+v", a)
		case a.Delete != "" && (len(order) == 0 || a.Delete != order[0] || a.Left != len(order)-1):
			t.Fatalf("roll deletes %s out of order %v: %+v", a.Delete, order, a)
		case a.Delete == masterPod && !sentinels:
			t.Fatalf("roll deletes the master %s without handing its role over", masterPod)
		case a.HandOverTo != "" && (sentinels || a.HandOverTo == masterPod || len(order) != 1 || order[0] != masterPod):
			t.Fatalf("roll hands over to %s out of turn (order %v, sentinels %v)", a.HandOverTo, order, sentinels)
		case a == (RollAction{}) && len(order) > 0:
			t.Fatalf("roll does nothing and says nothing with %v outdated", order)
		}

		answers := strings.Split(reports, "\x00")
		agreed := AgreedMaster(answers)
		votes, answered := map[string]int{}, 0
		for _, host := range answers {
			if host != "" {
				votes[host]++
				answered++
			}
		}
		for host, v := range votes {
			if 2*v > answered && agreed != host {
				t.Fatalf("%q has %d of %d answers but the agreed master is %q", host, v, answered, agreed)
			}
		}
		if agreed != "" && 2*votes[agreed] <= answered {
			t.Fatalf("agreed master %q has only %d of %d answers", agreed, votes[agreed], answered)
		}
	})
}

// FuzzOnePromotion checks that a promotion is never followed by another: once the promoted
// replica answers as a master, the next plan promotes nobody, whether its status names the
// promoted pod or still the old master (read from a cache before the write shows, or lost by an
// operator restart).
func FuzzOnePromotion(f *testing.F) {
	// The master restarted empty at a new IP, both replicas tied on what they hold.
	f.Add([]byte{1, 0, 0, 0, 2, 9, 6, 1, 2, 9, 6, 1}, uint8(0), false)
	// The master is gone, the replicas tied.
	f.Add([]byte{0, 0, 0, 0, 2, 0, 5, 1, 2, 0, 5, 1}, uint8(0), true)
	f.Fuzz(func(t *testing.T, data []byte, masterIndex uint8, mayPromote bool) {
		members := fuzzMembers(data)
		d := Design{Current: fmt.Sprintf("rr-%d", masterIndex%10), MayPromote: mayPromote}
		first := Compute(d, members)
		var promoted string
		for _, s := range first.Steps {
			if s.Kind == StepPromote {
				promoted = s.On
			}
		}
		if promoted == "" {
			return
		}
		after := slices.Clone(members)
		for i := range after {
			if after[i].Pod == promoted {
				role := *after[i].Role
				role.Kind, role.MasterIP, role.MasterPort, role.ReplicationState = redis.RoleMaster, "", 0, ""
				after[i].Role = &role
			}
		}
		for _, current := range []string{d.Current, promoted} {
			next := Compute(Design{Current: current, MayPromote: mayPromote}, after)
			for _, s := range next.Steps {
				if s.Kind == StepPromote && s.On != promoted {
					t.Fatalf("promoted %s, then with status naming %s promotes %s too: %+v", promoted, current, s.On, next)
				}
			}
		}
	})
}

// FuzzReseed: whatever the sentinels say, a reseed names one sentinel that is blind (it
// monitors a host where no pod runs, and knows no replica where one runs), while more than
// half of them monitor the current master, or while every one answers and each follows the
// live master or is blind: never one that follows it, never a silent one.
func FuzzReseed(f *testing.F) {
	f.Add([]byte{2, 2, 1, 0, 0, 3}, uint8(2), uint8(0b0110))
	f.Add([]byte{2, 2, 2, 1, 1, 0}, uint8(2), uint8(0b0100))
	f.Add([]byte{1, 5, 1, 0, 2, 0}, uint8(2), uint8(0b1100)) // the others blind, one reseeded already
	f.Fuzz(func(t *testing.T, data []byte, masterHost, liveMask uint8) {
		host := func(b byte) string { return fmt.Sprintf("10.0.0.%d", b%8) }
		live := func(h string) bool {
			var n int
			_, _ = fmt.Sscanf(h, "10.0.0.%d", &n)
			return liveMask&(1<<(n%8)) != 0
		}
		master := host(masterHost)
		var views []SentinelView
		for i := 0; i+1 < len(data) && len(views) < 7; i += 2 {
			v := SentinelView{Pod: fmt.Sprintf("s-%d", len(views))}
			if data[i] != 0 {
				v.Master = host(data[i])
			}
			for j := range data[i+1] % 3 {
				v.Replicas = append(v.Replicas, host(data[i+1]+j))
			}
			views = append(views, v)
		}
		got := Reseed(views, master, live)
		if got == "" {
			return
		}
		agreeing := 0
		for _, v := range views {
			if v.Master == master {
				agreeing++
			}
		}
		sees := func(v SentinelView) bool {
			return v.Master == "" || v.Master == master || live(v.Master) || slices.ContainsFunc(v.Replicas, live)
		}
		if 2*agreeing <= len(views) {
			if !live(master) {
				t.Fatalf("reseed of %s while only %d of %d sentinels follow the master, whose host runs no pod", got, agreeing, len(views))
			}
			for _, v := range views {
				if v.Master != master && sees(v) {
					t.Fatalf("reseed of %s while only %d of %d sentinels follow the master and %+v is not blind", got, agreeing, len(views), v)
				}
			}
		}
		for _, v := range views {
			if v.Pod == got && sees(v) {
				t.Fatalf("reseed of %s, which can still learn the master: %+v", got, v)
			}
			if v.Pod < got && !sees(v) {
				t.Fatalf("reseed of %s while %s, a lower name, is blind too: the choice must not depend on order", got, v.Pod)
			}
		}
	})
}
