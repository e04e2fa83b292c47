package replicationplan

import (
	"slices"
	"time"
)

// A sentinel promotes only a replica whose link to the master has been down for at most ten
// times its down-after period, plus the time it has held the master down itself (sentinel.c,
// sentinelSelectSlave): older links mean data older than the master's. A master pod that
// comes back within seconds answers as a replica waiting for its master (every pod of a
// replication starts so), so the sentinels hold it down only once it has reported a replica
// for down-after plus two INFO periods, and a sentinel may take one INFO period more to read
// that report. The replicas' links went down when the master went, so with a short down-after
// (3 s: 30 s allowed) every replica can already be too old when the master is held down, and
// stays so: both clocks run on together. The sentinels then abort every failover ("no good
// slave") and the replication has no master for good. StuckFailover finds that state.

// sentinelInfoPeriod is how often a sentinel reads a monitored instance's INFO.
const sentinelInfoPeriod = 10 * time.Second

// detectionLag is how much longer than the sentinels' own rule a replica's link may have been
// down and still count as lost with the master: the time a sentinel takes to hold down a
// master that came back as a replica (down-after, added per view, plus three INFO periods).
const detectionLag = 3 * sentinelInfoPeriod

// SentinelFailoverView is what one sentinel says of the group's master and replicas
// (SENTINEL MASTER and SENTINEL REPLICAS), read when it holds the master down.
type SentinelFailoverView struct {
	Pod string
	// ObjectivelyDown: the sentinel holds the master down with its quorum (o_down).
	ObjectivelyDown bool
	// FailingOver: a failover of the group is in progress at this sentinel.
	FailingOver bool
	// DownFor is how long the sentinel has held the master subjectively down (s-down-time).
	DownFor time.Duration
	// DownAfter is the sentinel's down-after period for the group.
	DownAfter time.Duration
	Replicas  []SentinelReplicaView
}

// SentinelReplicaView is one replica as a sentinel sees it.
type SentinelReplicaView struct {
	Host string
	// Usable: the sentinel reaches it, does not hold it down, and its priority is not 0.
	Usable bool
	// LinkDownFor is how long the replica has reported its link to the master down.
	LinkDownFor time.Duration
}

// UnstickFailover says which sentinel to ask for a failover (SENTINEL FAILOVER) and the
// down-after period it needs meanwhile so that the replicas lost with the master qualify.
type UnstickFailover struct {
	Pod       string
	DownAfter time.Duration
	// Replicas are the hosts that qualify with DownAfter and not without it.
	Replicas []string
}

// StuckFailover returns the failover to ask when the sentinels hold the master down and can
// never promote a replica by themselves: no sentinel is failing over, and a sentinel that holds
// the master objectively down finds no usable replica within its own rule, while some usable
// replica lost its link no longer before the master was held down than the rule plus the
// detection lag allows (a replica that lost its link long before the master went stays out,
// as the rule means). ok is false in any other state. Of several such sentinels the one with
// the lowest pod name is asked.
func StuckFailover(views []SentinelFailoverView) (UnstickFailover, bool) {
	if slices.ContainsFunc(views, func(v SentinelFailoverView) bool { return v.FailingOver }) {
		return UnstickFailover{}, false
	}
	var best UnstickFailover
	found := false
	for _, v := range views {
		if !v.ObjectivelyDown || v.DownAfter <= 0 {
			continue
		}
		allowed := 10*v.DownAfter + v.DownFor
		var lost []string
		var longest time.Duration
		stuck := true
		for _, r := range v.Replicas {
			if !r.Usable {
				continue
			}
			if r.LinkDownFor <= allowed {
				stuck = false // the sentinel can promote it by itself
				break
			}
			if r.LinkDownFor <= allowed+v.DownAfter+detectionLag {
				lost = append(lost, r.Host)
				longest = max(longest, r.LinkDownFor)
			}
		}
		if !stuck || len(lost) == 0 {
			continue
		}
		// Ten times the period must cover the longest link lost with the master, with margin,
		// whether or not the sentinel still holds the master down when it selects.
		downAfter := max(v.DownAfter, ((longest+detectionLag)/10).Round(time.Second)+time.Second)
		if !found || v.Pod < best.Pod {
			slices.Sort(lost)
			best, found = UnstickFailover{Pod: v.Pod, DownAfter: downAfter, Replicas: lost}, true
		}
	}
	return best, found
}
