package replicationplan

import "testing"

func TestAgreedMaster(t *testing.T) {
	cases := []struct {
		name    string
		reports []string
		want    string
	}{
		{name: "no sentinel asked"},
		{name: "no sentinel answered", reports: []string{"", "", ""}},
		{name: "all agree", reports: []string{"10.0.0.1", "10.0.0.1", "10.0.0.1"}, want: "10.0.0.1"},
		{name: "two of three", reports: []string{"10.0.0.2", "10.0.0.1", "10.0.0.2"}, want: "10.0.0.2"},
		{name: "a tie is no majority", reports: []string{"10.0.0.1", "10.0.0.2"}},
		{name: "half is no majority", reports: []string{"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{name: "a plurality is no majority", reports: []string{"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}},
		{name: "silent sentinels have no vote", reports: []string{"", "10.0.0.1", ""}, want: "10.0.0.1"},
		{name: "the majority of the answers counts", reports: []string{"", "10.0.0.1", "10.0.0.1", "10.0.0.2", ""}, want: "10.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AgreedMaster(c.reports); got != c.want {
				t.Errorf("AgreedMaster(%q) = %q, want %q", c.reports, got, c.want)
			}
		})
	}
}

func TestSentinelVote(t *testing.T) {
	for _, c := range []struct {
		reports             []string
		host                string
		agreeing, answering int
	}{
		{nil, "", 0, 0},
		{[]string{"", ""}, "", 0, 0},
		{[]string{"b", "a", "b", ""}, "b", 2, 3},
		{[]string{"b", "a"}, "a", 1, 2}, // a tie: the lowest, whatever the order
		{[]string{"a", "b"}, "a", 1, 2},
	} {
		host, agreeing, answering := SentinelVote(c.reports)
		if host != c.host || agreeing != c.agreeing || answering != c.answering {
			t.Errorf("SentinelVote(%q) = %q %d %d, want %q %d %d", c.reports, host, agreeing, answering, c.host, c.agreeing, c.answering)
		}
	}
}

func TestReseedOnlyABlindSentinelWhileTheOthersAgree(t *testing.T) {
	live := func(host string) bool { return host == "10.0.0.2" || host == "10.0.0.3" || host == "10.0.0.9" }
	current := "10.0.0.2"
	agree := func(pod string) SentinelView {
		return SentinelView{Pod: pod, Master: current, Replicas: []string{"10.0.0.3", "10.0.0.9"}}
	}
	blind := SentinelView{Pod: "s-2", Master: "10.0.0.1", Replicas: nil}
	for _, c := range []struct {
		name  string
		views []SentinelView
		want  string
	}{
		{name: "every sentinel follows the master", views: []SentinelView{agree("s-0"), agree("s-1"), agree("s-2")}},
		{name: "a sentinel seeded with a master gone before it connected", views: []SentinelView{agree("s-0"), agree("s-1"), blind}, want: "s-2"},
		{name: "behind but knowing a live replica: it hears the others' hellos",
			views: []SentinelView{agree("s-0"), agree("s-1"), {Pod: "s-2", Master: "10.0.0.1", Replicas: []string{"10.0.0.1", "10.0.0.3"}}}},
		{name: "behind, monitoring a live pod: its INFO tells", views: []SentinelView{agree("s-0"), agree("s-1"), {Pod: "s-2", Master: "10.0.0.9"}}},
		{name: "no majority on the master: a failover may still run", views: []SentinelView{agree("s-0"), {Pod: "s-1"}, blind}},
		{name: "half is no majority", views: []SentinelView{agree("s-0"), blind, {Pod: "s-3", Master: "10.0.0.7"}, {Pod: "s-1"}}},
		{name: "a silent sentinel is not blind", views: []SentinelView{agree("s-0"), agree("s-1"), {Pod: "s-2"}}},
		{name: "one at a time", views: []SentinelView{agree("s-0"), agree("s-1"), agree("s-3"), blind, {Pod: "s-4", Master: "10.0.0.8"}}, want: "s-2"},
		{name: "every sentinel blind after every pod moved", views: []SentinelView{
			{Pod: "s-0", Master: "10.0.0.1", Replicas: []string{"10.0.0.5", "10.0.0.6"}},
			{Pod: "s-1", Master: "10.0.0.1", Replicas: []string{"10.0.0.5"}}, blind}, want: "s-0"},
		{name: "of several blind, the lowest name whatever the order", views: []SentinelView{
			{Pod: "s-2", Master: "10.0.0.1"}, {Pod: "s-0", Master: "10.0.0.1"}, {Pod: "s-1", Master: "10.0.0.1"}}, want: "s-0"},
		{name: "the others blind, one reseeded already", views: []SentinelView{agree("s-0"), {Pod: "s-1", Master: "10.0.0.1"}, blind}, want: "s-1"},
		{name: "the others blind, one still starting", views: []SentinelView{{Pod: "s-0"}, {Pod: "s-1", Master: "10.0.0.1"}, blind}},
		{name: "a minority sees another live master", views: []SentinelView{{Pod: "s-0", Master: "10.0.0.9"}, {Pod: "s-1", Master: "10.0.0.1"}, blind}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Reseed(c.views, current, live); got != c.want {
				t.Errorf("Reseed = %q, want %q", got, c.want)
			}
		})
	}
	if got := Reseed([]SentinelView{blind}, "", live); got != "" {
		t.Errorf("no master known: want no reseed, got %q", got)
	}
	if got := Reseed([]SentinelView{blind, {Pod: "s-3", Master: "10.0.0.1"}}, "10.0.0.4", live); got != "" {
		t.Errorf("every sentinel blind and the master's pod gone too: want no reseed (the seed would name nothing live), got %q", got)
	}
}
