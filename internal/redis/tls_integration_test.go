//go:build integration

package redis_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A TLS-only master and replica: the operator's client verifies the chain against the CA
// although it dials an IP address the certificate does not name, replication runs over TLS,
// a renewed certificate and a CA change are taken in place with CONFIG SET, and a connection
// opened before the renewal keeps working.
func TestTLSReplicationAndRenewal(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	const password = "s3cret"
	auth := redis.Auth{Password: password}

	ca := redistest.NewCA(t, "redis-ca")
	first := ca.Issue(t, "redis.example.internal") // no IP address: the name is not checked
	masterFiles := redistest.WriteTLSFiles(t, ca.CertPEM, first)
	replicaFiles := redistest.WriteTLSFiles(t, ca.CertPEM, first)
	master := redistest.StartServer(t, redistest.ServerOptions{Password: password, TLS: &masterFiles})
	replica := redistest.StartServer(t, redistest.ServerOptions{Password: password, TLS: &replicaFiles})

	m, err := pool.Client(master.Endpoint(auth))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pool.Client(replica.Endpoint(auth))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ReplicaOf(ctx, master.Host, master.Port); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, r)

	// A client that trusts another CA is refused before any command.
	stranger := redistest.NewCA(t, "other-ca")
	strangerCfg, err := redis.NewTLSConfig(redis.TLSMaterial{CA: stranger.CertPEM, Cert: first.CertPEM, Key: first.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redis.ServedCertificate(ctx, master.Endpoint(auth).WithTLS(strangerCfg), 5*time.Second); err == nil {
		t.Fatal("a client trusting another CA completed the handshake")
	}

	// Renewal from the same CA: the files change, the served certificate changes only with the reload.
	renewed := ca.Issue(t, "redis.example.internal")
	masterFiles.Update(t, ca.CertPEM, renewed)
	assertServes(t, master, first, "before the reload")
	if err := m.ReloadTLS(ctx, masterFiles.CertPath()); err != nil {
		t.Fatal(err)
	}
	assertServes(t, master, renewed, "after the reload")
	if err := m.Ping(ctx); err != nil {
		t.Fatalf("a pooled connection opened before the renewal: %v", err)
	}

	// A CA change: first a bundle of the old and the new CA everywhere, then certificates of
	// the new CA. The replica keeps replicating over TLS through both steps.
	newCA := redistest.NewCA(t, "redis-ca-2")
	bundle := bytes.Join([][]byte{ca.CertPEM, newCA.CertPEM}, nil)
	for _, step := range []redistest.Issued{ca.Issue(t, "redis"), newCA.Issue(t, "redis")} {
		masterFiles.Update(t, bundle, step)
		replicaFiles.Update(t, bundle, step)
		for _, c := range []*redis.Client{r, m} {
			path := replicaFiles.CertPath()
			if c == m {
				path = masterFiles.CertPath()
			}
			if err := c.ReloadTLS(ctx, path); err != nil {
				t.Fatal(err)
			}
		}
		bundleCfg, err := redis.NewTLSConfig(redis.TLSMaterial{CA: bundle, Cert: step.CertPEM, Key: step.KeyPEM})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := redis.ServedCertificate(ctx, master.Endpoint(auth).WithTLS(bundleCfg), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if leaf.SerialNumber.Cmp(step.Cert.SerialNumber) != 0 {
			t.Fatalf("master serves serial %s, want %s", leaf.SerialNumber, step.Cert.SerialNumber)
		}
	}
	// The replication link survives a master restart, which makes the replica reconnect
	// with its reloaded CA bundle to a master serving a certificate of the new CA.
	master.Stop(t)
	master.Restart(t)
	newCfg, err := redis.NewTLSConfig(redis.TLSMaterial{CA: newCA.CertPEM, Cert: renewed.CertPEM, Key: renewed.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := pool.Client(master.Endpoint(auth).WithTLS(newCfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Ping(ctx); err != nil {
		t.Fatalf("a client trusting only the new CA: %v", err)
	}
	waitLinkUp(t, r)
}

func assertServes(t *testing.T, s *redistest.Server, want redistest.Issued, when string) {
	t.Helper()
	leaf, err := redis.ServedCertificate(t.Context(), s.Endpoint(redis.Auth{}), 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0 {
		t.Fatalf("%s: %s serves serial %s, want %s", when, s.Addr(), leaf.SerialNumber, want.Cert.SerialNumber)
	}
}

func waitLinkUp(t *testing.T, r *redis.Client) {
	t.Helper()
	redistest.WaitFor(t, 30*time.Second, "the replica's link to its master", func() error {
		info, err := r.Info(t.Context(), "replication")
		if err != nil {
			return err
		}
		if info["master_link_status"] != "up" {
			return &linkDown{info["master_link_status"]}
		}
		return nil
	})
}

type linkDown struct{ status string }

func (e *linkDown) Error() string { return "master_link_status " + strconv.Quote(e.status) }

// A TLS cluster forms over a TLS bus, and a sentinel monitors a TLS master on its own TLS port.
func TestTLSClusterAndSentinel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newPool(t, redis.Options{})
	ca := redistest.NewCA(t, "redis-ca")
	files := redistest.WriteTLSFiles(t, ca.CertPEM, ca.Issue(t, "redis"))
	c := redistest.StartCluster(t, pool, 3, 0, redistest.ServerOptions{TLS: &files})
	info, err := c.Client(t, c.Servers[0]).ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "ok" || info.KnownNodes != 3 {
		t.Fatalf("cluster info: state %q, %d known nodes", info.State, info.KnownNodes)
	}

	master := redistest.StartServer(t, redistest.ServerOptions{TLS: &files})
	sentinel := redistest.StartSentinel(t, redistest.SentinelOptions{MasterPort: master.Port, Group: "g", Quorum: 1, TLS: &files})
	s, err := pool.Client(sentinel.Endpoint(redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the sentinel to see its TLS master up", func() error {
		m, err := s.SentinelMaster(ctx, "g")
		if err != nil {
			return err
		}
		if flags := m["flags"]; flags != "master" {
			return &linkDown{flags}
		}
		return nil
	})
}
