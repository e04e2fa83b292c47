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
	votes, answers := map[string]int{}, 0
	for _, host := range reports {
		if host != "" {
			votes[host]++
			answers++
		}
	}
	for host, n := range votes {
		if 2*n > answers {
			return host
		}
	}
	return ""
}
