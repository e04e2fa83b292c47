package replicationplan

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
