package replicationplan

import (
	"slices"
	"testing"
	"time"
)

func TestStuckFailover(t *testing.T) {
	s := time.Second
	// The state an e2e run left for good: down-after 3 s, the master held down for 71 s, both
	// replicas' links down for 104 s (30 s + 71 s allowed).
	stuck := SentinelFailoverView{Pod: "s-1", ObjectivelyDown: true, DownFor: 71 * s, DownAfter: 3 * s, Replicas: []SentinelReplicaView{
		{Host: "r-2", Usable: true, LinkDownFor: 104 * s}, {Host: "r-1", Usable: true, LinkDownFor: 104 * s},
	}}
	with := func(v SentinelFailoverView, change func(*SentinelFailoverView)) SentinelFailoverView {
		v.Replicas = slices.Clone(v.Replicas)
		change(&v)
		return v
	}
	for _, tc := range []struct {
		name  string
		views []SentinelFailoverView
		want  UnstickFailover
		ok    bool
	}{
		{name: "every replica too old for the sentinels' rule", views: []SentinelFailoverView{stuck},
			want: UnstickFailover{Pod: "s-1", DownAfter: 14 * s, Replicas: []string{"r-1", "r-2"}}, ok: true},
		{name: "the lowest pod name of the sentinels that are stuck", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) { v.Pod = "s-2" }), stuck, {Pod: "s-0"}},
			want: UnstickFailover{Pod: "s-1", DownAfter: 14 * s, Replicas: []string{"r-1", "r-2"}}, ok: true},
		{name: "a replica within the rule: the sentinels fail over by themselves", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) { v.Replicas[1].LinkDownFor = 100 * s })}},
		{name: "a failover in progress at any sentinel", views: []SentinelFailoverView{
			stuck, with(stuck, func(v *SentinelFailoverView) { v.Pod, v.FailingOver = "s-2", true })}},
		{name: "not held down with the quorum", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) { v.ObjectivelyDown = false })}},
		{name: "replicas that lost their link long before the master went stay out", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) {
				v.Replicas[0].LinkDownFor = 10 * time.Minute
				v.Replicas[1].LinkDownFor = 135 * s
			})}},
		{name: "only the replica lost with the master is named", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) { v.Replicas[0].LinkDownFor = 10 * time.Minute })},
			want: UnstickFailover{Pod: "s-1", DownAfter: 14 * s, Replicas: []string{"r-1"}}, ok: true},
		{name: "unusable replicas count for nothing", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) {
				v.Replicas[0].Usable = false
				v.Replicas[1].Usable = false
			})}},
		{name: "a long down-after is kept", views: []SentinelFailoverView{
			with(stuck, func(v *SentinelFailoverView) {
				v.DownAfter, v.DownFor = 30*s, 0
				v.Replicas = []SentinelReplicaView{{Host: "r-1", Usable: true, LinkDownFor: 310 * s}}
			})},
			want: UnstickFailover{Pod: "s-1", DownAfter: 35 * s, Replicas: []string{"r-1"}}, ok: true},
		{name: "no sentinel answered", views: []SentinelFailoverView{{Pod: "s-0"}, {Pod: "s-1"}}},
		{name: "no sentinel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := StuckFailover(tc.views)
			if ok != tc.ok || ok && (got.Pod != tc.want.Pod || got.DownAfter != tc.want.DownAfter || !slices.Equal(got.Replicas, tc.want.Replicas)) {
				t.Errorf("StuckFailover = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// Whatever the sentinels say, a failover is asked only of a sentinel that holds the master
// down and can promote no replica by its own rule, and with the period asked every replica
// named qualifies even once the sentinel no longer holds the master down.
func FuzzStuckFailover(f *testing.F) {
	f.Add(uint8(3), uint16(71), uint16(104), uint16(104), true, false, uint8(3))
	f.Add(uint8(30), uint16(0), uint16(310), uint16(5), true, false, uint8(1))
	f.Fuzz(func(t *testing.T, downAfter uint8, downFor, link1, link2 uint16, oDown, failing bool, usable uint8) {
		view := SentinelFailoverView{Pod: "s-0", ObjectivelyDown: oDown, FailingOver: failing,
			DownAfter: time.Duration(downAfter) * time.Second, DownFor: time.Duration(downFor) * time.Second,
			Replicas: []SentinelReplicaView{
				{Host: "r-1", Usable: usable&1 != 0, LinkDownFor: time.Duration(link1) * time.Second},
				{Host: "r-2", Usable: usable&2 != 0, LinkDownFor: time.Duration(link2) * time.Second},
			}}
		got, ok := StuckFailover([]SentinelFailoverView{view})
		if !ok {
			return
		}
		if !oDown || failing || got.Pod != "s-0" || got.DownAfter < view.DownAfter || len(got.Replicas) == 0 {
			t.Fatalf("asked %+v of %+v", got, view)
		}
		for _, r := range view.Replicas {
			if r.Usable && r.LinkDownFor <= 10*view.DownAfter+view.DownFor {
				t.Fatalf("the sentinel could promote %s by itself: %+v", r.Host, view)
			}
			if slices.Contains(got.Replicas, r.Host) && r.LinkDownFor > 10*got.DownAfter {
				t.Fatalf("%s does not qualify with %s: %+v", r.Host, got.DownAfter, view)
			}
		}
	})
}
