package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// Valkey 8 (Debian's valkey-server, as the valkey/valkey images run it): a cluster with the
// exporter, and a replication watched by sentinels of the same image, each through a failover.
func TestValkeyImageRunsACluster(t *testing.T) {
	t.Parallel()
	c := clusterWithImage(t, "valkey/valkey:8.0.1", opstreeExporter)
	server, err := c.redis(c.pod(c.name+"-leader-0")).Info(c.ctx, "server").Result()
	if err != nil || !strings.Contains(server, "valkey_version:8.") {
		t.Errorf("INFO server of a valkey/valkey pod: %v\n%s", err, server)
	}
	exporterUp(t, c.ns, c.pod(c.name+"-follower-0"))
}

func TestValkeyImageRunsReplicationWithSentinels(t *testing.T) {
	t.Parallel()
	replicationWithSentinels(t, "valkey-sentinel", "valkey/valkey:8.0.1", "", "valkey/valkey:8.0.1")
}

// One Valkey cluster through the operator's features, in one lifecycle to keep the suite's
// time: TLS and a password from the start, a scale-out and a rolling update under writes, an
// in-place password rotation, a scale-in, a planned leader deletion (the preStop hand-over,
// whose script runs the image's redis-cli, a link to valkey-cli); every key read back.
func TestValkeyClusterReshardsRollsRotatesAndHandsOver(t *testing.T) {
	t.Parallel()
	clusterLifecycle(t, "valkey/valkey:8.0.1")
}

// clusterLifecycle runs one cluster of image through the operator's features (see
// TestValkeyClusterReshardsRollsRotatesAndHandsOver).
func clusterLifecycle(t *testing.T, image string) {
	t.Helper()
	ctx := context.Background()
	ca := redistest.NewCA(t, "valkey-ca")
	issued := ca.Issue(t, "vk-leader", "vk-follower")
	ns := sb.Namespace(t, "valkey")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vk-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("valkey-first")}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, ctx: ctx, ns: ns, name: "vk", password: "valkey-first"}
	c.tls = tlsSecret(t, ns, ca.CertPEM, issued)
	start := time.Now()
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: vk
spec:
  clusterSize: 3
  persistenceEnabled: true
  kubernetesConfig:
    image: `+image+`
    redisSecret:
      name: vk-auth
      key: password
  TLS:
    secret:
      secretName: `+tlsSecretName+`
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 100Mi}}
`)
	c.waitReady(start)
	c.writeKeys("v", 300)

	checker := c.startWriting("vk")
	since := faultTime()
	c.resize(4)
	c.waitReady(since)
	c.assertShapeOf(4, 4)
	if got := c.slotsPerMaster(); fmt.Sprint(got) != "[4096 4096 4096 4096]" {
		t.Errorf("slots per master after the scale-out: %v", got)
	}
	since = faultTime()
	cr := c.get()
	cr.Spec.EnvVars = &[]corev1.EnvVar{{Name: "ROLLOUT", Value: "1"}}
	if err := sb.Client.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	c.waitRolledOut(8)
	c.waitReady(since)
	checker.StopAndRequire(ctx, t, c.client(), "while a cluster of "+image+" scaled out and rolled")
	c.readKeys("v", 300)

	secret.Data["password"] = []byte("valkey-second")
	if err := sb.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c.password = "valkey-second"
	sb.WaitFor(t, ns, "every Valkey pod requires the new password", time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, p := range c.pods(ctx) {
			got, err := c.redis(&p).ConfigGet(ctx, "requirepass").Result()
			if err != nil || got["requirepass"] != "valkey-second" {
				return false, fmt.Sprintf("%s: %v %v", p.Name, got, err), nil
			}
		}
		return true, "", nil
	})

	since = faultTime()
	c.resize(3)
	c.waitReady(since)
	c.assertShapeOf(3, 3)
	c.readKeys("v", 300)

	// Right after the rotation: the hook logs in with the projected file once it is current.
	plannedLeaderDeletion(t, c)
	c.readKeys("v", 300)
}
