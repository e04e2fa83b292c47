package builder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// The values the downward API gives the test pod.
var startFieldValues = map[string]string{
	"status.podIP":  "10.1.2.3",
	"status.hostIP": "192.0.2.9",
	"metadata.name": "shards-leader-1",
}

// kubeletExpand expands $(NAME) from vars and $$ to $, as the kubelet does in a container's
// command; an unknown name is left as written.
func kubeletExpand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// startEnv is the container's environment as the kubelet resolves it (downward API fields).
func startEnv(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v, ok := startFieldValues[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("env %s: no test value for %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			vars[e.Name] = v
		}
	}
	return vars
}

// startRun is one start of a container command on this machine.
type startRun struct {
	// shell runs the command's sh (the image's sh: dash, bash, busybox).
	shell []string
	// path is searched first for programs (where a fake redis-server is).
	path string
	// nodePorts stands for /etc/redis-nodeports, which the test cannot create.
	nodePorts string
	// conf, when set, is the redis.conf a real server runs instead of the pod's.
	conf string
}

// command is c's command as the kubelet starts it, with the node ports directory moved.
func (r startRun) command(t *testing.T, c corev1.Container) *exec.Cmd {
	t.Helper()
	vars := startEnv(t, c)
	var argv []string
	for _, a := range c.Command {
		a = strings.ReplaceAll(kubeletExpand(a, vars), nodePortsDir+"/", r.nodePorts+"/")
		if a == redisConfPath && r.conf != "" {
			a = r.conf
		}
		argv = append(argv, a)
	}
	if argv[0] == "/bin/sh" {
		argv = append(append([]string(nil), r.shell...), argv[1:]...)
	}
	path := r.path + ":/usr/local/bin:/usr/bin:/bin"
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:noctx // the fake exits at once; a real server until the test stops it
	// Found on the container's PATH, as the runtime does, not on the test's.
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, argv[0]); !strings.Contains(argv[0], "/") && isExecutable(p) {
			cmd.Path, cmd.Err = p, nil
			break
		}
	}
	cmd.Env = []string{"PATH=" + path}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// fakeServer is a redis-server that prints version for --version (nothing, and fails, when
// version is empty) and otherwise writes its pid and arguments to a file and exits.
func fakeServer(t *testing.T, version string) (dir, argvFile string) {
	t.Helper()
	dir = t.TempDir()
	argvFile = filepath.Join(dir, "argv")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = --version ]; then\n" +
		"\t[ -n " + shellQuote(version) + " ] || exit 1\n" +
		"\tprintf '%s\\n' " + shellQuote(version) + "\n\texit 0\nfi\n" +
		"printf '%s\\n' \"$$\" \"$@\" >" + shellQuote(argvFile) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "redis-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, argvFile
}

// startedArgs runs c's command under shell against a fake server of that version and returns
// the arguments the server was started with; it checks the server replaced the shell.
func startedArgs(t *testing.T, shell []string, c corev1.Container, version string, files map[string]string) []string {
	t.Helper()
	dir, argvFile := fakeServer(t, version)
	np := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(np, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := startRun{shell: shell, path: dir, nodePorts: np}.command(t, c)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatalf("the server did not run: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if pid := strconv.Itoa(cmd.Process.Pid); lines[0] != pid {
		t.Errorf("the server ran as pid %s, not in the shell's place (%s): signals would go to the shell", lines[0], pid)
	}
	var args []string
	for _, a := range lines[1:] {
		args = append(args, strings.ReplaceAll(a, np+"/", nodePortsDir+"/"))
	}
	return args
}

// The version lines the servers users run print for --version.
const (
	redis62   = "Redis server v=6.2.14 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64 build=b1a26cf2f1fa6d7"
	redis70   = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0"
	redis80   = "Redis server v=8.0.2 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=d1f2d4c1c2c13bc5"
	valkey72  = "Valkey server v=7.2.8 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=4b3c5e9b2fd29a8e"
	valkey80  = "Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=39f7c371e0a96e3d"
	redisNext = "Redis server v=10.0.0 sha=00000000:0 malloc=libc bits=64 build=0"
)

// shells are the sh of the images users run that every machine has: Debian's dash (official,
// Valkey and bitnami images) and bash in POSIX mode; busybox's (alpine, the opstree images) is
// tried by the integration tier, whose packages bring it.
var shells = [][]string{{"sh"}, {"bash", "--posix"}}

func tlsCluster(cr *v1beta2.RedisCluster) *v1beta2.RedisCluster {
	cr.Spec.TLS = &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "tls"}}
	return cr
}

