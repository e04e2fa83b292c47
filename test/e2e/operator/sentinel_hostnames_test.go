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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A TLS RedisReplication watched by a RedisSentinel that resolves and announces hostnames,
// with a certificate naming only DNS names: the sentinels name the master by its pod's DNS
// name (SENTINEL get-master-addr-by-name) and know the replicas by theirs, the replicas follow
// the master by name over TLS, and a client that verifies the certificate against the name the
// sentinels give writes to the master. The master pod deleted, the sentinels fail over and
// name the new master by its DNS name; every other pod, the old master's new pod among them,
// follows that name with its link up, and the keys are all there.
func TestSentinelsNameTheMasterByDNSName(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "sentinel-dns")
	ctx := context.Background()
	const name, group = "named", "myMaster"
	domain := "." + ns + ".svc.cluster.local"
	fqdn := func(pod string) string { return pod + ".named-headless" + domain }
	ca := redistest.NewCA(t, "redis-ca")
	issued := ca.Issue(t, "*.named-headless"+domain, "*.named-sn-sentinel-headless"+domain)
	if len(issued.Cert.IPAddresses) != 0 {
		t.Fatalf("the certificate names IPs %v", issued.Cert.IPAddresses)
	}
	cfg := tlsSecret(t, ns, ca.CertPEM, issued)
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: named
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: named-sn
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
  redisSentinelConfig:
    redisReplicationName: named
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
    resolveHostnames: "yes"
    announceHostnames: "yes"
