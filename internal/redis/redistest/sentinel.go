package redistest

import (
	"strconv"
	"strings"
	"testing"
)

// SentinelOptions configure one sentinel monitoring one master.
type SentinelOptions struct {
	// MasterHost defaults to Host.
	MasterHost string
	MasterPort int
	// Group is the master's name in the sentinel (SENTINEL MONITOR <group> ...).
	Group string
	// Quorum is the number of sentinels that must agree the master is down.
	Quorum int
	// MasterPassword is the master's and replicas' password (SENTINEL AUTH-PASS).
	MasterPassword string
	// Password makes the sentinel itself require one; sentinels sharing it also use it
	// to talk to each other.
	Password string
	// Config adds sentinel.conf lines.
	Config []string
	// TLS makes the sentinel serve TLS only and reach the master over TLS.
	TLS *TLSFiles
}

// StartSentinel starts a sentinel (redis-server --sentinel) on a free loopback port that
// monitors the given master, with 1s down-after and 3s failover timeouts so tests see state
// changes quickly. It stops when the test ends. A sentinel is a Server in sentinel mode:
// Stop, Kill and Restart work alike, and a restart keeps the config the sentinel rewrote.
func StartSentinel(t testing.TB, opts SentinelOptions) *Server {
	t.Helper()
	if opts.MasterHost == "" {
		opts.MasterHost = Host
	}
	if opts.Group == "" || opts.MasterPort <= 0 || opts.Quorum <= 0 {
		t.Fatalf("start sentinel: group %q, master port %d and quorum %d must all be set",
			opts.Group, opts.MasterPort, opts.Quorum)
	}
	s := &Server{Host: Host, Dir: t.TempDir(), sentinel: &opts, binary: Binary(t)}
	s.launch(t)
	return s
}

// StartSentinels starts n sentinels with the same options.
func StartSentinels(t testing.TB, n int, opts SentinelOptions) []*Server {
	t.Helper()
	sentinels := make([]*Server, n)
	for i := range sentinels {
		sentinels[i] = StartSentinel(t, opts)
	}
	return sentinels
}

func (s *Server) sentinelConfig() string {
	o := s.sentinel
	group := o.Group
	lines := []string{
		"bind " + s.Host,
		"dir " + s.Dir,
		"daemonize no",
		`logfile ""`,
		"sentinel monitor " + group + " " + o.MasterHost + " " + strconv.Itoa(o.MasterPort) + " " + strconv.Itoa(o.Quorum),
		"sentinel down-after-milliseconds " + group + " 1000",
		"sentinel failover-timeout " + group + " 3000",
	}
	lines = append(lines, s.portLines(o.TLS)...)
	if o.TLS != nil {
		lines = append(lines, "tls-replication yes")
	}
	if o.MasterPassword != "" {
		lines = append(lines, "sentinel auth-pass "+group+" "+o.MasterPassword)
	}
	if o.Password != "" {
		lines = append(lines, "requirepass "+o.Password)
	}
	lines = append(lines, o.Config...)
	return strings.Join(lines, "\n") + "\n"
}
