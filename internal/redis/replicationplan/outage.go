package replicationplan

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// Health is what a replication serves beyond its pods being ready: whether its master answers
// and whether a replica is linked to it. Each field is "" when fine, or says what and where.
type Health struct {
	// MasterSilent: no pod answers as the master (its pod gone, not running, Redis not
	// answering or cut off the network): writes fail.
	MasterSilent string
	// Unlinked: replicas are designed and none has its link up to the master: the data has a
	// single copy and a master loss would lose it.
	Unlinked string
}

// Assess reads the health of a replication of size pods from its members and the plan's
// master, or, while the plan has none, the recorded one (current).
func Assess(plan Plan, current string, members []Member, size int) Health {
	name := cmp.Or(plan.Master, current)
	var master *Member
	for i := range members {
		if members[i].Pod == name {
			master = &members[i]
		}
	}
	if master == nil || master.Role == nil || master.Role.Kind != redis.RoleMaster {
		if name == "" {
			name = "(none chosen)"
		}
		where := ""
		if master != nil && master.IP != "" {
			where = " at " + net.JoinHostPort(master.IP, strconv.Itoa(master.Port))
		}
		return Health{MasterSilent: fmt.Sprintf("the master %s%s does not answer", name, where)}
	}
	if size < 2 {
		return Health{}
	}
	var why []string
	for _, m := range members {
		if m.Pod == master.Pod || m.Ordinal >= size {
			continue
		}
		switch {
		case m.Role == nil:
			why = append(why, m.Pod+" does not answer")
		case m.Role.LinkUp() && m.Role.MasterIP == master.IP && m.Role.MasterPort == master.Port:
			return Health{}
		case m.Role.Kind == redis.RoleSlave:
			why = append(why, fmt.Sprintf("%s link %s to %s", m.Pod, m.Role.ReplicationState, net.JoinHostPort(m.Role.MasterIP, strconv.Itoa(m.Role.MasterPort))))
		default:
			why = append(why, m.Pod+" is a "+string(m.Role.Kind))
		}
	}
	if len(why) == 0 {
		why = append(why, "no replica pod exists")
	}
	return Health{Unlinked: fmt.Sprintf("no replica is linked to the master %s at %s (%s)", master.Pod,
		net.JoinHostPort(master.IP, strconv.Itoa(master.Port)), strings.Join(why, "; "))}
}

// Outages returns what has lasted at least bound: a master silent or replicas unlinked that
// long is an outage; shorter, it is a restart or a fail-over under way (a sentinel or
// requested fail-over leaves the replicas unlinked for the seconds of their resync).
func (h Health) Outages(masterSilentFor, unlinkedFor, bound time.Duration) []string {
	var out []string
	if h.MasterSilent != "" && masterSilentFor >= bound {
		out = append(out, fmt.Sprintf("%s (for more than %s)", h.MasterSilent, bound))
	}
	if h.Unlinked != "" && unlinkedFor >= bound {
		out = append(out, fmt.Sprintf("%s (for more than %s)", h.Unlinked, bound))
	}
	return out
}
