package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions the kubelet owns; the others (PodScheduled, DisruptionTarget, readiness gates)
// are carried over from the API object.
var ownConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady,
}

// statusLocked computes the pod status the way the kubelet does; sb.mu must be held.
func (sb *podSandbox) statusLocked() corev1.PodStatus {
	pod := sb.pod
	hostIP := sb.p.hostIP()
	st := corev1.PodStatus{
		HostIP:             hostIP,
		HostIPs:            []corev1.HostIP{{IP: hostIP}},
		StartTime:          sb.startTime,
		QOSClass:           pod.Status.QOSClass,
		ObservedGeneration: pod.Generation,
	}
	if st.QOSClass == "" {
		st.QOSClass = qosClass(pod)
	}
	if sb.hasNet {
		ip := sb.net.IP.String()
		st.PodIP = ip
		st.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	for _, c := range sb.initCs {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.statusLocked())
	}
	for _, c := range sb.cs {
		st.ContainerStatuses = append(st.ContainerStatuses, c.statusLocked())
	}
	st.Phase = sb.phaseLocked()

	var notReady, notInit []string
	for _, c := range sb.cs {
		if !c.ready {
			notReady = append(notReady, c.name)
		}
	}
	for _, c := range sb.initCs {
		if c.kind == sidecarContainer && !c.ready {
			notReady = append(notReady, c.name)
		}
		if !sb.initialized && c.kind == initContainer {
			if c.state.Terminated == nil || c.state.Terminated.ExitCode != 0 {
				notInit = append(notInit, c.name)
			}
		}
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	gatesOK := true
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		gatesOK = gatesOK && ok
	}
	type cond struct {
		t               corev1.PodConditionType
		ok              bool
		reason, message string
	}
	containersReady := cond{t: corev1.ContainersReady, ok: len(notReady) == 0 && sb.initialized && !terminal}
	switch {
	case terminal:
		containersReady.reason = "PodCompleted"
	case len(notReady) > 0:
		containersReady.reason = "ContainersNotReady"
		containersReady.message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	}
	ready := cond{t: corev1.PodReady, ok: containersReady.ok && gatesOK, reason: containersReady.reason, message: containersReady.message}
	if containersReady.ok && !gatesOK {
		ready.reason, ready.message = "ReadinessGatesNotReady", "the status of pod readiness gates is not \"True\""
	}
	initialized := cond{t: corev1.PodInitialized, ok: sb.initialized || len(notInit) == 0}
	if !initialized.ok {
		initialized.reason = "ContainersNotInitialized"
		initialized.message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))
	}
	conds := []cond{
		{t: corev1.PodReadyToStartContainers, ok: sb.hasNet && !sb.terminatedLocked()},
		initialized,
		ready,
		containersReady,
	}
	for _, c := range conds {
		status := corev1.ConditionFalse
		if c.ok {
			status = corev1.ConditionTrue
		}
		prev, seen := sb.conds[c.t]
		if !seen || prev.status != status {
			prev = condState{status: status, since: metav1.Now()}
			sb.conds[c.t] = prev
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{
			Type: c.t, Status: status, Reason: c.reason, Message: c.message,
			LastTransitionTime: prev.since, ObservedGeneration: pod.Generation,
		})
	}
	for _, c := range pod.Status.Conditions {
		if !isOwnCondition(c.Type) {
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

func isOwnCondition(t corev1.PodConditionType) bool {
	for _, o := range ownConditions {
		if o == t {
			return true
		}
	}
	return false
}

// terminatedLocked reports whether the pod is stopping and no container runs any more.
func (sb *podSandbox) terminatedLocked() bool {
	if !sb.terminating {
		return false
	}
	for _, c := range append(append([]*container(nil), sb.cs...), sb.initCs...) {
		if c.proc != nil {
			return false
		}
	}
	return true
}

// phaseLocked follows the kubelet's getPhase: a container waiting after it ran counts as
// stopped, so a crash-looping pod stays Running; a deleted pod whose containers all
// stopped is Succeeded or Failed.
func (sb *podSandbox) phaseLocked() corev1.PodPhase {
	policy := sb.pod.Spec.RestartPolicy
	if sb.initFailed {
		return corev1.PodFailed
	}
	if sb.terminatedLocked() && sb.initialized {
		for _, c := range sb.cs {
			if t := c.state.Terminated; t == nil || t.ExitCode != 0 {
				return corev1.PodFailed
			}
		}
		return corev1.PodSucceeded
	}
	if !sb.initialized {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range sb.cs {
		switch {
		case c.state.Running != nil:
			running++
		case c.state.Terminated != nil:
			stopped++
			if c.state.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.state.Waiting != nil:
			if c.last.Terminated != nil {
				stopped++
				if c.last.Terminated.ExitCode == 0 {
					succeeded++
				}
			} else {
				waiting++
			}
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodRunning
		}
	}
	return corev1.PodPending
}

func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := false, false
	guaranteed := true
	for _, c := range pod.Spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			requests = requests || hasReq
			limits = limits || hasLim
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !requests && !limits:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
