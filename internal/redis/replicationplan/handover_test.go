package replicationplan

import (
	"fmt"
	"strings"
	"testing"
)

func TestPlanHandOver(t *testing.T) {
	const masterIP = "10.0.0.3"
	synced := func(ordinal int, offset int64) Member {
		return ready(pod(ordinal, fmt.Sprintf("10.0.1.%d", ordinal), replica(masterIP, "connected", offset)))
	}
	cases := []struct {
		name    string
		master  string
		members []Member
		size    int
		why     Departure
		to      string
		wait    string // a part of the wait message; "" for none
	}{
		{
			name:    "scale-in: the most advanced replica that stays takes over",
			master:  "rr-2",
			members: []Member{synced(0, 90), synced(1, 95), ready(pod(2, masterIP, master(95)))},
			size:    2, why: ScaleIn, to: "rr-1",
		},
		{
			name:    "scale-in: among equals the lowest ordinal",
			master:  "rr-2",
			members: []Member{synced(1, 95), synced(0, 95), ready(pod(2, masterIP, master(95)))},
			size:    2, why: ScaleIn, to: "rr-0",
		},
		{
			name:    "scale-in: a replica that goes too is never chosen, however far it got",
			master:  "rr-2",
			members: []Member{synced(0, 90), ready(pod(2, masterIP, master(99))), synced(3, 99)},
			size:    2, why: ScaleIn, to: "rr-0",
		},
		{
			name:    "scale-in: a master that stays needs no hand-over",
			master:  "rr-0",
			members: []Member{ready(pod(0, masterIP, master(95))), synced(1, 95), synced(2, 95)},
			size:    2, why: ScaleIn,
		},
		{
			name:    "a master that does not answer has nothing to hand over",
			master:  "rr-2",
			members: []Member{synced(0, 90), pod(2, masterIP, nil)},
			size:    1, why: ScaleIn,
		},
		{
			name:    "a pod that is no longer master has nothing to hand over",
			master:  "rr-2",
			members: []Member{ready(pod(0, "10.0.0.1", master(95))), ready(pod(2, masterIP, replica("10.0.0.1", "connected", 95)))},
			size:    1, why: ScaleIn,
		},
		{
			name:   "link down, not ready, another master's replica or silent: no candidate, wait",
			master: "rr-3",
			members: []Member{ready(pod(0, "10.0.0.1", replica(masterIP, "sync", 95))), pod(1, "10.0.0.2", replica(masterIP, "connected", 95)),
				ready(pod(2, "10.0.0.7", replica("10.0.0.9", "connected", 95))), pod(4, "10.0.0.5", nil), ready(pod(3, masterIP, master(95)))},
			size: 3, why: ScaleIn, wait: "scaling in to 3 pods removes the master rr-3, and no ready replica that stays",
		},
		{
			name:    "rolling update: an updated replica takes over even behind an outdated one",
			master:  "rr-2",
			members: []Member{outdated(synced(0, 95)), synced(1, 90), outdated(ready(pod(2, masterIP, master(95))))},
			size:    3, why: RollingUpdate, to: "rr-1",
		},
		{
			name:    "rolling update: no updated replica in sync yet",
			master:  "rr-2",
			members: []Member{outdated(synced(0, 95)), outdated(synced(1, 95)), outdated(ready(pod(2, masterIP, master(95))))},
			size:    3, why: RollingUpdate, wait: "no ready replica that runs the new revision",
		},
		{
			name:    "rolling update: an updated master stays",
			master:  "rr-2",
			members: []Member{outdated(synced(0, 95)), synced(1, 95), ready(pod(2, masterIP, master(95)))},
			size:    3, why: RollingUpdate,
		},
		{
			name:    "deleted: the terminating master's replica in sync takes over, not one that terminates too",
			master:  "rr-0",
			members: []Member{going(ready(pod(0, masterIP, master(95)))), going(synced(1, 99)), synced(2, 95)},
			size:    3, why: Deleted, to: "rr-2",
		},
		{
			name:    "deleted: every replica terminates too, wait",
			master:  "rr-0",
			members: []Member{going(ready(pod(0, masterIP, master(95)))), going(synced(1, 95))},
			size:    2, why: Deleted, wait: "the master rr-0 terminates",
		},
		{
			name:    "deleted: a master whose pod does not terminate stays",
			master:  "rr-0",
			members: []Member{ready(pod(0, masterIP, master(95))), going(synced(1, 95))},
			size:    2, why: Deleted,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := PlanHandOver(c.master, c.members, c.size, c.why)
			if got.To != c.to || (c.wait == "") != (got.Wait == "") || !strings.Contains(got.Wait, c.wait) {
				t.Errorf("PlanHandOver = %+v, want to %q wait containing %q", got, c.to, c.wait)
			}
		})
	}
}

func going(m Member) Member { m.Terminating = true; return m }

// The terminating pod that answers as a replica of a live master handed its role to it.
func TestHandedOverTo(t *testing.T) {
	const newMaster = "10.0.0.7"
	members := []Member{going(ready(pod(0, "10.0.0.3", replica(newMaster, "connected", 95)))), ready(pod(1, newMaster, master(95))),
		ready(pod(2, "10.0.0.9", replica("10.0.0.3", "connected", 95)))}
	if got := HandedOverTo(members, "rr-0"); got != "rr-1" {
		t.Errorf("HandedOverTo = %q, want rr-1", got)
	}
	members[0].Terminating = false
	if got := HandedOverTo(members, "rr-0"); got != "" {
		t.Errorf("a pod that does not terminate handed over to %q", got)
	}
	members[0] = going(ready(pod(0, "10.0.0.3", master(95))))
	if got := HandedOverTo(members, "rr-0"); got != "" {
		t.Errorf("a terminating master handed over to %q", got)
	}
}
