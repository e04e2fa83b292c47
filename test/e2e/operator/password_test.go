package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const passwordCluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: guarded
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: redis-auth
      key: password
`

// A password changed in the Secret reaches every running pod of the cluster without a
// restart; a pod deleted afterwards comes back with it from the auth Secret the kubelet
// refreshed, and rejoins its shard as a replica (masterauth) with every key readable.
func TestClusterPasswordRotation(t *testing.T) {
	ctx := context.Background()
	ns := sb.Namespace(t, "password")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("first-pass")}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sb.Apply(t, ns, passwordCluster)
	c := &cluster{t: t, ctx: ctx, ns: ns, name: "guarded", password: "first-pass"}
	c.waitReady(start)
	c.writeKeys("p", 300)
	// A pod is the same pod, not restarted, when its UID and restart count are unchanged.
	before := map[string]string{}
	for _, p := range c.pods(ctx) {
		before[p.Name] = fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount)
	}

	secret.Data["password"] = []byte("second-pass")
	if err := sb.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c.password = "second-pass"
	sb.WaitFor(t, ns, "every pod requires the new password", time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, p := range c.pods(ctx) {
			got, err := c.redis(&p).ConfigGet(ctx, "requirepass").Result()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", p.Name, err), nil
			}
			if got["requirepass"] != "second-pass" {
				return false, p.Name + " still requires the old one", nil
			}
		}
		return true, "", nil
	})
	for _, p := range c.pods(ctx) {
		if fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount) != before[p.Name] {
			t.Errorf("pod %s restarted for the rotation", p.Name)
		}
	}
	c.readKeys("p", 300)

	since := faultTime()
	if err := sb.Client.Delete(ctx, c.pod("guarded-leader-1")); err != nil {
		t.Fatal(err)
	}
	c.waitReady(since)
	c.assertShape()
	c.readKeys("p", 300)
	old := sb.RedisWithPassword(t, c.pod("guarded-leader-1").Status.PodIP, 6379, "first-pass")
	if err := old.Ping(ctx).Err(); err == nil {
		t.Error("the recreated pod still takes the old password")
	}
	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "PasswordRotated" {
			return
		}
	}
	t.Error("no PasswordRotated event")
}
