package replicationplan

import (
	"cmp"
	"fmt"
	"slices"
)

// RollOrder is the order in which the outdated pods that stay (ordinal below size) are
// replaced: replicas first, highest ordinal first (the lowest ordinals are the likeliest next
// masters and keep their data longest), the master last, once its role is handed over.
func RollOrder(members []Member, size int, master string) []string {
	var outdated []*Member
	for i := range members {
		if m := &members[i]; m.Outdated && m.Ordinal < size {
			outdated = append(outdated, m)
		}
	}
	slices.SortFunc(outdated, func(a, b *Member) int {
		return cmp.Or(compareBool(a.Pod == master, b.Pod == master), cmp.Compare(b.Ordinal, a.Ordinal))
	})
	order := make([]string, len(outdated))
	for i, m := range outdated {
		order[i] = m.Pod
	}
	return order
}

// RollAction is the next move of a rolling update; at most one of Delete and HandOverTo is
// set. The zero RollAction means no pod that stays is outdated.
type RollAction struct {
	// Delete names the pod to replace now; Left counts the outdated pods after it.
	Delete string
	Left   int
	// HandOverTo is the replica the outdated master hands its role to (FAILOVER TO) before it
	// is replaced. With ThroughSentinels the sentinels are asked to fail over instead, and
	// pick the replica themselves: HandOverTo then only says that one in sync exists.
	HandOverTo       string
	ThroughSentinels bool
	// Wait says why nothing is replaced now.
	Wait string
}

// Roll chooses the next move of a rolling update, one pod at a time and only while every pod
// that stays is ready and answers (a replacement while another pod is down could leave no
// replica in sync). The outdated master goes last, once its role is handed over to a replica
// in sync; with sentinels by asking them to fail over (a FAILOVER TO behind their back would
// race them), and when no replica is in sync it is simply replaced, as for any loss.
func Roll(members []Member, size int, master string, sentinels bool) RollAction {
	order := RollOrder(members, size, master)
	if len(order) == 0 {
		return RollAction{}
	}
	ready, answering := 0, 0
	for _, m := range members {
		if m.Ordinal >= size {
			continue
		}
		if m.Ready {
			ready++
		}
		if m.Role != nil {
			answering++
		}
	}
	if ready < size || answering < size {
		return RollAction{Wait: fmt.Sprintf("%d of %d pods ready, %d answer", ready, size, answering)}
	}
	next := order[0]
	if next != master {
		return RollAction{Delete: next, Left: len(order) - 1}
	}
	switch h := PlanHandOver(master, members, size, RollingUpdate); {
	case h.To != "":
		return RollAction{HandOverTo: h.To, ThroughSentinels: sentinels}
	case sentinels:
		return RollAction{Delete: next, Left: len(order) - 1}
	case h.Wait != "":
		return RollAction{Wait: h.Wait}
	}
	// The observations changed under the caller: the next reconcile names the real master.
	return RollAction{Wait: master + " is to be replaced last, as the master, but does not answer as one"}
}
