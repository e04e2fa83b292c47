package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// tlsClient opens a TLS client to ip:port as the default user; it is closed when the test ends.
func tlsClient(t testing.TB, ip string, port int, password string, cfg *tls.Config) *goredis.Client {
	t.Helper()
	return tlsClientAs(t, ip, port, "", password, cfg)
}

// tlsClientAs opens a TLS client to ip:port as username ("" for default); it is closed when
// the test ends.
func tlsClientAs(t testing.TB, ip string, port int, username, password string, cfg *tls.Config) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{
		Addr: net.JoinHostPort(ip, strconv.Itoa(port)), Username: username, Password: password, TLSConfig: cfg,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tlsSecretName is the Secret the TLS tests' resources name.
const tlsSecretName = "redis-tls"

// tlsSecret writes the Secret tlsSecretName shaped as cert-manager writes it (type
// kubernetes.io/tls, ca.crt, tls.crt, tls.key) and returns the client configuration that
// trusts its CA bundle.
func tlsSecret(t *testing.T, ns string, caBundle []byte, issued redistest.Issued) *tls.Config {
	t.Helper()
	name := tlsSecretName
	ctx := context.Background()
	data := map[string][]byte{"ca.crt": caBundle, "tls.crt": issued.CertPEM, "tls.key": issued.KeyPEM}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
	if err := sb.Client.Create(ctx, secret); err != nil {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			t.Fatal(err)
		}
		secret.Data = data
		if err := sb.Client.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := redis.NewTLSConfig(redis.TLSMaterial{CA: caBundle, Cert: issued.CertPEM, Key: issued.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// podStarts are the UID and container restart counts of each pod of an instance.
func podStarts(t *testing.T, ns, instance string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": instance}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		s := string(p.UID)
		for _, cs := range p.Status.ContainerStatuses {
			s += fmt.Sprintf(" %s:%d", cs.Name, cs.RestartCount)
		}
		out[p.Name] = s
	}
	return out
}

// waitServes waits until a new TLS connection to each pod, verified with cfg, sees the
// certificate want.
func waitServes(t *testing.T, ns string, pods []corev1.Pod, port int, cfg *tls.Config, want redistest.Issued) {
	t.Helper()
	for _, p := range pods {
		sb.WaitFor(t, ns, p.Name+" serving certificate serial "+want.Cert.SerialNumber.String(), 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			leaf, err := redis.ServedCertificate(ctx, redis.NewEndpoint(p.Status.PodIP, port, redis.Auth{}).WithTLS(cfg), 3*time.Second)
			if err != nil {
				return false, err.Error(), nil
			}
			return leaf.SerialNumber.Cmp(want.Cert.SerialNumber) == 0, "serial " + leaf.SerialNumber.String(), nil
		})
	}
}

// waitTLSReloadedEvent waits for a TLSReloaded event naming every pod.
func waitTLSReloadedEvent(t *testing.T, ns string, pods []corev1.Pod, serial string) {
	t.Helper()
	sb.WaitFor(t, ns, "a TLSReloaded event for every pod", time.Minute, func(ctx context.Context) (bool, string, error) {
		var events eventsv1.EventList
		if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		named := map[string]bool{}
		for _, e := range events.Items {
			if e.Reason == "TLSReloaded" && strings.Contains(e.Note, serial) {
				for _, p := range pods {
					if strings.Contains(e.Note, p.Name+" ") || strings.Contains(e.Note, p.Name+"]") {
						named[p.Name] = true
					}
				}
			}
		}
		return len(named) == len(pods), fmt.Sprintf("pods named: %v", named), nil
	})
}

// A RedisCluster with a cert-manager-shaped Secret serves TLS only, becomes Ready, keeps its
// keys, and takes a renewed certificate, then a new CA bundle with a certificate of the new CA,
// in place: no pod replaced or restarted, new connections see the new certificate.
func TestTLSClusterRenewsInPlace(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t, "redis-ca")
	first := ca.Issue(t, "redis-cluster-leader", "redis-cluster-follower")
	start := time.Now()
	// The Secret comes after the resource, as it may from cert-manager: the resource waits for it.
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: redis-cluster
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
`)
	ns := c.ns
	cfg := tlsSecret(t, ns, ca.CertPEM, first)
	c.tls = cfg
	c.waitReady(start)
	c.assertShape()
	c.writeKeys("tls", 200)

	pods := c.pods(c.ctx)
	if err := sb.RedisAt(t, pods[0].Status.PodIP, 6379).Ping(c.ctx).Err(); err == nil {
		t.Fatal("a pod answered PING without TLS")
	}
	before := podStarts(t, ns, c.name)

	// A renewal from the same CA.
	renewed := ca.Issue(t, "redis-cluster-leader", "redis-cluster-follower")
	tlsSecret(t, ns, ca.CertPEM, renewed)
	waitServes(t, ns, pods, 6379, cfg, renewed)
	waitTLSReloadedEvent(t, ns, pods, renewed.Cert.SerialNumber.Text(16))

	// A CA change: the bundle of both CAs, with a certificate of the new CA.
	newCA := redistest.NewCA(t, "redis-ca-2")
	bundle := bytes.Join([][]byte{ca.CertPEM, newCA.CertPEM}, nil)
	third := newCA.Issue(t, "redis-cluster-leader", "redis-cluster-follower")
	tlsSecret(t, ns, bundle, third)
	newOnly, err := redis.NewTLSConfig(redis.TLSMaterial{CA: newCA.CertPEM, Cert: third.CertPEM, Key: third.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	waitServes(t, ns, pods, 6379, newOnly, third)
	c.tls = newOnly
	c.waitReady(start)
	c.assertShape()
	c.readKeys("tls", 200)
	if after := podStarts(t, ns, c.name); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("pods were replaced or restarted by the renewals:\nbefore %v\nafter  %v", before, after)
	}
}

// A RedisReplication with embedded sentinels over TLS becomes Ready, replicates over TLS,
// and takes a renewed certificate: the Redis pods in place, the sentinels (which cannot reload
// TLS files) by a restart of their pods one at a time, the master unchanged. Then the master
// pod is deleted: the sentinels elect a new master over TLS, the status follows, and every
// key reads back from the new master.
func TestTLSReplicationWithSentinelsRenewsInPlace(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "tls-replication")
	ctx := context.Background()
	ca := redistest.NewCA(t, "redis-ca")
	first := ca.Issue(t, "redis-replication")
	cfg := tlsSecret(t, ns, ca.CertPEM, first)
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: redis-replication
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
`)
	const name = "redis-replication"
	cr := &v1beta2.RedisReplication{}
	waitReady := func() {
		sb.WaitFor(t, ns, "RedisReplication Ready with its sentinels", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.MasterNode != "",
				fmt.Sprintf("%s: %v", cr.Status.State, ready), nil
		})
	}
	waitReady()
	master := getPod(t, ns, cr.Status.MasterNode)
	m := tlsClient(t, master.Status.PodIP, 6379, "", cfg)
	for i := range 100 {
		if err := m.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := m.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v: the replicas do not replicate over TLS", n, err)
	}
	var redisPods []corev1.Pod
	for i := range 3 {
		p := getPod(t, ns, fmt.Sprintf("%s-%d", name, i))
		redisPods = append(redisPods, *p)
		if p.Name == master.Name {
			continue
		}
		v, err := tlsClient(t, p.Status.PodIP, 6379, "", cfg).Get(ctx, "k99").Int()
		if err != nil || v != 99 {
			t.Fatalf("replica %s: k99 = %d, %v", p.Name, v, err)
		}
	}
	// The sentinels serve TLS only on their port and see the master.
	sentinelSet, group := builder.EmbeddedSentinelStatefulSetName(name), builder.EmbeddedMasterGroupName
	sentinels := sentinelPods(t, ns, sentinelSet)
	if len(sentinels) == 0 {
		t.Fatal("no sentinel pods")
	}
	waitSentinelsAgree(t, ns, sentinelSet, group, cfg, master.Status.PodIP)
	before := redisPodStarts(t, ns, name)
	uids := map[string]types.UID{}
	for _, p := range redisPods {
		uids[p.Name] = p.UID
	}

	renewed := ca.Issue(t, "redis-replication")
	tlsSecret(t, ns, ca.CertPEM, renewed)
	waitServes(t, ns, redisPods, 6379, cfg, renewed)
	waitTLSReloadedEvent(t, ns, redisPods, renewed.Cert.SerialNumber.Text(16))
	if err := m.Set(ctx, "after-renewal", 1, 0).Err(); err != nil {
		t.Fatalf("a connection opened before the renewal: %v", err)
	}
	if n, err := m.Wait(ctx, 2, 5000).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 after the renewal = %d, %v", n, err)
	}
	// The sentinels, restarted one by one, serve the renewed certificate and still agree on
	// the same master.
	waitServes(t, ns, waitSentinelsReplaced(t, ns, sentinelSet, sentinels), 26379, cfg, renewed)
	waitSentinelsAgree(t, ns, sentinelSet, group, cfg, master.Status.PodIP)
	waitReady()
	if cr.Status.MasterNode != master.Name {
		t.Fatalf("the master moved to %s during the renewal", cr.Status.MasterNode)
	}
	if after := redisPodStarts(t, ns, name); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("Redis pods were replaced or restarted by the renewal:\nbefore %v\nafter  %v", before, after)
	}
	for _, p := range redisPods {
		if got := getPod(t, ns, p.Name).UID; got != uids[p.Name] {
			t.Fatalf("pod %s was replaced", p.Name)
		}
	}
	checkRestartedEvents(t, ns, sentinels)

	// The master pod deleted: the sentinels fail over over TLS, the status follows.
	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "a new master elected by the sentinels", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != master.Name, "master " + cr.Status.MasterNode, nil
	})
	waitReady()
	promoted := getPod(t, ns, cr.Status.MasterNode)
	waitSentinelsAgree(t, ns, sentinelSet, group, cfg, promoted.Status.PodIP)
	nm := tlsClient(t, promoted.Status.PodIP, 6379, "", cfg)
	if role, err := nm.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Fatalf("%s answers ROLE %v, %v", promoted.Name, role, err)
	}
	for i := range 100 {
		if v, err := nm.Get(ctx, "k"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("k%d = %d, %v on the new master %s", i, v, err, promoted.Name)
		}
	}
	if v, err := nm.Get(ctx, "after-renewal").Int(); err != nil || v != 1 {
		t.Fatalf("after-renewal = %d, %v on the new master", v, err)
	}
	if err := nm.Set(ctx, "after-failover", 1, 0).Err(); err != nil {
		t.Fatalf("the new master takes writes: %v", err)
	}
}

