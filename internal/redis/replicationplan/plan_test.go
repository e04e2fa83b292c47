package replicationplan

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

const port = 6379

func master(offset int64) *redis.Role {
	return &redis.Role{Kind: redis.RoleMaster, ReplicationOffset: offset}
}

func replica(ofIP, state string, offset int64) *redis.Role {
	return &redis.Role{Kind: redis.RoleSlave, MasterIP: ofIP, MasterPort: port, ReplicationState: state, ReplicationOffset: offset}
}

// waiting is a replica as a pod starts: of no master, never linked.
func waiting(offset int64) *redis.Role {
	return &redis.Role{Kind: redis.RoleSlave, MasterIP: redis.NoMasterHost, MasterPort: redis.NoMasterPort, ReplicationState: "connect", ReplicationOffset: offset}
}

func pod(ordinal int, ip string, role *redis.Role) Member {
	return Member{Pod: fmt.Sprintf("rr-%d", ordinal), Ordinal: ordinal, IP: ip, Port: port, Role: role}
}

func TestCompute(t *testing.T) {
	cases := []struct {
		name    string
		design  Design
		members []Member
		// want: master, steps as strings, whether it waits, whether the master is down.
		master string
		steps  []string
		wait   bool
		down   bool
	}{
		{
			name:    "bootstrap: every pod a fresh master, the lowest ordinal leads",
			members: []Member{pod(0, "10.0.0.1", master(0)), pod(1, "10.0.0.2", master(0)), pod(2, "10.0.0.3", master(0))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.1:6379", "ReplicaOf rr-2 -> 10.0.0.1:6379"},
		},
		{
			name:    "bootstrap waits for nobody: pods that do not answer yet are left for later",
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", master(0))},
			master:  "rr-1",
		},
		{
			name: "bootstrap: every pod a replica waiting for its master, the lowest ordinal is promoted",
			members: []Member{pod(0, "10.0.0.1", waiting(0)), pod(1, "10.0.0.2", waiting(0)),
				pod(2, "10.0.0.3", waiting(0))},
			master: "rr-0",
			steps:  []string{"Lead rr-0"},
		},
		{
			name: "bootstrap from disks: the waiting replica holding the most leads",
			members: []Member{pod(0, "10.0.0.1", waiting(10)), pod(1, "10.0.0.2", nil),
				pod(2, "10.0.0.3", waiting(40))},
			master: "rr-2",
			steps:  []string{"Lead rr-2"},
		},
		{
			name:   "restore: the restored pod leads at the first choice, even behind a pod that reports more",
			design: Design{FirstMaster: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", waiting(5)), pod(1, "10.0.0.2", waiting(0)),
				pod(2, "10.0.0.3", waiting(40))},
			master: "rr-0",
			steps:  []string{"Lead rr-0"},
		},
		{
			name:    "restore: while the restored pod does not answer (it restores), no empty pod leads",
			design:  Design{FirstMaster: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", waiting(0)), pod(2, "10.0.0.3", waiting(0))},
			wait:    true,
		},
		{
			name:    "restore: a pod that answers as a master nobody follows is not the restored one: nothing leads",
			design:  Design{FirstMaster: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", master(0))},
			wait:    true,
		},
		{
			name:    "restore: a promotion allowed still makes no empty pod the first master",
			design:  Design{FirstMaster: "rr-0", MayPromote: true},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", master(0)), pod(2, "10.0.0.3", waiting(0))},
			wait:    true,
		},
		{
			name:    "restore: the restored pod led (status not written yet), the others follow it",
			design:  Design{FirstMaster: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(5)), pod(1, "10.0.0.2", waiting(0)), pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 5))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.1:6379"},
		},
		{
			name:   "restore done: pod 0 restarted with the backup again (no volume) waits; the replicas hold more, one is promoted",
			design: Design{FirstMaster: "rr-0", Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", waiting(5)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 90))},
			master: "rr-1",
			steps:  []string{"Promote rr-1"},
		},
		{
			name:    "restore done: a recreated pod 0 never leads over the master its replicas follow",
			design:  Design{FirstMaster: "rr-0", Current: "rr-1"},
			members: []Member{pod(0, "10.0.0.9", waiting(5)), pod(1, "10.0.0.2", master(90)), pod(2, "10.0.0.3", replica("10.0.0.2", "connected", 90))},
			master:  "rr-1",
			steps:   []string{"ReplicaOf rr-0 -> 10.0.0.2:6379"},
		},
		{
			name:   "sentinels watching, every pod restarted waiting: the recorded master leads again among equals",
			design: Design{Current: "rr-1", Sentinels: true, Monitored: "10.0.0.5"},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.8", waiting(0)),
				pod(2, "10.0.0.7", waiting(0))},
			master: "rr-1",
			steps:  []string{"Lead rr-1"},
		},
		{
			name:   "sentinels blind at a gone address after every pod restarted: the replicas follow the master the operator led",
			design: Design{Current: "rr-1", Sentinels: true, Monitored: "10.0.0.5"},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.8", master(0)),
				pod(2, "10.0.0.7", replica("10.0.0.8", "sync", 0))},
			master: "rr-1",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.8:6379"},
			wait:   true,
		},
		{
			name:   "sentinels at a gone address, a replica still follows it: they may still fail over to that replica",
			design: Design{Current: "rr-1", Sentinels: true, Monitored: "10.0.0.5"},
			members: []Member{pod(0, "10.0.0.9", replica("10.0.0.5", "connect", 40)), pod(1, "10.0.0.8", master(0)),
				pod(2, "10.0.0.7", waiting(0))},
			wait: true,
			down: true,
		},
		{
			name:   "sentinels at a gone address and a master the operator did not lead: theirs, not assumed",
			design: Design{Current: "rr-1", Sentinels: true, Monitored: "10.0.0.5"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.8", waiting(0)),
				pod(2, "10.0.0.7", waiting(0))},
			wait: true,
			down: true,
		},
		{
			name:   "every pod that answers waits, the recorded master not yet: it is waited for",
			design: Design{Current: "rr-1", Sentinels: true},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.8", nil),
				pod(2, "10.0.0.7", waiting(0))},
			wait: true,
			down: true,
		},
		{
			name:   "every pod that answers waits, the recorded master past its grace: the others lead",
			design: Design{Current: "rr-1", MayPromote: true},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.8", nil),
				pod(2, "10.0.0.7", waiting(3))},
			master: "rr-2",
			steps:  []string{"Lead rr-2"},
		},
		{
			name:   "sentinels watching: a master that came back as a waiting replica is left to their failover",
			design: Design{Current: "rr-0", Sentinels: true, Monitored: "10.0.0.9"},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.2", replica("10.0.0.9", "connect", 88)),
				pod(2, "10.0.0.3", replica("10.0.0.9", "connect", 90))},
			wait: true,
			down: true,
		},
		{
			name:   "the master restarted in place as a waiting replica: its replicas kept their data and the one with the most is promoted",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", waiting(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 88)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 90))},
			master: "rr-2",
			steps:  []string{"Promote rr-2"},
		},
		{
			name:   "the master restarted at a new IP as a waiting replica: the replica with the most is promoted",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", waiting(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 88)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 90))},
			master: "rr-2",
			steps:  []string{"Promote rr-2"},
		},
		{
			name:   "every pod restarted waiting, from disks: the recorded master leads among equals",
			design: Design{Current: "rr-1"},
			members: []Member{pod(0, "10.0.0.9", waiting(50)), pod(1, "10.0.0.8", waiting(50)),
				pod(2, "10.0.0.7", waiting(20))},
			master: "rr-1",
			steps:  []string{"Lead rr-1"},
		},
		{
			name:   "a replica promoted already leads: the restarted master is not promoted over it",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", waiting(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 88)),
				pod(2, "10.0.0.3", master(90))},
			master: "rr-2",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.3:6379", "ReplicaOf rr-1 -> 10.0.0.3:6379"},
		},
		{
			name:   "a master handing over follows its target, which still says replica: nothing is promoted",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", replica("10.0.0.2", "connect", 90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 90))},
			wait: true,
			down: true,
		},
		{
			name:    "nothing answers",
			members: []Member{pod(0, "10.0.0.1", nil)},
			wait:    true,
		},
		{
			name:    "steady state: nothing to do",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90))},
			master:  "rr-0",
		},
		{
			name:    "a replica still syncing is waited for",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "sync", 0))},
			master:  "rr-0",
			wait:    true,
		},
		{
			name:   "the master restarted at a new IP: the replica with the most of its stream is promoted at once",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 88)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 90))},
			master: "rr-2",
			steps:  []string{"Promote rr-2"},
		},
		{
			name:   "every pod restarted together: the recorded master leads with its disk",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.8", master(0)),
				pod(2, "10.0.0.7", master(0))},
			master: "rr-0",
			steps:  []string{"ReplicaOf rr-1 -> 10.0.0.9:6379", "ReplicaOf rr-2 -> 10.0.0.9:6379"},
		},
		{
			name:    "a master restarted from a snapshot is replaced by a replica that got further",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(70)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			master:  "rr-1",
			steps:   []string{"Promote rr-1"},
		},
		{
			name:    "replicas that never synced do not replace a restarted master",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 0))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.9:6379"},
		},
		{
			name:    "with sentinels a restarted master is left to them",
			design:  Design{Current: "rr-0", Sentinels: true, Monitored: "10.0.0.9"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.9:6379"},
		},
		{
			name:    "a replica restarted as an empty master: it rejoins as a replica",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.7", master(0)), pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 90))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.1:6379"},
		},
		{
			name:    "the master is gone: without permission nothing is promoted",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)), pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 95))},
			wait:    true,
			down:    true,
		},
		{
			name:    "the master is gone for long: the replica with the highest offset is promoted",
			design:  Design{Current: "rr-0", MayPromote: true},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)), pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 95))},
			master:  "rr-2",
			steps:   []string{"Promote rr-2"},
			down:    true,
		},
		{
			name:    "a replica that restarted as a master with less is not promoted over one that kept following",
			design:  Design{Current: "rr-0", MayPromote: true},
			members: []Member{pod(1, "10.0.0.8", master(50)), pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 95))},
			master:  "rr-2",
			steps:   []string{"Promote rr-2"},
			down:    true,
		},
		{
			name:   "after a promotion the promoted master leads, and the old master rejoins as replica",
			design: Design{Current: "rr-2"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)),
				pod(2, "10.0.0.3", master(95))},
			master: "rr-2",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.3:6379", "ReplicaOf rr-1 -> 10.0.0.3:6379"},
		},
		// The status comes from a cache: a reconcile right after a promotion may still read the
		// old master in it, or an operator restart may have lost the write. The promoted replica
		// leads; promoting its tied peer too would drop the writes it acknowledged.
		{
			name:   "restarted master, status not yet naming the promoted replica: no second promotion of its tied peer",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", master(96)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 96))},
			master: "rr-1",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.2:6379", "ReplicaOf rr-2 -> 10.0.0.2:6379"},
		},
		{
			name:   "restarted master, the promoted replica took writes since: it leads",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 96)),
				pod(2, "10.0.0.3", master(140))},
			master: "rr-2",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.3:6379", "ReplicaOf rr-1 -> 10.0.0.3:6379"},
		},
		{
			name:    "restarted master of two, status not yet naming the promoted replica: the empty one follows it",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", master(96))},
			master:  "rr-1",
			steps:   []string{"ReplicaOf rr-0 -> 10.0.0.2:6379"},
		},
		{
			name:   "master gone, status not yet naming the promoted replica: no second promotion of its tied peer",
			design: Design{Current: "rr-0", MayPromote: true},
			members: []Member{pod(0, "10.0.0.1", nil), pod(1, "10.0.0.2", master(95)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 95))},
			master: "rr-1",
			steps:  []string{"ReplicaOf rr-2 -> 10.0.0.2:6379"},
		},
		{
			name:   "a master that replicas follow beats the recorded master with none",
			design: Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", master(120)),
				pod(2, "10.0.0.3", replica("10.0.0.2", "sync", 0))},
			master: "rr-1",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.2:6379"},
			wait:   true,
		},
		{
			name:   "the sentinels' master stands even when another master has followers",
			design: Design{Current: "rr-0", Sentinels: true, Monitored: "10.0.0.2"},
			members: []Member{pod(0, "10.0.0.1", master(0)), pod(1, "10.0.0.2", master(120)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connected", 0))},
			master: "rr-1",
			steps:  []string{"ReplicaOf rr-0 -> 10.0.0.2:6379", "ReplicaOf rr-2 -> 10.0.0.2:6379"},
		},
		{
			name:    "with sentinels the operator never promotes",
			design:  Design{Current: "rr-0", Sentinels: true, Monitored: "10.0.0.1", MayPromote: true},
			members: []Member{pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			wait:    true,
			down:    true,
		},
		{
			name:   "while the sentinels' master is down, a restarted empty master is not followed",
			design: Design{Current: "rr-0", Sentinels: true, Monitored: "10.0.0.1"},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90)),
				pod(2, "10.0.0.3", replica("10.0.0.1", "connect", 90))},
			wait: true,
			down: true,
		},
		{
			name:    "sentinels that do not answer: a master nobody follows is not assumed",
			design:  Design{Current: "rr-0", Sentinels: true},
			members: []Member{pod(0, "10.0.0.9", master(0)), pod(1, "10.0.0.2", replica("10.0.0.1", "connect", 90))},
			wait:    true,
			down:    true,
		},
		{
			name:    "sentinels that do not answer: a followed master is kept and stragglers follow it",
			design:  Design{Current: "rr-0", Sentinels: true},
			members: []Member{pod(0, "10.0.0.1", master(90)), pod(1, "10.0.0.2", replica("10.0.0.1", "connected", 90)), pod(2, "10.0.0.7", master(0))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-2 -> 10.0.0.1:6379"},
		},
		{
			name:    "bootstrap under sentinels that wait for a master: the operator chooses the first",
			design:  Design{Sentinels: true},
			members: []Member{pod(0, "10.0.0.1", master(0)), pod(1, "10.0.0.2", master(0))},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.1:6379"},
		},
		{
			name:    "a replica of a wrong port is re-pointed",
			design:  Design{Current: "rr-0"},
			members: []Member{pod(0, "10.0.0.1", master(5)), pod(1, "10.0.0.2", &redis.Role{Kind: redis.RoleSlave, MasterIP: "10.0.0.1", MasterPort: 7000, ReplicationState: "connect"})},
			master:  "rr-0",
			steps:   []string{"ReplicaOf rr-1 -> 10.0.0.1:6379"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := Compute(c.design, c.members)
			var steps []string
			for _, s := range plan.Steps {
				steps = append(steps, s.String())
				if s.Reason == "" {
					t.Errorf("step %s has no reason", s)
				}
			}
			if plan.Master != c.master || !slices.Equal(steps, c.steps) || (plan.Wait != "") != c.wait || plan.MasterDown != c.down {
				t.Errorf("plan = master %q steps %v wait %q down %v\nwant master %q steps %v wait %v down %v",
					plan.Master, steps, plan.Wait, plan.MasterDown, c.master, c.steps, c.wait, c.down)
			}
		})
	}
}

