package replicationplan

// Label is the redis-role a pod carries; the -master Service selects LabelMaster.
type Label string

// The labels a pod may carry.
const (
	LabelMaster  Label = "master"
	LabelReplica Label = "slave"
)

// PodView is what one pod says of itself and what it carries now.
type PodView struct {
	Pod string
	IP  string
	// Answered: ROLE came back this observation; ReportsMaster: it said master.
	Answered, ReportsMaster bool
	// LabelledMaster: the pod carries the master label now, which it was only given while its
	// choice was agreed: it is the last agreed master.
	LabelledMaster bool
}

// LabelView is what the role labels are decided from.
type LabelView struct {
	Pods []PodView
	// Sentinels is set when sentinels watch the replication. Without them the operator's own
	// plan names the master (Planned).
	Sentinels bool
	// SentinelMaster is the address the most answering sentinels name, Agreeing how many name
	// it, Answering how many answered at all; Quorum is how many must agree for their choice
	// to stand (a majority of the sentinels asked).
	SentinelMaster              string
	Agreeing, Answering, Quorum int
	// Planned is the pod the operator's plan makes master (without sentinels); Current is the
	// one the status names, a tie-break when only the pods' own reports are left.
	Planned, Current string
}

// Majority tells whether the sentinels' choice stands: at least Quorum of them, and more than
// half of those answering, name one address.
func (v LabelView) Majority() bool {
	return v.SentinelMaster != "" && v.Agreeing >= max(v.Quorum, 1) && 2*v.Agreeing > v.Answering
}

// RoleLabels returns the label of every pod: LabelMaster for at most one, LabelReplica for
// the others. A pod is master only when it answers as a master and whoever decides agrees:
// the sentinels' majority, or without sentinels the operator's plan. A pod that does not
// answer is never master, so the -master Service never keeps a frozen or cut-off master
// beside the one that replaced it, and a returning old master that still says master is not
// labelled one while the sentinels name another.
func RoleLabels(v LabelView) map[string]Label {
	out := make(map[string]Label, len(v.Pods))
	for _, p := range v.Pods {
		out[p.Pod] = LabelReplica
	}
	if master := labelledMaster(v); master != "" {
		out[master] = LabelMaster
	}
	return out
}

// labelledMaster is the one pod to label master, "" for none.
func labelledMaster(v LabelView) string {
	selfMaster := func(p PodView) bool { return p.Answered && p.ReportsMaster }
	// only returns the single pod that matches, "" when none or several do.
	only := func(match func(PodView) bool) string {
		found := ""
		for _, p := range v.Pods {
			if !match(p) {
				continue
			}
			if found != "" {
				return ""
			}
			found = p.Pod
		}
		return found
	}
	switch {
	case !v.Sentinels && v.Planned != "":
		return only(func(p PodView) bool { return p.Pod == v.Planned && selfMaster(p) })
	case v.Sentinels && v.Majority():
		return only(func(p PodView) bool { return p.IP != "" && p.IP == v.SentinelMaster && selfMaster(p) })
	case v.Sentinels && v.Answering > 0:
		// Sentinels answer but no choice stands (split, or too few answer): nobody is made
		// master, only the last agreed one keeps its label while it still says master.
		return only(func(p PodView) bool { return p.LabelledMaster && selfMaster(p) })
	}
	// No one decides (no sentinel answers, or the plan names no master): the pods' own
	// reports, as long as they name one master, preferring the last agreed, then the status's.
	if m := only(selfMaster); m != "" {
		return m
	}
	if m := only(func(p PodView) bool { return p.LabelledMaster && selfMaster(p) }); m != "" {
		return m
	}
	if v.Current == "" {
		return ""
	}
	return only(func(p PodView) bool { return p.Pod == v.Current && selfMaster(p) })
}