// sentinelPods are the running pods of the sentinel StatefulSet app.
func sentinelPods(t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := sb.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	return out
}

// waitSentinelsAgree waits until every sentinel of the StatefulSet app (three) answers over
// TLS that the master of group is at masterIP and counts exactly the two other sentinels
// (none that is gone).
func waitSentinelsAgree(t *testing.T, ns, app, group string, cfg *tls.Config, masterIP string) {
	t.Helper()
	sb.WaitFor(t, ns, "every sentinel reporting the master at "+masterIP+" and knowing the 2 others", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods := sentinelPods(t, ns, app)
		if len(pods) != 3 {
			return false, fmt.Sprintf("%d sentinel pods", len(pods)), nil
		}
		for _, p := range pods {
			reply, err := tlsClient(t, p.Status.PodIP, 26379, "", cfg).Do(ctx, "SENTINEL", "MASTER", group).Result()
			master := fieldMap(reply)
			if err != nil || master["ip"] != masterIP || master["num-other-sentinels"] != "2" {
				return false, fmt.Sprintf("sentinel %s: master %s, %s other sentinels, %v", p.Name, master["ip"], master["num-other-sentinels"], err), nil
			}
		}
		return true, "", nil
	})
}

// fieldMap reads a field/value reply, a RESP3 map or a RESP2 flat array.
func fieldMap(reply any) map[string]string {
	out := map[string]string{}
	switch r := reply.(type) {
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
		}
	}
	return out
}

