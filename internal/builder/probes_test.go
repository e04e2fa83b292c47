package builder

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A probe that sets only timings keeps them and gets the server's check (a PING for Redis, a
// TCP connect for sentinels); a probe with its own handler is the user's as given; none gives
// the defaults.
func TestProbes(t *testing.T) {
	timings := &corev1.Probe{InitialDelaySeconds: 1, PeriodSeconds: 7, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1}
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 5}
	r, l := probes(timings, own)
	sentinel := &workload{server: sentinelServer, port: 26379}
	if p := sentinel.withCheck(r, false); p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(26379) || p.PeriodSeconds != 7 || p.InitialDelaySeconds != 1 {
		t.Errorf("a sentinel's timings-only readiness probe became %+v", p)
	}
	redis := &workload{server: redisServer, port: 6380}
	if p := redis.withCheck(r, false); p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "-p 6380 ping") || p.PeriodSeconds != 7 {
		t.Errorf("a Redis timings-only readiness probe became %+v", p)
	}
	if p := redis.withCheck(l, true); !equalStrings(p.Exec.Command, []string{"true"}) || p.PeriodSeconds != 5 {
		t.Errorf("the user's liveness probe became %+v", p)
	}
	if timings.TCPSocket != nil || timings.Exec != nil {
		t.Error("the spec's probe was modified")
	}
	r, l = probes(nil, nil)
	if r.PeriodSeconds != defaultProbePeriodSeconds || l.FailureThreshold != defaultLivenessFailureThresh || hasCheck(r) || hasCheck(l) {
		t.Errorf("defaults %+v %+v", r, l)
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