// FuzzCompute checks the invariants of any plan: the master is an answering pod, no step runs
// on it except its own promotion, at most one pod is promoted, and every replica is pointed at
// the master's address.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(0), true)
	f.Add([]byte{3, 3, 1, 200, 7, 0, 0, 9, 1, 1, 1, 1}, uint8(2), false)
	f.Fuzz(func(t *testing.T, data []byte, current uint8, mayPromote bool) {
		sentinels := current&0x80 != 0
		current &= 0x7f
		var members []Member
		for i := 0; i+2 < len(data) && len(members) < 6; i += 3 {
			ord := len(members)
			// Pods never share an address; replicas may point at any, or at one that is gone.
			ip := fmt.Sprintf("10.0.%d.%d", data[i]%2, ord)
			var role *redis.Role
			switch data[i+1] % 4 {
			case 1:
				role = master(int64(data[i+2]))
			case 2, 3:
				state := "connected"
				if data[i+1]%4 == 3 {
					state = "connect"
				}
				role = replica(fmt.Sprintf("10.0.%d.%d", data[i+2]%2, data[i+2]%7), state, int64(data[i+2]/2))
				if data[i+2]%5 == 0 {
					role = waiting(int64(data[i+2] / 2)) // started afresh, told no master yet
				}
			}
			members = append(members, pod(ord, ip, role))
		}
		d := Design{MayPromote: mayPromote, Sentinels: sentinels}
		if int(current) < len(members) {
			d.Current = members[current].Pod
		}
		plan := Compute(d, members)
		byPod := map[string]*Member{}
		for i := range members {
			byPod[members[i].Pod] = &members[i]
		}
		promotions, failovers := 0, 0
		for _, s := range plan.Steps {
			m := byPod[s.On]
			if m == nil || m.Role == nil {
				t.Fatalf("step %s on a pod that did not answer", s)
			}
			switch s.Kind {
			case StepPromote, StepLead:
				if s.Kind == StepPromote {
					failovers++
				}
				promotions++
				if s.On != plan.Master {
					t.Fatalf("promotes %s but the master is %s", s.On, plan.Master)
				}
			case StepReplicaOf:
				if s.On == plan.Master {
					t.Fatalf("the master %s is made a replica", s.On)
				}
				if mm := byPod[plan.Master]; mm == nil || s.Host != mm.IP {
					t.Fatalf("%s points at %s, not at the master %s", s.On, s.Host, plan.Master)
				}
			}
		}
		// Before the first master is chosen the sentinels monitor nothing: the operator chooses.
		if sentinels && failovers > 0 && d.Current != "" {
			t.Fatalf("promoted %s although sentinels decide", plan.Master)
		}
		if promotions > 1 {
			t.Fatalf("%d promotions", promotions)
		}
		if plan.Master != "" && (byPod[plan.Master] == nil || byPod[plan.Master].Role == nil) {
			t.Fatalf("master %s did not answer", plan.Master)
		}
		if plan.Master == "" && len(plan.Steps) > 0 {
			t.Fatalf("steps %v without a master", plan.Steps)
		}
		// A promotion is final: once the promoted replica is master (keeping its offset), the
		// next plan follows it rather than promoting another pod.
		if promotions == 1 {
			next := slices.Clone(members)
			for i := range next {
				if next[i].Pod == plan.Master {
					next[i].Role = master(next[i].Role.ReplicationOffset)
				}
			}
			again := Compute(Design{Current: plan.Master, MayPromote: mayPromote}, next)
			if again.Master != plan.Master {
				t.Fatalf("after promoting %s the next plan chose %s (%v) for %v", plan.Master, again.Master, again.Steps, next)
			}
			for _, s := range again.Steps {
				if s.Kind == StepPromote || s.Kind == StepLead {
					t.Fatalf("after promoting %s the next plan promotes again: %v", plan.Master, again.Steps)
				}
			}
		}
		if plan.Master == "" && plan.Wait == "" {
			t.Fatalf("the plan for %v neither chose a master nor said what it waits for", members)
		}
	})
}
