package replicationplan

import (
	"fmt"
	"testing"
)

// view is three pods rr-0..rr-2 at 10.0.0.0..2; roles says what each answers: 'M' master,
// 'S' replica, '-' nothing; labelled names the pod that carries the master label now.
func view(roles, labelled string) []PodView {
	pods := make([]PodView, len(roles))
	for i, r := range roles {
		name := fmt.Sprintf("rr-%d", i)
		pods[i] = PodView{Pod: name, IP: fmt.Sprintf("10.0.0.%d", i), Answered: r != '-', ReportsMaster: r == 'M', LabelledMaster: name == labelled}
	}
	return pods
}

func TestRoleLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    LabelView
		want string // the pod labelled master, "" for none
	}{
		{"old master unreachable, the sentinels' majority names rr-1: only rr-1",
			LabelView{Pods: view("-MS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 3, Answering: 3, Quorum: 2}, "rr-1"},
		{"old master unreachable, sentinels still name it: nobody (it does not answer)",
			LabelView{Pods: view("-SS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.0", Agreeing: 3, Answering: 3, Quorum: 2}, ""},
		{"old master back claiming master while the sentinels name rr-1: only rr-1",
			LabelView{Pods: view("MMS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 2, Answering: 3, Quorum: 2}, "rr-1"},
		{"old master back claiming master, the sentinels' choice not promoted yet: nobody",
			LabelView{Pods: view("MSS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 3, Answering: 3, Quorum: 2}, ""},
		{"steady state", LabelView{Pods: view("MSS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.0", Agreeing: 3, Answering: 3, Quorum: 2}, "rr-0"},
		{"sentinels split: the last agreed master keeps its label",
			LabelView{Pods: view("MMS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 1, Answering: 2, Quorum: 2}, "rr-0"},
		{"sentinels split: a master never agreed is not labelled",
			LabelView{Pods: view("SMS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 1, Answering: 2, Quorum: 2}, ""},
		{"too few sentinels answer for a majority of those asked: as a split",
			LabelView{Pods: view("MMS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 1, Answering: 1, Quorum: 2}, "rr-0"},
		{"sentinels split, the last agreed master silent: nobody",
			LabelView{Pods: view("-MS", "rr-0"), Sentinels: true, SentinelMaster: "10.0.0.1", Agreeing: 1, Answering: 2, Quorum: 2}, ""},
		{"no sentinel answers: the one pod that says master",
			LabelView{Pods: view("SMS", "rr-0"), Sentinels: true, Quorum: 2}, "rr-1"},
		{"no sentinel answers, two say master: the last agreed",
			LabelView{Pods: view("MMS", "rr-1"), Sentinels: true, Quorum: 2}, "rr-1"},
		{"no sentinel answers, two say master, none labelled: the status's",
			LabelView{Pods: view("MMS", ""), Sentinels: true, Quorum: 2, Current: "rr-0"}, "rr-0"},
		{"no sentinel answers, two say master, nothing to tell them apart: nobody",
			LabelView{Pods: view("MMS", ""), Sentinels: true, Quorum: 2}, ""},
		{"no sentinel answers, two labelled (an older operator's labels), both say master: the status's",
			LabelView{Pods: []PodView{{Pod: "rr-0", IP: "a", Answered: true, ReportsMaster: true, LabelledMaster: true},
				{Pod: "rr-1", IP: "b", Answered: true, ReportsMaster: true, LabelledMaster: true}}, Sentinels: true, Current: "rr-1"}, "rr-1"},
		{"without sentinels: the plan's master once it says master", LabelView{Pods: view("MSS", "rr-0"), Planned: "rr-0"}, "rr-0"},
		{"without sentinels: the plan promotes rr-1, the old master silent: nobody yet",
			LabelView{Pods: view("-SS", "rr-0"), Planned: "rr-1", Current: "rr-0"}, ""},
		{"without sentinels: the restarted old master says master, the plan made rr-1 master",
			LabelView{Pods: view("MMS", "rr-0"), Planned: "rr-1"}, "rr-1"},
		{"without sentinels, no plan master: the one pod that says master", LabelView{Pods: view("-MS", "")}, "rr-1"},
		{"a sentinel address no pod has: nobody", LabelView{Pods: view("MSS", "rr-0"), Sentinels: true, SentinelMaster: "10.9.9.9", Agreeing: 3, Answering: 3, Quorum: 2}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RoleLabels(tc.v)
			if len(got) != len(tc.v.Pods) {
				t.Fatalf("labels %v for %d pods", got, len(tc.v.Pods))
			}
			for pod, label := range got {
				want := LabelReplica
				if pod == tc.want {
					want = LabelMaster
				}
				if label != want {
					t.Errorf("%s labelled %s, want %s (all: %v)", pod, label, want, got)
				}
			}
		})
	}
}

// At most one pod is ever labelled master, and only one that answers as a master and, where
// the sentinels' choice stands, is at the address they name.
func FuzzRoleLabels(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, "10.0.0.1", uint8(2), uint8(3), uint8(2), true, "rr-0", "rr-1")
	f.Add([]byte{7, 7, 7, 7}, "", uint8(0), uint8(0), uint8(0), false, "", "rr-3")
	f.Add([]byte{15, 15, 3}, "10.0.0.0", uint8(1), uint8(2), uint8(2), true, "rr-0", "")
	f.Fuzz(func(t *testing.T, data []byte, sentinelMaster string, agreeing, answering, quorum uint8, sentinels bool, planned, current string) {
		var pods []PodView
		for i, b := range data {
			if i == 8 {
				break
			}
			// Few addresses, so that pods share one and the sentinels' address hits several.
			pods = append(pods, PodView{Pod: fmt.Sprintf("rr-%d", i), IP: fmt.Sprintf("10.0.0.%d", (b>>4)%4),
				Answered: b&1 != 0, ReportsMaster: b&2 != 0, LabelledMaster: b&4 != 0})
		}
		v := LabelView{Pods: pods, Sentinels: sentinels, SentinelMaster: sentinelMaster,
			Agreeing: int(agreeing % 8), Answering: int(answering % 8), Quorum: int(quorum % 8), Planned: planned, Current: current}
		got := RoleLabels(v)
		masters := 0
		for _, p := range pods {
			switch got[p.Pod] {
			case LabelMaster:
				masters++
				if !p.Answered || !p.ReportsMaster {
					t.Errorf("%s labelled master: answered %v, says master %v", p.Pod, p.Answered, p.ReportsMaster)
				}
				if sentinels && v.Majority() && p.IP != sentinelMaster {
					t.Errorf("%s at %s labelled master, the sentinels' majority names %s", p.Pod, p.IP, sentinelMaster)
				}
				if !sentinels && planned != "" && p.Pod != planned {
					t.Errorf("%s labelled master, the plan names %s", p.Pod, planned)
				}
			case LabelReplica:
			default:
				t.Errorf("%s has label %q", p.Pod, got[p.Pod])
			}
		}
		if masters > 1 {
			t.Errorf("%d pods labelled master: %v", masters, got)
		}
	})
}
