package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A probe that sets only timings keeps them and gets the TCP check; a probe with its own
// handler is the user's as given; none gives the defaults.
func TestProbes(t *testing.T) {
	timings := &corev1.Probe{InitialDelaySeconds: 1, PeriodSeconds: 7, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1}
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 5}
	r, l := probes(26379, timings, own)
	if r.TCPSocket == nil || r.TCPSocket.Port != intstr.FromInt32(26379) || r.PeriodSeconds != 7 || r.InitialDelaySeconds != 1 {
		t.Errorf("timings-only readiness probe became %+v", r)
	}
	if l.TCPSocket != nil || l.Exec == nil || l.PeriodSeconds != 5 {
		t.Errorf("the user's liveness probe became %+v", l)
	}
	if timings.TCPSocket != nil {
		t.Error("the spec's probe was modified")
	}
	r, l = probes(6379, nil, nil)
	if r.TCPSocket == nil || l.TCPSocket == nil || r.PeriodSeconds != defaultProbePeriodSeconds {
		t.Errorf("defaults %+v %+v", r, l)
	}
}
