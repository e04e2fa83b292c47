package builder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// withCheck returns p with the server's own check where p names none: for Redis a PING
// through the image's redis-cli, for sentinels a TCP connect.
func (w *workload) withCheck(p *corev1.Probe, liveness bool) *corev1.Probe {
	if p == nil {
		return nil
	}
	out := p.DeepCopy()
	if hasCheck(out) {
		return out
	}
	if w.server == sentinelServer {
		out.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(w.port)}
		return out
	}
	out.Exec = &corev1.ExecAction{Command: []string{"/bin/sh", "-c", pingScript(w.port, w.tlsCLIFlags(), w.credentialFiles(), liveness)}}
	return out
}

// pingScript is the probe of a Redis container: a PING over loopback with the projected
// credentials (TLS when on), so a server that accepts connections but does not answer (stuck,
// frozen, busy in a script) fails it, where a TCP connect succeeds. A refused login is an
// answer (after an in-place rotation the projected file lags behind until the kubelet's next
// sync), so it passes. A server loading its dataset is alive but not ready. An image without
// redis-cli passes: the check cannot run there, and failing would restart a healthy server.
func pingScript(port int32, cliFlags string, credentials *credentialFiles, liveness bool) string {
	alive := `PONG|*NOAUTH*|*WRONGPASS*|*NOPERM*`
	if liveness {
		alive += `|LOADING*`
	}
	s := "command -v redis-cli >/dev/null 2>&1 || exit 0\n"
	if credentials != nil {
		s += readTrimmed(redisCLIAuthEnv, credentials.password) + "; export " + redisCLIAuthEnv + "\n" +
			fmt.Sprintf(`u="$(cat %s 2>/dev/null)"`+"\n", credentials.user)
		cliFlags += ` ${u:+--user "$u"}`
	}
	return s + fmt.Sprintf(`r=$(redis-cli --no-auth-warning -h 127.0.0.1 -p %d%s ping 2>&1)`+"\n", port, cliFlags) +
		`case "$r" in ` + alive + `) exit 0 ;; esac` + "\n" +
		`echo "$r"; exit 1`
}
