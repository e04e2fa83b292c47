package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// sandboxResolver resolves names through the sandbox's cluster DNS server (the endpoint of
// kube-system/kube-dns, on the sandbox bridge), as a pod's resolver would.
func sandboxResolver(t *testing.T) *net.Resolver {
	t.Helper()
	slices, err := sb.Kube.DiscoveryV1().EndpointSlices("kube-system").List(context.Background(),
		metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"})
	if err != nil || len(slices.Items) == 0 || len(slices.Items[0].Endpoints) == 0 || len(slices.Items[0].Endpoints[0].Addresses) == 0 {
		t.Fatalf("the sandbox's DNS server: %v (%d slices)", err, len(slices.Items))
	}
	server := net.JoinHostPort(slices.Items[0].Endpoints[0].Addresses[0], "53")
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, server)
	}}
}

// tlsDialer dials an address over TLS with cfg, a name resolved by resolver.
func tlsDialer(resolver *net.Resolver, cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) == nil {
			ips, err := resolver.LookupHost(ctx, host)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", host, err)
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("resolve %s: no address", host)
			}
			addr = net.JoinHostPort(ips[0], port)
		}
		raw, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		withName := cfg.Clone()
		withName.ServerName = host
		conn := tls.Client(raw, withName)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS with %s: %w", host, err)
		}
		return conn, nil
	}
}

// hostnameVerifyingDialer dials the name of each address it is given, resolved by resolver,
// and verifies the server's certificate against that name and the CA: what a client that
// checks certificate names does. It refuses an address that is an IP.
func hostnameVerifyingDialer(resolver *net.Resolver, roots *x509.CertPool) func(context.Context, string, string) (net.Conn, error) {
	dial := tlsDialer(resolver, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) != nil {
			return nil, fmt.Errorf("sent to the IP address %s, not to a name", addr)
		}
		return dial(ctx, network, addr)
	}
}

// A TLS cluster whose certificate names only the pods' DNS names: its nodes announce those
// names and redirect clients by them, so that a client that verifies the certificate against
// the name it dials, given one pod's name, is sent to names only and writes and reads every
// shard; the operator, which dials pod IPs and checks the chain, runs it to Ready.
func TestTLSClusterWithDNSNamesOnlyServesHostnameVerifyingClients(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: named
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
`)
	ca := redistest.NewCA(t, "redis-ca")
	domain := "." + c.ns + ".svc.cluster.local"
	issued := ca.Issue(t, "*.named-leader-headless"+domain, "*.named-follower-headless"+domain)
	if len(issued.Cert.IPAddresses) != 0 {
		t.Fatalf("the certificate names IPs %v", issued.Cert.IPAddresses)
	}
	c.tls = tlsSecret(t, c.ns, ca.CertPEM, issued)
	c.waitReady(start)
	c.assertShape()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	// The certificate is of no use to a client that verifies the IP it dials.
	pod := c.pod("named-leader-0")
	if conn, err := tls.Dial("tcp", net.JoinHostPort(pod.Status.PodIP, "6379"),
		&tls.Config{RootCAs: roots, ServerName: pod.Status.PodIP, MinVersion: tls.VersionTLS12}); err == nil {
		_ = conn.Close()
		t.Fatal("the certificate verified against the pod IP: the test would prove nothing")
	}

	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:  []string{"named-leader-0.named-leader-headless" + domain + ":6379"},
		Dialer: hostnameVerifyingDialer(sandboxResolver(t), roots), MaxRedirects: 8,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
	})
	t.Cleanup(func() { _ = cc.Close() })
	slots, err := cc.ClusterSlots(c.ctx).Result() //nolint:staticcheck // the map go-redis's cluster client routes by
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		for _, n := range s.Nodes {
			host, port, _ := net.SplitHostPort(n.Addr)
			if !strings.HasSuffix(host, "-headless"+domain) || port != strconv.Itoa(6379) {
				t.Errorf("slots %d-%d are served at %s, not at a pod's DNS name", s.Start, s.End, n.Addr)
			}
		}
	}
	c.writeAndReadEveryShard(c.ctx, cc, "named")
}