// waitSentinelsReplaced waits until the three pods of the sentinel StatefulSet app are all new
// ones (none of old) and ready, and returns them.
func waitSentinelsReplaced(t *testing.T, ns, app string, old []corev1.Pod) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	sb.WaitFor(t, ns, "every sentinel pod replaced", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods = sentinelPods(t, ns, app)
		if len(pods) != 3 {
			return false, fmt.Sprintf("%d sentinel pods", len(pods)), nil
		}
		for _, p := range pods {
			for _, o := range old {
				if p.UID == o.UID {
					return false, p.Name + " not replaced yet", nil
				}
			}
			if !framework.PodReady(&p) {
				return false, p.Name + " not ready", nil
			}
		}
		return true, "", nil
	})
	return pods
}

// redisPodStarts is podStarts without the sentinel pods, which a renewal restarts.
func redisPodStarts(t *testing.T, ns, replication string) map[string]string {
	t.Helper()
	starts := podStarts(t, ns, replication)
	for pod := range starts {
		if strings.HasPrefix(pod, builder.EmbeddedSentinelStatefulSetName(replication)+"-") {
			delete(starts, pod)
		}
	}
	return starts
}

// checkRestartedEvents checks that a TLSRestarted event named each of the sentinel pods.
func checkRestartedEvents(t *testing.T, ns string, sentinels []corev1.Pod) {
	t.Helper()
	restarted := eventNotes(t, ns, "TLSRestarted")
	for _, p := range sentinels {
		if !strings.Contains(restarted, "sentinel pod "+p.Name+" restarted") {
			t.Errorf("no TLSRestarted event for sentinel %s; events: %s", p.Name, restarted)
		}
	}
}

// eventNotes joins the notes of the namespace's events with the reason.
func eventNotes(t *testing.T, ns, reason string) string {
	t.Helper()
	var events eventsv1.EventList
	if err := sb.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range events.Items {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return strings.Join(notes, "; ")
}
