package clusterplan

import (
	"fmt"
	"strings"
	"testing"
)

// behindNodePorts is the healthy cluster as it is known behind NodePorts: the pods of one
// Kubernetes node share its IP and differ by their node ports.
func behindNodePorts() []node {
	nodes := healthy()
	for i := range nodes {
		nodes[i].podIP = nodes[i].ip
		nodes[i].ip = fmt.Sprint("192.168.0.", 2+i%3)
		nodes[i].port, nodes[i].bus = 30000+2*i, 30001+2*i
	}
	return nodes
}

func TestClusterBehindNodePortsIsConverged(t *testing.T) {
	c := cluster{known: behindNodePorts()}
	members := c.members(behindNodePorts())
	if plan := Compute(threeByThree, members); !plan.Converged() {
		t.Fatalf("want converged, got %+v", plan)
	}
	if got := Outages(threeByThree, members); len(got) != 0 {
		t.Errorf("outages %q of a healthy cluster", got)
	}
	if ip, port := members[0].Dial(); ip != "10.0.0.1" || port != 6379 {
		t.Errorf("the operator dials %s:%d, want the pod's 10.0.0.1:6379", ip, port)
	}
}

// A node that announces another address than it should (its Service recreated with new node
// ports, or its Kubernetes node's IP changed under it) is told the right one before anything
// else, even while the others still know it at the old one.
func TestNodeAnnouncingAStaleAddressIsReaddressed(t *testing.T) {
	known := behindNodePorts()
	c := cluster{known: known}
	now := behindNodePorts()
	now[1].ip, now[1].port, now[1].bus = "192.168.0.9", 31000, 31001 // where leader-1 should be
	members := c.members(behindNodePorts())
	members[1].IP, members[1].Port, members[1].BusPort = now[1].ip, now[1].port, now[1].bus
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepAnnounce, 1)
	s := plan.Steps[0]
	if s.On != "c-leader-1" || s.IP != "192.168.0.9" || s.Port != 31000 || s.BusPort != 31001 {
		t.Errorf("step %+v, want c-leader-1 to announce 192.168.0.9:31000@31001", s)
	}
	if !strings.Contains(s.Reason, "192.168.0.3:30002@30003") {
		t.Errorf("reason %q does not say the stale address", s.Reason)
	}

	// Once it announces the new address, the nodes that know it at the old one meet it anew.
	c = cluster{known: now}
	readdressed := c.members(now)
	for i := range readdressed {
		if readdressed[i].Pod != "c-leader-1" {
			readdressed[i].View = c.viewOf(now[i], known)
		}
	}
	plan = Compute(threeByThree, readdressed)
	assertSteps(t, plan, StepMeet, 5)
	for _, m := range plan.Steps {
		if m.On == "c-leader-1" || m.IP != "192.168.0.9" || m.Port != 31000 || m.BusPort != 31001 {
			t.Errorf("meet %+v, want the others to meet c-leader-1 at 192.168.0.9:31000@31001", m)
		}
	}
}

// In-cluster members (no dial address of their own) keep the ports they announce, which a
// user's configuration may set; one that announces another IP (its pod still runs the
// NodePort template after a switch back) is given its pod's address.
func TestInClusterMembersAreReaddressedByIPOnly(t *testing.T) {
	c := cluster{known: healthy()}
	members := c.members(healthy())
	members[2].BusPort = 16400
	for _, s := range Compute(threeByThree, members).Steps {
		if s.Kind == StepAnnounce {
			t.Fatalf("step %v on an in-cluster member whose ports differ", s)
		}
	}
	switched := behindNodePorts()
	c = cluster{known: switched}
	members = c.members(switched)
	for i := range members {
		members[i].IP, members[i].Port, members[i].BusPort = members[i].DialIP, 6379, 16379
		members[i].DialIP, members[i].DialPort = "", 0
	}
	plan := Compute(threeByThree, members)
	assertSteps(t, plan, StepAnnounce, 6)
	if s := plan.Steps[0]; s.On != "c-leader-0" || s.IP != "10.0.0.1" || s.Port != 6379 || s.BusPort != 16379 {
		t.Errorf("step %+v, want c-leader-0 to announce 10.0.0.1:6379@16379", s)
	}
}

// Pods sharing their Kubernetes node's IP are told apart by port: one that does not answer
// is named, and the others are not counted down with it.
func TestOutagesBehindNodePortsNameThePod(t *testing.T) {
	c := cluster{known: behindNodePorts()}
	members := c.members(behindNodePorts())
	members[4].View = nil // c-follower-1 shares 192.168.0.3 with c-leader-1
	got := Outages(threeByThree, members)
	if len(got) != 2 || !strings.Contains(got[0], "pod c-follower-1 does not answer") || !strings.Contains(got[1], "master c-leader-1 has no replica up") {
		t.Errorf("outages %q, want c-follower-1 silent and c-leader-1 without a replica", got)
	}
}
