package builder

import "strings"

// How a cluster node starts with the settings its own server version has.
//
// Some of what a node announces exists only from Redis 7 on (cluster-announce-hostname,
// cluster-announce-tls-port, cluster-preferred-endpoint-type), and Redis 6 refuses to start
// with a directive it does not know, from redis.conf or the command line alike. The operator
// cannot ask a server its version before the server runs, and clusterVersion is only what a
// user wrote (or the v7 default), not what the image holds. So the container asks the program
// it is about to run: its command is a few lines of POSIX sh that read `redis-server
// --version` ("Redis server v=7.0.15 ...", "Valkey server v=8.0.1 ..."), add those arguments
// only from version 7 on, and exec redis-server, which stays PID 1 and gets the signals as a
// plain command would. Every image users run has sh (the official and Valkey images, the
// opstree alpine ones, bitnami); the exporter, which has none, is not started this way. A
// version line that cannot be read starts the node without them: it still starts.
//
// The other choices were worse: a config file per version needs the version before the pod
// exists; an init container running the image would add a container to every pod and still
// hand its answer over through a file; and leaving the hostname to a CONFIG SET after start
// leaves the node redirected to as "?" until the operator comes by.
//
// The script contains neither "$(" nor "$$", so the kubelet passes it on unchanged; what
// the kubelet expands ($(POD_IP), ...) stays in the arguments after it, which the script gets
// as "$@" (redis-server itself is $0).

// clusterCommand is the command of a cluster node's Redis container.
func (w *workload) clusterCommand() []string {
	argv := append([]string{"redis-server", redisConfPath}, w.announceArgs()...)
	script := w.startScript()
	if script == "" {
		return argv
	}
	return append([]string{"/bin/sh", "-c", script}, argv...)
}

// startScript is the sh that adds the arguments of Redis 7 and later to "$@" when the server
// has them, then execs it; "" when the node needs none.
func (w *workload) startScript() string {
	podName := `"$` + podNameEnv + `"`
	var add []string
	if w.hostnameSuffix != "" {
		add = append(add, "--cluster-announce-hostname", podName+shellQuote(w.hostnameSuffix))
	}
	if w.preferHostname {
		// TLS clients verify the certificate against the name they dial: send them to names.
		// An argument comes after redis.conf, so additionalRedisConfig cannot undo it at
		// start; dynamicConfig still can, at run time.
		add = append(add, "--cluster-preferred-endpoint-type", "hostname")
	}
	var then []string
	if len(add) > 0 {
		then = append(then, `set -- "$@" `+strings.Join(add, " "))
	}
	if w.nodePorts && w.tls != nil {
		// Written with the pod's Service; a file not there yet (a ConfigMap from an older
		// operator) is left out rather than stopping the start: the operator sets the port at
		// run time.
		file := nodePortsDir + "/" + podName + tlsPortFileSuffix
		then = append(then, "if [ -f "+file+" ]; then set -- \"$@\" --include "+file+"; fi")
	}
	if len(then) == 0 {
		return ""
	}
	lines := []string{
		"# Redis 6 refuses these settings; Redis 7, Valkey and later need them from the start.",
		`v=` + "`" + `"$0" --version 2>/dev/null` + "`",
		`case ${v#*v=} in`,
		`[7-9].* | [1-9][0-9]*)`,
	}
	for _, l := range then {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "  ;;", "esac", `exec "$0" "$@"`)
	return strings.Join(lines, "\n") + "\n"
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
