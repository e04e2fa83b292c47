package clusterplan

import (
	"fmt"

	"github.com/rediskube/redis-operator/internal/redis"
)

// readdress has each node that announces another address than it should announce the right
// one at run time. Behind NodePorts (a member with a dial address of its own): the node ports
// of a Service that was recreated, the IP of a Kubernetes node that changed under a running
// container; a restarted node reads them from its pod's file and environment
// (builder/cluster_network.go), this covers the time between. In either mode, a node that
// announces another IP than its own: the cluster was switched between NodePort and
// in-cluster addresses and its pod still runs the old template, which the rolling update
// replaces later, while the Services of the old mode are already gone. (In-cluster, ports
// alone are left as they are: a user's configuration may set them.) It comes first: the
// other nodes learn the address from the node's own messages, and meet then introduces it
// anew to those that keep the old one.
func readdress(o *observed) Plan {
	var plan Plan
	for i := range o.members {
		m := &o.members[i]
		if m.IP == "" {
			continue
		}
		me := o.self[m.Pod]
		samePorts := me.Addr.Port == m.Port && me.Addr.BusPort == m.BusPort
		if me.Addr.IP == m.IP && (samePorts || m.DialIP == "") {
			continue
		}
		plan.Steps = append(plan.Steps, Step{Kind: StepAnnounce, On: m.Pod, IP: m.IP, Port: m.Port, BusPort: m.BusPort,
			Reason: fmt.Sprintf("it announces %s@%d, its address is %s@%d", me.Addr.HostPort(), me.Addr.BusPort, hostPort(m), m.BusPort)})
	}
	return plan
}

// announce has a member tell another what it is now when that one's view of it is stale in a
// way only the member's own messages correct: a node learns a master's slots, and a master
// its new replica, from that node's pings, which with a handful of nodes can be seconds
// apart (a ping goes to a node every second, chosen among a few at random). A MEET from the
// member to the other, which already knows it, carries the member's slots and role at once;
// the handshake it also starts ends as soon as the other answers with a node ID known to it.
// Seen during a bootstrap: a master given its slots after it was met, shown without them for
// up to 9 s by a node that then reported cluster_state:fail.
func announce(o *observed) Plan {
	var plan Plan
	for _, m := range o.members {
		for i := range o.members {
			x := &o.members[i]
			if x.Pod == m.Pod {
				continue
			}
			want := o.self[x.Pod]
			seen, ok := m.View.NodeByID(want.ID)
			if !ok || seen.Link != redis.LinkConnected || seen.Is(redis.FlagHandshake) || seen.Is(redis.FlagPFail) || seen.Is(redis.FlagFail) ||
				handshaking(m.View, x) {
				continue // agree waits for these
			}
			slotsUnseen := want.IsMaster() && want.SlotCount() > 0 && seen.SlotCount() == 0
			replicaUnseen := want.IsReplica() && o.idOf[m.Pod] == want.MasterID && (!seen.IsReplica() || seen.MasterID != want.MasterID)
			if slotsUnseen || replicaUnseen {
				to := m
				what := "its slots"
				if replicaUnseen {
					what = "that it is its replica"
				}
				plan.Steps = append(plan.Steps, meetStep(x, &to, fmt.Sprintf("tell %s %s, which it has not heard yet", m.Pod, what)))
			}
		}
	}
	return plan
}
