package operator

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/writecheck"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// A TLS RedisCluster under write load bootstraps, loses a leader pod (its replica takes over,
// the pod comes back), scales out to four leaders and back to three, and takes a certificate
// of a new CA under a bundle of the old and new CA, while a client keeps writing over TLS: no
// acknowledged write is lost and every key reads back.
func TestTLSClusterUnderWriteLoad(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t, "redis-ca")
	newCA := redistest.NewCA(t, "redis-ca-2")
	names := []string{"tls-ops-leader", "tls-ops-follower"}
	first := ca.Issue(t, names...)
	start := time.Now()
	c := newCluster(t, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: tls-ops
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
`)
	tlsSecret(t, c.ns, ca.CertPEM, first)
	// The clients trust the bundle of both CAs from the start, as clients do once a CA change
	// is announced: they must keep writing across it.
	bundle := bytes.Join([][]byte{ca.CertPEM, newCA.CertPEM}, nil)
	trustBoth, err := redis.NewTLSConfig(redis.TLSMaterial{CA: bundle, Cert: first.CertPEM, Key: first.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	c.tls = trustBoth
	c.waitReady(start)
	c.writeKeys("tls-ops", 300)
	checker := c.startWriting("tls-load")

	// A leader pod deleted: its replica takes the shard, the pod comes back as a replica.
	leader := c.pod(c.name + "-leader-1")
	fault := faultTime()
	if err := sb.Client.Delete(c.ctx, leader); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, c.ns, "leader-1 back with a new IP", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: leader.Name}, p); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return p.UID != leader.UID && framework.PodReady(p), p.Status.PodIP, nil
	})
	c.waitReady(fault)
	c.assertShape()
	writesGoOn(t, checker, "after the leader pod's deletion")

	since := faultTime()
	c.resize(4)
	c.waitReady(since)
	c.assertShapeOf(4, 4)
	since = faultTime()
	c.resize(3)
	c.waitReady(since)
	c.assertShapeOf(3, 3)
	writesGoOn(t, checker, "after scaling 3→4→3")

	// The renewal: a certificate of the new CA, the Secret's bundle holding both.
	renewed := newCA.Issue(t, names...)
	tlsSecret(t, c.ns, bundle, renewed)
	newOnly, err := redis.NewTLSConfig(redis.TLSMaterial{CA: newCA.CertPEM, Cert: renewed.CertPEM, Key: renewed.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	pods := c.pods(c.ctx)
	waitServes(t, c.ns, pods, 6379, newOnly, renewed)
	waitTLSReloadedEvent(t, c.ns, pods, renewed.Cert.SerialNumber.Text(16))
	c.waitReady(start)
	c.assertShape()
	writesGoOn(t, checker, "after the CA change")

	checker.StopAndRequire(c.ctx, t, c.client(), "over TLS across a failover, scaling and a CA change")
	c.readKeys("tls-ops", 300)
}

// A RedisSentinel over TLS watching a TLS RedisReplication takes a renewed certificate by a
// restart of its pods, one at a time: every sentinel serves the new certificate, they agree on
// the master, which has not moved, and know exactly the other two.
func TestTLSRedisSentinelRestartsForRenewal(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "tls-sentinel")
	ca := redistest.NewCA(t, "redis-ca")
	names := []string{"tls-watched", "tls-watchers-sentinel"}
	cfg := tlsSecret(t, ns, ca.CertPEM, ca.Issue(t, names...))
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: tls-watched
spec:
  clusterSize: 2
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: tls-watchers
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
  redisSentinelConfig:
    redisReplicationName: tls-watched
`)
	sn := &v1beta2.RedisSentinel{}
	waitSentinelReady := func() {
		t.Helper()
		sb.WaitFor(t, ns, "RedisSentinel Ready", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tls-watchers"}, sn); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue, fmt.Sprintf("%s: %v", sn.Status.State, ready), nil
		})
	}
	waitSentinelReady()
	cr := &v1beta2.RedisReplication{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tls-watched"}, cr); err != nil {
		t.Fatal(err)
	}
	master := getPod(t, ns, cr.Status.MasterNode)
	app, group := builder.SentinelStatefulSetName("tls-watchers"), builder.DefaultMasterGroupName
	sentinels := sentinelPods(t, ns, app)
	waitSentinelsAgree(t, ns, app, group, cfg, master.Status.PodIP)

	renewed := ca.Issue(t, names...)
	tlsSecret(t, ns, ca.CertPEM, renewed)
	waitServes(t, ns, waitSentinelsReplaced(t, ns, app, sentinels), 26379, cfg, renewed)
	waitSentinelsAgree(t, ns, app, group, cfg, master.Status.PodIP)
	waitSentinelReady()
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tls-watched"}, cr); err != nil {
		t.Fatal(err)
	}
	if cr.Status.MasterNode != master.Name {
		t.Errorf("the master moved from %s to %s during the renewal", master.Name, cr.Status.MasterNode)
	}
	checkRestartedEvents(t, ns, sentinels)
}

// writesGoOn waits for the checker to have writes acknowledged after this point: the client
// writes on after the disruption named by what.
func writesGoOn(t *testing.T, checker *writecheck.Checker, what string) {
	t.Helper()
	mark := checker.Stats().Acknowledged
	deadline := time.Now().Add(time.Minute)
	for checker.Stats().Acknowledged < mark+50 {
		if time.Now().After(deadline) {
			t.Fatalf("no writes acknowledged for a minute %s: %+v", what, checker.Stats())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: %+v", what, checker.Stats())
}