`)
	cr := &v1beta2.RedisReplication{}
	sn := &v1beta2.RedisSentinel{}
	waitReady := func(why string) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication and RedisSentinel Ready "+why, 5*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
				return false, "", err
			}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "named-sn"}, sn); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			snReady := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.MasterNode != "" &&
					snReady != nil && snReady.Status == metav1.ConditionTrue,
				fmt.Sprintf("replication %v; sentinels %v", ready, snReady), nil
		})
	}
	start := time.Now()
	waitReady("at first")
	t.Logf("Ready after %s", time.Since(start).Round(time.Second))
	master := getPod(t, ns, cr.Status.MasterNode)
	sentinelsNameByDNS(t, ns, "named-sn-sentinel", group, cfg, fqdn(master.Name), fqdn)
	followByName(t, ns, name, master.Name, fqdn(master.Name), cfg)

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	// The certificate is of no use to a client that verifies the IP it dials.
	if conn, err := tls.Dial("tcp", net.JoinHostPort(master.Status.PodIP, "6379"),
		&tls.Config{RootCAs: roots, ServerName: master.Status.PodIP, MinVersion: tls.VersionTLS12}); err == nil {
		_ = conn.Close()
		t.Fatal("the certificate verified against the pod IP: the test would prove nothing")
	}
	byName := func(host string) *goredis.Client {
		c := goredis.NewClient(&goredis.Options{Addr: net.JoinHostPort(host, "6379"),
			Dialer:      hostnameVerifyingDialer(sandboxResolver(t), roots),
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	m := byName(fqdn(master.Name))
	for i := range 100 {
		if err := m.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("a client verifying the name the sentinels give: %v", err)
		}
	}
	if n, err := m.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v: the replicas do not replicate by name over TLS", n, err)
	}

	// The master pod deleted: the sentinels fail over, by name.
	deleted := time.Now()
	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "a new master elected by the sentinels", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != master.Name, "master " + cr.Status.MasterNode, nil
	})
	t.Logf("sentinels named %s %s after the master pod's deletion", cr.Status.MasterNode, time.Since(deleted).Round(time.Second))
	waitReady("after the failover")
	t.Logf("Ready again %s after the deletion", time.Since(deleted).Round(time.Second))
	promoted := cr.Status.MasterNode
	sentinelsNameByDNS(t, ns, "named-sn-sentinel", group, cfg, fqdn(promoted), fqdn)
	followByName(t, ns, name, promoted, fqdn(promoted), cfg)
	nm := byName(fqdn(promoted))
	for i := range 100 {
		if v, err := nm.Get(ctx, "k"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("k%d = %d, %v on the new master %s", i, v, err, promoted)
		}
	}
	if err := nm.Set(ctx, "after-failover", 1, 0).Err(); err != nil {
		t.Fatalf("the new master takes writes by name: %v", err)
	}
	if n, err := nm.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 after the failover = %d, %v", n, err)
	}
}

// sentinelsNameByDNS waits until each of the three sentinels of the StatefulSet app names the
// master of group masterName (a DNS name) and lists the other pods of the replication by their
// DNS names (fqdn of a pod's name).
func sentinelsNameByDNS(t *testing.T, ns, app, group string, cfg *tls.Config, masterName string, fqdn func(string) string) {
	t.Helper()
	sb.WaitFor(t, ns, "every sentinel naming the master "+masterName, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods := sentinelPods(t, ns, app)
		if len(pods) != 3 {
			return false, fmt.Sprintf("%d sentinel pods", len(pods)), nil
		}
		for _, p := range pods {
			c := tlsClient(t, p.Status.PodIP, 26379, "", cfg)
			addr, err := c.Do(ctx, "SENTINEL", "get-master-addr-by-name", group).StringSlice()
			if err != nil || len(addr) != 2 || addr[0] != masterName || addr[1] != "6379" {
				return false, fmt.Sprintf("sentinel %s: master %v, %v", p.Name, addr, err), nil
			}
			replicas, err := c.Do(ctx, "SENTINEL", "REPLICAS", group).Slice()
			if err != nil {
				return false, fmt.Sprintf("sentinel %s: replicas: %v", p.Name, err), nil
			}
			var hosts []string
			for _, r := range replicas {
				f := fieldMap(r)
				if !strings.Contains(f["flags"], "s_down") {
					hosts = append(hosts, f["ip"])
				}
			}
			for _, h := range hosts {
				if !strings.HasSuffix(h, fqdn("")) {
					return false, fmt.Sprintf("sentinel %s knows a replica at %s, not by DNS name", p.Name, h), nil
				}
			}
			if len(hosts) != 2 {
				return false, fmt.Sprintf("sentinel %s knows replicas %v", p.Name, hosts), nil
			}
		}
		return true, "", nil
	})
}

// followByName waits until every pod of the replication but master replicates from
// masterName (a DNS name) over TLS with its link up.
func followByName(t *testing.T, ns, replication, master, masterName string, cfg *tls.Config) {
	t.Helper()
	sb.WaitFor(t, ns, "every replica following "+masterName, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": replication}); err != nil {
			return false, "", err
		}
		following := 0
		for _, p := range pods.Items {
			if p.Name == master || p.DeletionTimestamp != nil || p.Status.PodIP == "" {
				continue
			}
			info, err := tlsClient(t, p.Status.PodIP, 6379, "", cfg).Info(ctx, "replication").Result()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", p.Name, err), nil
			}
			if !strings.Contains(info, "master_host:"+masterName+"\r\n") || !strings.Contains(info, "master_link_status:up") {
				return false, fmt.Sprintf("%s: %s", p.Name, strings.ReplaceAll(info, "\r\n", " ")), nil
			}
			following++
		}
		return following == 2, fmt.Sprintf("%d replicas follow by name", following), nil
	})
}

// The same with the sentinels embedded in the RedisReplication (spec.sentinel): they are
// seeded with the master pod's DNS name, name it and the replicas by DNS name, and after the
// master pod is deleted name the new master by its DNS name, which every other pod follows.
func TestEmbeddedSentinelsNameTheMasterByDNSName(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "embedded-sentinel-dns")
	ctx := context.Background()
	const name, group = "enamed", "mymaster"
	domain := "." + ns + ".svc.cluster.local"
	fqdn := func(pod string) string { return pod + ".enamed-headless" + domain }
	ca := redistest.NewCA(t, "redis-ca")
	cfg := tlsSecret(t, ns, ca.CertPEM, ca.Issue(t, "*.enamed-headless"+domain, "*.enamed-s-hl"+domain))
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: enamed
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
  sentinel:
    size: 3
    image: redis:7.0.15
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
    resolveHostnames: "yes"
    announceHostnames: "yes"
`)
	cr := &v1beta2.RedisReplication{}
	waitReady := func(why string) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication Ready with its sentinels "+why, 5*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.MasterNode != "", fmt.Sprintf("%v", ready), nil
		})
	}
	start := time.Now()
	waitReady("at first")
	t.Logf("Ready after %s", time.Since(start).Round(time.Second))
	master := getPod(t, ns, cr.Status.MasterNode)
	sentinelsNameByDNS(t, ns, "enamed-s", group, cfg, fqdn(master.Name), fqdn)
	followByName(t, ns, name, master.Name, fqdn(master.Name), cfg)
	m := tlsClient(t, master.Status.PodIP, 6379, "", cfg)
	if err := m.Set(ctx, "before", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v", n, err)
	}

	deleted := time.Now()
	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "a new master elected by the sentinels", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != master.Name, "master " + cr.Status.MasterNode, nil
	})
	t.Logf("sentinels named %s %s after the master pod's deletion", cr.Status.MasterNode, time.Since(deleted).Round(time.Second))
	waitReady("after the failover")
	t.Logf("Ready again %s after the deletion", time.Since(deleted).Round(time.Second))
	promoted := getPod(t, ns, cr.Status.MasterNode)
	sentinelsNameByDNS(t, ns, "enamed-s", group, cfg, fqdn(promoted.Name), fqdn)
	followByName(t, ns, name, promoted.Name, fqdn(promoted.Name), cfg)
	if v, err := tlsClient(t, promoted.Status.PodIP, 6379, "", cfg).Get(ctx, "before").Int(); err != nil || v != 1 {
		t.Fatalf("before = %d, %v on the new master %s", v, err, promoted.Name)
	}
}
