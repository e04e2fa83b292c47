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
