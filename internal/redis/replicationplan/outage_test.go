package replicationplan

import (
	"strings"
	"testing"
	"time"
)

func TestComputeCallsALinkDownPastItsBoundStuck(t *testing.T) {
	syncing := pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 80))
	cases := []struct {
		name     string
		bound    time.Duration
		linkDown time.Duration
		stuck    bool
		wait     bool
	}{
		{"without a bound a replica syncing is waited for", 0, time.Hour, false, true},
		{"within the bound it is syncing", time.Minute, 30 * time.Second, false, true},
		{"past the bound it is stuck", time.Minute, 2 * time.Minute, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := syncing
			m.LinkDown = c.linkDown
			plan := Compute(Design{Current: "rr-0", LinkDownBound: c.bound}, []Member{pod(0, "10.0.0.1", master(90)), m})
			if (plan.Stuck != "") != c.stuck || (plan.Wait != "") != c.wait || len(plan.Steps) != 0 || plan.Master != "rr-0" {
				t.Fatalf("plan %+v, want stuck %v wait %v", plan, c.stuck, c.wait)
			}
			if c.stuck && (!strings.Contains(plan.Stuck, "rr-1") || !strings.Contains(plan.Stuck, "10.0.0.1:6379")) {
				t.Errorf("stuck %q does not name the replica and the master's address", plan.Stuck)
			}
		})
	}
	// A replica that follows a stale address is re-pointed at once, whatever its link says.
	stale := pod(1, "10.0.0.2", replica("10.0.0.7", "connect", 80))
	stale.LinkDown = time.Hour
	plan := Compute(Design{Current: "rr-0", LinkDownBound: time.Minute}, []Member{pod(0, "10.0.0.1", master(90)), stale})
	if len(plan.Steps) != 1 || plan.Steps[0].String() != "ReplicaOf rr-1 -> 10.0.0.1:6379" || plan.Stuck != "" {
		t.Fatalf("plan %+v, want the replica re-pointed", plan)
	}
}

func TestAssessAndOutages(t *testing.T) {
	cases := []struct {
		name    string
		plan    Plan
		current string
		members []Member
		size    int
		// silent, unlinked: whether Assess finds each; outage: after the bound.
		silent, unlinked bool
	}{
		{
			name:    "serving: master and a linked replica",
			plan:    Plan{Master: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90))},
			size:    2,
		},
		{
			name: "one of two replicas linked is enough",
			plan: Plan{Master: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", nil),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 90))},
			size: 3,
		},
		{
			name:    "the master's pod runs but Redis does not answer (or is cut off)",
			plan:    Plan{Master: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			size:    2,
			silent:  true,
		},
		{
			name:    "the plan waits to promote: the recorded master is named",
			plan:    Plan{MasterDown: true},
			current: "rr-0",
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			size:    2,
			silent:  true,
		},
		{
			name:    "no master chosen: the sentinels' choice is not a master yet",
			plan:    Plan{},
			members: []Member{pod(0, "10.0.0.1", replica("10.0.0.2", "connect", 90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			size:    2,
			silent:  true,
		},
		{
			name:     "the master answers, its only replica's link is down",
			plan:     Plan{Master: "rr-0"},
			members:  []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "sync", 0))},
			size:     2,
			unlinked: true,
		},
		{
			name:     "the master answers, no replica answers",
			plan:     Plan{Master: "rr-0"},
			members:  []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", nil)},
			size:     2,
			unlinked: true,
		},
		{
			name:     "a replica linked to another address does not count",
			plan:     Plan{Master: "rr-0"},
			members:  []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.9", "connected", 90))},
			size:     2,
			unlinked: true,
		},
		{
			name:    "a single pod has no replica to miss",
			plan:    Plan{Master: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90))},
			size:    1,
		},
		{
			name:    "a pod beyond the size (scaling in) is not counted",
			plan:    Plan{Master: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90)), pod(2, "10.0.0.3", nil)},
			size:    2,
		},
	}
	const bound = 20 * time.Second
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Assess(c.plan, c.current, c.members, c.size)
			if (h.MasterSilent != "") != c.silent || (h.Unlinked != "") != c.unlinked {
				t.Fatalf("health %+v, want silent %v unlinked %v", h, c.silent, c.unlinked)
			}
			if got := h.Outages(bound-time.Second, bound-time.Second, bound); len(got) != 0 {
				t.Errorf("within the bound (a restart, a clean fail-over): outages %v", got)
			}
			want := 0
			if c.silent || c.unlinked {
				want = 1
			}
			got := h.Outages(bound, bound, bound)
			if len(got) != want {
				t.Fatalf("past the bound: outages %v, want %d", got, want)
			}
			if want == 1 && !strings.Contains(got[0], "rr-") && (c.plan.Master != "" || c.current != "") {
				t.Errorf("outage %q names no pod", got[0])
			}
		})
	}
}
