package builder

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A master whose pod is deleted gracefully (a drain, an eviction, kubectl delete pod) hands its
// role to a replica in sync before its process stops: the operator sees the pod terminate and
// asks that replica to take over (CLUSTER FAILOVER, FAILOVER TO), which pauses writes only
// until the replica has them all. The preStop hook below holds the process up meanwhile. It
// reads nothing from the API and needs no operator: it asks the local Redis, with the image's
// redis-cli, whether it is still a master with a replica connected, and lets it stop once it
// is not (or does not answer, or the bound has passed).

// defaultTerminationGrace is the Kubernetes default grace period, for pods whose spec sets none.
const defaultTerminationGrace = 30

// maxHandOverWait bounds the preStop wait: a hand-over takes a second or two, and a pod whose
// hand-over cannot happen (no replica in sync, no operator) should not linger much longer.
const maxHandOverWait = 15

// redisCLIAuthEnv is the variable redis-cli reads its password from; the hook sets it from the
// projected password file, which the kubelet refreshes after a rotation.
const redisCLIAuthEnv = "REDISCLI_AUTH"

// demotedLinger is how long, in seconds, a node the hook finds a replica (most often a master
// just handed over) keeps running: clients whose slot maps (or connections) still name it are answered
// MOVED (READONLY) rather than left to dial a pod that is gone, which costs them their dial
// timeout (5 s in go-redis) before many of them look again. The operator's own rolling update
// waits as long (controller.handOverSettle).
const demotedLinger = 5

// handOverWait is how long the preStop hook waits for the hand-over: half the grace period
// (the other half is Redis's, to write its snapshot on SIGTERM), at most maxHandOverWait.
// Zero means no hook.
func handOverWait(grace *int64) int64 {
	g := int64(defaultTerminationGrace)
	if grace != nil {
		g = *grace
	}
	return min(g/2, maxHandOverWait)
}

// handOverHook is the preStop hook of a Redis container that may hand its master role over
// before it stops, or nil when the grace period leaves no time for it.
func (w *workload) handOverHook() *corev1.Lifecycle {
	wait := handOverWait(w.terminationGrace)
	if !w.handOverOnStop || wait <= 0 {
		return nil
	}
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"/bin/sh", "-c", handOverScript(w.port, w.tlsCLIFlags(), w.credentialFiles(), w.busPort > 0, wait)},
	}}}
}

// tlsCLIFlags are redis-cli's flags to reach a server that serves TLS only.
func (w *workload) tlsCLIFlags() string {
	if w.tls == nil {
		return ""
	}
	ca, cert, key := tlsFiles(w.tls)
	return fmt.Sprintf(" --tls --cacert %s/%s --cert %s/%s --key %s/%s", tlsDir, ca, tlsDir, cert, tlsDir, key)
}

// credentialFiles are the files a script in the pod logs in with: the password and the user
// projected from the auth Secret.
type credentialFiles struct{ password, user string }

// credentialFiles returns the pod's projected credential files, nil without a password.
func (w *workload) credentialFiles() *credentialFiles {
	if w.authSecretName == "" {
		return nil
	}
	return &credentialFiles{password: passwordFilePath, user: userFilePath}
}

// readTrimmed is sh that sets the variable to the file's content without the whitespace around
// it, as the operator reads passwords (SecretPassword), with nothing but the shell: the
// leading run of whitespace, then the trailing one, are cut off as literal strings, so no
// character of the password is taken for a pattern.
func readTrimmed(variable, path string) string {
	v := variable
	return v + `="$(cat ` + path + ` 2>/dev/null)"; ` +
		v + `="${` + v + `#"${` + v + `%%[![:space:]]*}"}"; ` +
		v + `="${` + v + `%"${` + v + `##*[![:space:]]}"}"`
}

// handOverScript waits, for at most wait seconds, while the local Redis answers as a master;
// redis-cli reads the password (withPassword) from REDISCLI_AUTH, set from the projected
// password file, and logs in as the user of the user file (the operator's own ACL user when the
// default one is off). A master without a replica connected when the pod starts to stop, a
// server that does not answer (or no redis-cli) stop at once, as they would without the hook;
// a replica a second later (see below). A refused login holds on, reading the files again each round: after an in-place
// rotation the kubelet updates the projected file only after its sync period (about a minute),
// and stopping at once would skip the hand-over of every master deleted meanwhile. A master
// that sentinels watch waits too: the operator hands it over through them (SENTINEL FAILOVER)
// while the hook holds it up; stopping at once left the hand-over to a race with the
// kubelet, which the operator lost on a loaded machine, and the sentinels then failed over
// only after their down-after period. (Later a master
// may have no replica connected for a moment: a cluster replica that won the election has left
// it before it learns it is a replica.) A master that became a replica answers as one
// for demotedLinger seconds more, so that the operator sees whom it handed over to (a
// RedisReplication records its new master from it) and its clients are redirected rather than
// left to time out. That holds for a node that is a replica at the hook's first look too: the
// operator, watching the pod, often hands over before the kubelet has the hook's first
// redis-cli answer (a replica deleted as such stops those seconds later, which costs nothing
// but the wait). A cluster master that serves no slot (a scale-in's
// departing master, its slots moved) has nothing to hand over and stops at once too, even if
// a replica still follows it.
func handOverScript(port int32, cliFlags string, credentials *credentialFiles, cluster bool, wait int64) string {
	lines := []string{
		fmt.Sprintf("end=$(($(date +%%s)+%d)); first=1", wait),
		`while [ "$(date +%s)" -lt "$end" ]; do`,
	}
	if credentials != nil {
		lines = append(lines, "  "+readTrimmed(redisCLIAuthEnv, credentials.password)+"; export "+redisCLIAuthEnv,
			fmt.Sprintf(`  u="$(cat %s 2>/dev/null)"`, credentials.user))
		cliFlags += ` ${u:+--user "$u"}`
	}
	lines = append(lines,
		fmt.Sprintf(`  r=$(redis-cli --no-auth-warning -h 127.0.0.1 -p %d%s info replication 2>/dev/null) || exit 0`, port, cliFlags),
		`  case "$r" in *NOAUTH*|*WRONGPASS*|*NOPERM*) sleep 1; continue ;; esac`,
		fmt.Sprintf(`  case "$r" in *role:master*) ;; *) sleep %d; exit 0 ;; esac`, demotedLinger),
		`  if [ -n "$first" ]; then case "$r" in *connected_slaves:0*) exit 0 ;; esac; fi`)
	if cluster {
		// Its own CLUSTER NODES line has 8 fields, slot ranges follow them; a failed query
		// counts none and waits as before.
		lines = append(lines, fmt.Sprintf(`  if [ -n "$first" ]; then n=0; for f in $(redis-cli --no-auth-warning -h 127.0.0.1 -p %d%s cluster nodes 2>/dev/null | grep myself); do n=$((n+1)); done; [ "$n" -eq 8 ] && exit 0; fi`, port, cliFlags))
	}
	return strings.Join(append(lines,
		`  first=`,
		`  sleep 0.2 2>/dev/null || sleep 1`,
		`done`,
	), "\n")
}
