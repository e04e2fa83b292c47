package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func exited(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func waitingState(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func TestPhase(t *testing.T) {
	type ct struct{ state, last corev1.ContainerState }
	cases := []struct {
		name        string
		policy      corev1.RestartPolicy
		initialized bool
		initFailed  bool
		terminating bool
		cs          []ct
		want        corev1.PodPhase
	}{
		{"initializing", corev1.RestartPolicyAlways, false, false, false, []ct{{state: waitingState("PodInitializing")}}, corev1.PodPending},
		{"init failed", corev1.RestartPolicyNever, false, true, false, []ct{{state: waitingState("PodInitializing")}}, corev1.PodFailed},
		{"creating", corev1.RestartPolicyAlways, true, false, false, []ct{{state: waitingState("ContainerCreating")}}, corev1.PodPending},
		{"running", corev1.RestartPolicyAlways, true, false, false, []ct{{state: running()}, {state: waitingState("ContainerCreating")}}, corev1.PodPending},
		{"all running", corev1.RestartPolicyAlways, true, false, false, []ct{{state: running()}, {state: running()}}, corev1.PodRunning},
		{"crash loop stays running", corev1.RestartPolicyAlways, true, false, false, []ct{{state: waitingState("CrashLoopBackOff"), last: exited(1)}}, corev1.PodRunning},
		{"never, succeeded", corev1.RestartPolicyNever, true, false, false, []ct{{state: exited(0)}}, corev1.PodSucceeded},
		{"never, failed", corev1.RestartPolicyNever, true, false, false, []ct{{state: exited(0)}, {state: exited(2)}}, corev1.PodFailed},
		{"on failure, restarting", corev1.RestartPolicyOnFailure, true, false, false, []ct{{state: exited(2)}}, corev1.PodRunning},
		{"on failure, done", corev1.RestartPolicyOnFailure, true, false, false, []ct{{state: exited(0)}}, corev1.PodSucceeded},
		{"deleted, clean exit", corev1.RestartPolicyAlways, true, false, true, []ct{{state: exited(0)}}, corev1.PodSucceeded},
		{"deleted, killed", corev1.RestartPolicyAlways, true, false, true, []ct{{state: exited(137)}}, corev1.PodFailed},
	}
	for _, tc := range cases {
		sb := &podSandbox{pod: &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}, initialized: tc.initialized,
			initFailed: tc.initFailed, terminating: tc.terminating}
		for _, c := range tc.cs {
			sb.cs = append(sb.cs, &container{state: c.state, last: c.last})
		}
		if got := sb.phaseLocked(); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestQOSClass(t *testing.T) {
	res := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{}
		if req != "" {
			r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req), corev1.ResourceMemory: resource.MustParse(req + "Mi")}
		}
		if lim != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim), corev1.ResourceMemory: resource.MustParse(lim + "Mi")}
		}
		return r
	}
	cases := map[corev1.PodQOSClass]corev1.ResourceRequirements{
		corev1.PodQOSBestEffort: res("", ""),
		corev1.PodQOSGuaranteed: res("1", "1"),
		corev1.PodQOSBurstable:  res("1", "2"),
	}
	for want, r := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: r}}}}
		if got := qosClass(pod); got != want {
			t.Errorf("qosClass(%v) = %s, want %s", r, got, want)
		}
	}
}
