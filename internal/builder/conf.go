package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
)

// Paths inside the pods. redis.conf, the auth file, the user's ACL file from a Secret and
// additional config are projected together into one read-only volume at /etc/redis. An ACL
// claim is mounted at /data/redis, inside the data volume, where users expect it.
const (
	redisConfigDir    = "/etc/redis"
	redisConfPath     = redisConfigDir + "/" + RedisConfKey
	authFileRelPath   = "secret/" + RedisAuthKey
	passwordRelPath   = "secret/" + RedisPasswordKey
	passwordFilePath  = redisConfigDir + "/" + passwordRelPath
	userRelPath       = "secret/" + RedisUserKey
	userFilePath      = redisConfigDir + "/" + userRelPath
	additionalRelPath = "additional/" + AdditionalRedisConfKey
	aclSecretPath     = redisConfigDir + "/" + ACLFileKey
	// aclPVCDir is where the claim of acl.persistentVolumeClaim is mounted: users keep
	// <aclPVCDir>/user.acl on it, at the path the API we serve documents.
	aclPVCDir          = dataDir + "/redis"
	dataDir            = "/data"
	nodeConfDir        = "/node-conf"
	tlsDir             = "/tls"
	sentinelTemplDir   = "/etc/sentinel"
	sentinelConfPath   = dataDir + "/" + SentinelConfKey
	sentinelAuthRel    = "secret/" + SentinelAuthKey
	sentinelAdditional = "additional"
	nodesConfFile      = "nodes.conf"
)

// passwordDirectives are managed through the auth Secret only; they may not come from a
// ConfigMap-bound field.
var passwordDirectives = map[string]bool{"requirepass": true, "masterauth": true, "include": true}

// redisConf is everything that goes into a redis.conf.
type redisConf struct {
	port           int32
	cluster        bool
	nodesConfDir   string
	persistence    bool
	maxMemoryBytes int64
	tls            *v1beta2.TLSConfig
	aclFile        string
	dynamic        []string
	additional     bool
	auth           bool
}

// render writes redis.conf. The dynamic lines are written too, so that a restarted pod comes
// up with them before the controller re-applies them, but they are left out of the hash
// (withDynamic false) because the controller applies them without a restart.
func (c redisConf) render(withDynamic bool) string {
	var b strings.Builder
	line := func(s ...string) { b.WriteString(strings.Join(s, " ") + "\n") }
	line("# Rendered by redis-operator from the custom resource; edits here are overwritten.")
	if c.tls != nil {
		line("port 0")
		line("tls-port", i32(c.port))
	} else {
		line("port", i32(c.port))
	}
	// Pods are reached over the pod network only; NetworkPolicy, not protected mode, guards them.
	line("protected-mode no")
	line("dir", dataDir)
	if c.persistence {
		line("appendonly yes")
	} else {
		line("appendonly no")
		line(`save ""`)
	}
	if c.maxMemoryBytes > 0 {
		line("maxmemory", strconv.FormatInt(c.maxMemoryBytes, 10))
	}
	if c.aclFile != "" {
		line("aclfile", c.aclFile)
	}
	if c.cluster {
		line("cluster-enabled yes")
		line("cluster-config-file", c.nodesConfDir+"/"+nodesConfFile)
		// What the node announces (its IP, hostname, node ports) is per pod, and what Redis 6
		// does not know depends on the server's version: both are passed as arguments
		// (cluster_network.go).
		// The operator attaches a shard's replicas as they come; waiting for more of them
		// before a diskless sync (5 s by default) only delays each one. Later lines may override.
		line("repl-diskless-sync-delay 0")
		// A shard that has lost its master stops only its own slots: the others keep serving
		// (the replaced operator's default, which its users rely on). The status names the
		// slots not served. A master keeps one replica before another may migrate to an
		// orphaned master.
		line("cluster-require-full-coverage no")
		line("cluster-migration-barrier 1")
	}
	if c.tls != nil {
		ca, cert, key := tlsFiles(c.tls)
		line("tls-cert-file", tlsDir+"/"+cert)
		line("tls-key-file", tlsDir+"/"+key)
		line("tls-ca-cert-file", tlsDir+"/"+ca)
		// Clients must verify the server; a client certificate is accepted but not required.
		line("tls-auth-clients optional")
		line("tls-replication yes")
		if c.cluster {
			line("tls-cluster yes")
		}
	}
	if withDynamic && len(c.dynamic) > 0 {
		line("# redisConfig.dynamicConfig, also applied at run time with CONFIG SET")
		for _, d := range c.dynamic {
			line(strings.TrimSpace(d))
		}
	}
	if c.additional {
		line("include", redisConfigDir+"/"+additionalRelPath)
	}
	if c.auth {
		// Last, so that the managed password wins over anything above.
		line("include", redisConfigDir+"/"+authFileRelPath)
	}
	return b.String()
}

// checkDynamicConfig refuses lines that would break the file or smuggle a password into a
// ConfigMap.
func checkDynamicConfig(lines []string) error {
	for _, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			return fmt.Errorf("redisConfig.dynamicConfig entry %q spans several lines", l)
		}
		fields := strings.Fields(l)
		if len(fields) < 2 {
			return fmt.Errorf("redisConfig.dynamicConfig entry %q is not \"name value\"", l)
		}
		if passwordDirectives[strings.ToLower(fields[0])] {
			return fmt.Errorf("redisConfig.dynamicConfig may not set %s: the password comes from kubernetesConfig.redisSecret", fields[0])
		}
	}
	return nil
}