// checkStartScript runs the start of every case of startCases under shell.
func checkStartScript(t *testing.T, shell []string) {
	t.Helper()
	const hostname = "shards-leader-1.shards-leader-headless.redis-ns.svc.cluster.local"
	inCluster := container(t, mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: tlsCluster(minimalCluster())})).
		StatefulSet("shards-leader").Spec.Template.Spec, "shards-leader")
	nodePorts := container(t, mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: tlsCluster(nodePortCluster()), NodePorts: testNodePorts(3, 3)})).
		StatefulSet("shards-leader").Spec.Template.Spec, "shards-leader")
	files := map[string]string{"shards-leader-1.conf": "x", "shards-leader-1" + tlsPortFileSuffix: "x"}

	base := []string{redisConfPath, "--cluster-announce-ip", "10.1.2.3"}
	from7 := append(append([]string(nil), base...),
		"--cluster-announce-hostname", hostname, "--cluster-preferred-endpoint-type", "hostname")
	npBase := []string{redisConfPath, "--include", nodePortsDir + "/shards-leader-1.conf", "--cluster-announce-ip", "192.0.2.9"}
	npFrom7 := append(append([]string(nil), npBase...), "--cluster-announce-hostname", hostname)
	tests := []struct {
		name    string
		c       corev1.Container
		version string
		files   map[string]string
		want    []string
	}{
		{"Redis 6.2: none of Redis 7's settings", inCluster, redis62, nil, base},
		{"Redis 7.0: its hostname from the start", inCluster, redis70, nil, from7},
		{"Redis 8.0", inCluster, redis80, nil, from7},
		{"Valkey 7.2", inCluster, valkey72, nil, from7},
		{"Valkey 8.0", inCluster, valkey80, nil, from7},
		{"a two-digit major version", inCluster, redisNext, nil, from7},
		{"no version line: it still starts", inCluster, "", nil, base},
		{"an unknown version line: it still starts", inCluster, "redis-server from elsewhere", nil, base},
		{"NodePort, Redis 6.2: its node ports, no TLS port", nodePorts, redis62, files, npBase},
		{"NodePort, Redis 7.0: the TLS port too", nodePorts, redis70, files,
			append(append([]string(nil), npFrom7...), "--include", nodePortsDir+"/shards-leader-1"+tlsPortFileSuffix)},
		{"NodePort, Valkey 8: the TLS port too", nodePorts, valkey80, files,
			append(append([]string(nil), npFrom7...), "--include", nodePortsDir+"/shards-leader-1"+tlsPortFileSuffix)},
		{"NodePort, Redis 7.0 without its TLS port file yet: it still starts", nodePorts, redis70,
			map[string]string{"shards-leader-1.conf": "x"}, npFrom7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantEqual(t, "arguments", startedArgs(t, shell, tc.c, tc.version, tc.files), tc.want)
		})
	}
}

// A cluster node's command asks the server it runs for its version and gives it the settings
// of Redis 7 only when it has them: run under each shell against fake servers, the exec'd
// server gets exactly the arguments its version takes.
func TestClusterStartScriptFollowsTheServersVersion(t *testing.T) {
	for _, shell := range shells {
		t.Run(strings.Join(shell, " "), func(t *testing.T) { checkStartScript(t, shell) })
	}
}

// The kubelet expands $(NAME) and $$ in a command: the script must contain neither, so that
// what runs is what was written, and it decides by the server, not by clusterVersion.
func TestClusterStartScriptIsLeftAloneByTheKubelet(t *testing.T) {
	cr := tlsCluster(nodePortCluster())
	cr.Spec.ClusterVersion = ptrTo("v6")
	o := mustBuild(t)(BuildRedisCluster(RedisClusterInput{CR: cr, NodePorts: testNodePorts(3, 3)}))
	for _, role := range []string{RoleLeader, RoleFollower} {
		name := "shards-" + role
		c := container(t, o.StatefulSet(name).Spec.Template.Spec, name)
		if len(c.Command) < 4 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || c.Command[3] != "redis-server" {
			t.Fatalf("%s command %q: want /bin/sh -c SCRIPT redis-server ...", name, c.Command)
		}
		if script := c.Command[2]; strings.Contains(script, "$(") || strings.Contains(script, "$$") {
			t.Errorf("%s script holds what the kubelet would expand:\n%s", name, script)
		}
		if !strings.Contains(c.Command[2], "--cluster-announce-hostname") {
			t.Errorf("clusterVersion v6 still decides: %s's script leaves the hostname out:\n%s", name, c.Command[2])
		}
	}
}
