package replicationplan

import "slices"

// AgreedMaster returns the master address that more than half of the answering sentinels
// report, "" when no address has that majority. reports holds one entry per sentinel asked:
// the host it reports as the master, "" when it did not answer or does not monitor the group.
//
// Sentinels that did not answer have no vote: the majority is of the answers, so a rolling
// restart of the sentinels does not blind the operator. That is safe because the operator only
// follows the agreed address (Compute takes it as master only if a pod there answers as a
// master) and never promotes while sentinels watch.
func AgreedMaster(reports []string) string {
	host, agreeing, answering := SentinelVote(reports)
	if 2*agreeing > answering {
		return host
	}
	return ""
}

// SentinelVote counts the reports: the address most sentinels name (the lowest on a tie, so
// that the answer does not depend on map order), how many name it and how many answered.
func SentinelVote(reports []string) (host string, agreeing, answering int) {
	votes := map[string]int{}
	for _, h := range reports {
		if h != "" {
			votes[h]++
			answering++
		}
	}
	for h, n := range votes {
		if n > agreeing || (n == agreeing && h < host) {
			host, agreeing = h, n
		}
	}
	return host, agreeing, answering
}

// SentinelView is what one sentinel says of the group it monitors: the host of the master
// and the hosts of the replicas it knows; Master is "" when it did not answer or does not
// monitor the group.
type SentinelView struct {
	Pod      string
	Master   string
	Replicas []string
}

// Reseed names the sentinel that can no longer learn where the group's master is, "" when
// none: a sentinel hears of a failover only through the instances it monitors (their INFO,
// and the other sentinels' hello messages, which travel through them), so one that monitors a
// host where no pod runs and knows no replica where one runs is blind for good. That is a
// sentinel started from a seed naming a master whose pod went before it connected, or every
// sentinel after every pod of the replication came back at a new address. Its pod may start
// again from the current seed, one at a time, while more than half of the sentinels monitor
// master (the current master's host), so that the quorum holds meanwhile; or while every
// sentinel answers and each either monitors master or is blind itself: a blind sentinel takes
// no part in any failover (it cannot see the master the others watch, nor vote on it), so
// restarting it takes nothing from them, and with all of them blind it is the only way out.
// live tells whether a pod of the monitored replication runs at a host. Of several blind
// sentinels, the one with the lowest pod name is named.
func Reseed(views []SentinelView, master string, live func(host string) bool) string {
	if master == "" {
		return ""
	}
	blind := func(v SentinelView) bool {
		return v.Master != "" && v.Master != master && !live(v.Master) && !slices.ContainsFunc(v.Replicas, live)
	}
	agreeing, restBlind := 0, true
	for _, v := range views {
		switch {
		case v.Master == master:
			agreeing++
		case !blind(v):
			restBlind = false // silent, or following another master it can still see
		}
	}
	if 2*agreeing <= len(views) && (!restBlind || !live(master)) {
		return ""
	}
	// The lowest name among the blind, whatever order the views come in (a cache's list has
	// none): the caller's grace clock runs for the one named, so it must stay the same one.
	chosen := ""
	for _, v := range views {
		if blind(v) && (chosen == "" || v.Pod < chosen) {
			chosen = v.Pod
		}
	}
	return chosen
}