// maxMemory computes percent of the container's memory limit, in bytes.
func maxMemory(percent *int, res *corev1.ResourceRequirements) (int64, error) {
	if percent == nil {
		return 0, nil
	}
	if *percent < 1 || *percent > 100 {
		return 0, fmt.Errorf("redisConfig.maxMemoryPercentOfLimit %d is not between 1 and 100", *percent)
	}
	if res == nil {
		return 0, fmt.Errorf("redisConfig.maxMemoryPercentOfLimit needs a memory limit in resources")
	}
	limit, ok := res.Limits[corev1.ResourceMemory]
	if !ok || limit.Value() <= 0 {
		return 0, fmt.Errorf("redisConfig.maxMemoryPercentOfLimit needs a memory limit in resources")
	}
	// Split to stay exact without overflowing: (100q+r)p/100 = qp + rp/100.
	v, p := limit.Value(), int64(*percent)
	return v/100*p + v%100*p/100, nil
}

// redisAuthFile is the content of the auth Secret key for redis-server.
func redisAuthFile(password string, operatorUser bool) string {
	q := quoteConfigValue(password)
	out := "requirepass " + q + "\nmasterauth " + q + "\n"
	if operatorUser {
		out += "masteruser " + redis.OperatorUser + "\n"
	}
	return out
}

// sentinelConf is everything that goes into a sentinel.conf template.
type sentinelConf struct {
	port       int32
	settings   sentinelSettings
	masterHost string
	tls        *v1beta2.TLSConfig
}

func (c sentinelConf) render() string {
	var b strings.Builder
	s := c.settings
	line := func(v ...string) { b.WriteString(strings.Join(v, " ") + "\n") }
	line("# Rendered by redis-operator from the custom resource. The sentinel rewrites its own copy")
	line("# of this file; this template only seeds new pods.")
	if c.tls != nil {
		line("port 0")
		line("tls-port", i32(c.port))
	} else {
		line("port", i32(c.port))
	}
	line("protected-mode no")
	line("dir", dataDir)
	// Written only when enabled: "no" is the built-in default, and Redis before 6.2 does not
	// know these directives.
	if s.resolveHostnames == "yes" {
		line("sentinel resolve-hostnames yes")
	}
	if s.announceHostnames == "yes" {
		line("sentinel announce-hostnames yes")
	}
	if !s.unmonitored {
		line("sentinel monitor", s.masterGroup, c.masterHost, s.masterPort, s.quorum)
		line("sentinel down-after-milliseconds", s.masterGroup, s.downAfterMilliseconds)
		line("sentinel parallel-syncs", s.masterGroup, s.parallelSyncs)
		line("sentinel failover-timeout", s.masterGroup, s.failoverTimeout)
	}
	if c.tls != nil {
		ca, cert, key := tlsFiles(c.tls)
		line("tls-cert-file", tlsDir+"/"+cert)
		line("tls-key-file", tlsDir+"/"+key)
		line("tls-ca-cert-file", tlsDir+"/"+ca)
		line("tls-auth-clients optional")
		// Sentinels reach the monitored Redis over TLS too.
		line("tls-replication yes")
	}
	return b.String()
}

// sentinelAuthFile is the content of the auth Secret key for sentinels: the sentinel's own
// password and the password of the monitored master. It is appended after the template, so
// after the monitor line that auth-pass refers to.
func sentinelAuthFile(masterGroup, sentinelPassword, masterPassword string) string {
	var b strings.Builder
	if sentinelPassword != "" {
		b.WriteString("requirepass " + quoteConfigValue(sentinelPassword) + "\n")
	}
	if masterPassword != "" {
		b.WriteString("sentinel auth-pass " + masterGroup + " " + quoteConfigValue(masterPassword) + "\n")
	}
	return b.String()
}

// quoteConfigValue quotes a value the way Redis' config parser (sdssplitargs) reads it back:
// double quotes, with backslash, quote and control characters escaped.
func quoteConfigValue(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// isConfigWord tells whether v can be written unquoted as one config argument.
func isConfigWord(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
			return false
		}
	}
	return true
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func i32(v int32) string { return strconv.FormatInt(int64(v), 10) }

// portNumber narrows a port from the spec (an int in the reference schema) to the int32
// Kubernetes takes; a number no port can have becomes 0, which the API server refuses with a
// message naming the field.
func portNumber(p int) int32 {
	if p < 0 || p > 65535 {
		return 0
	}
	return int32(p)
}
func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// PasswordOfAuthFile reads back the password a rendered auth file (RedisAuthKey) gives Redis:
// what the pods now running were started with, which a controller needs to change it in place.
func PasswordOfAuthFile(content string) (string, bool) {
	const prefix = "requirepass "
	for _, line := range strings.Split(content, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return unquoteConfigValue(rest)
		}
	}
	return "", false
}

// unquoteConfigValue is the inverse of quoteConfigValue.
func unquoteConfigValue(q string) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(q)-1; i++ {
		c := q[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(q)-1 {
			return "", false
		}
		i++
		switch q[i] {
		case '\\', '"':
			b.WriteByte(q[i])
		case 'x':
			if i+2 >= len(q)-1 {
				return "", false
			}
			var v byte
			if _, err := fmt.Sscanf(q[i+1:i+3], "%02x", &v); err != nil {
				return "", false
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}
