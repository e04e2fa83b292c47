//go:build integration

package controller

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// A new password in the Secret is taken by the running pods in place: no pod restarts, the
// old password stops working, replication goes on (masterauth changed too), the auth Secret
// the pods restart with holds the new one, and a replica restarted afterwards rejoins with it.
func TestPasswordChangesInPlace(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "rotation")
	pids := map[string]int{}
	for _, name := range f.kubelet.podNames() {
		pids[name] = f.kubelet.pod(name).cmd.Process.Pid
	}

	const newPassword = `n3w "rotated" pass`
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "redis-secret"}, &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["password"] = []byte(newPassword)
	if err := f.c.Update(f.ctx, &secret); err != nil {
		t.Fatal(err)
	}

	waitUntil(t, 30*time.Second, "the auth Secret to hold the new password", func() error {
		var auth corev1.Secret
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: builder.AuthSecretName("rr")}, &auth); err != nil {
			return err
		}
		if got, _ := builder.PasswordOfAuthFile(string(auth.Data[builder.RedisAuthKey])); got != newPassword {
			return fmt.Errorf("auth Secret holds %q", got)
		}
		return nil
	})
	for _, name := range f.kubelet.podNames() {
		p := f.kubelet.pod(name)
		if p.cmd.Process.Pid != pids[name] {
			t.Errorf("pod %s restarted", name)
		}
		for password, want := range map[string]bool{newPassword: true, replicationPassword: false} {
			c := goredis.NewClient(&goredis.Options{Addr: p.addr(builder.DefaultRedisPort), Password: password, MaxRetries: -1})
			err := c.Ping(f.ctx).Err()
			_ = c.Close()
			if (err == nil) != want {
				t.Errorf("pod %s with the %s password: %v", name, map[bool]string{true: "new", false: "old"}[want], err)
			}
		}
	}
	f.password = newPassword
	f.waitReady("rr-0")
	f.writeAcknowledged("after", "rotation")

	// A replica that restarts now starts from the auth Secret, with the new password.
	old := f.kubelet.deletePod(f.ctx, f.cr.Namespace, "rr-2", syscall.SIGTERM)
	f.kubelet.password = newPassword
	f.kubelet.startPod(f.ctx, f.statefulSet(), 2, old.dataDir)
	f.waitReady("rr-0")
	f.checkTopology("rr-0", map[string]string{"before": "rotation", "after": "rotation"})

	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	rotated := false
	for _, e := range events.Items {
		if e.Reason == "PasswordRotated" && strings.HasPrefix(e.Note, "3 pod(s) changed") {
			rotated = true
		}
	}
	if !rotated {
		t.Error("no PasswordRotated event says the 3 pods changed")
	}
}

// The same for a cluster: every node takes the new password in place, replicas stay linked
// (masterauth), and a client with the new password reads every key.
func TestClusterPasswordChangesInPlace(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixtureWithPassword(t, 3, 3, "first")
	f.runPods()
	f.waitReady(60 * time.Second)
	clusterClient := func(password string) *goredis.ClusterClient {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: f.addrs(), Password: password, MaxRedirects: 8})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for i := 0; i < 200; i++ {
		if err := clusterClient("first").Set(f.ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "redis-secret"}, &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["password"] = []byte("second")
	if err := f.c.Update(f.ctx, &secret); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "every node to require the new password", func() error {
		for _, addr := range f.addrs() {
			c := goredis.NewClient(&goredis.Options{Addr: addr, Password: "second", MaxRetries: -1})
			got, err := c.ConfigGet(f.ctx, "requirepass").Result()
			_ = c.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
			if got["requirepass"] != "second" {
				return fmt.Errorf("%s requires %q", addr, got["requirepass"])
			}
		}
		return nil
	})
	f.waitReady(30 * time.Second)
	for _, addr := range f.addrs() {
		c := goredis.NewClient(&goredis.Options{Addr: addr, Password: "second"})
		info, err := c.Info(f.ctx, "replication").Result()
		_ = c.Close()
		if err != nil || (strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up")) {
			t.Errorf("%s replication after the rotation: %v %s", addr, err, info)
		}
	}
	for i := 0; i < 200; i++ {
		if got, err := clusterClient("second").Get(f.ctx, fmt.Sprint("k", i)).Int(); err != nil || got != i {
			t.Fatalf("GET k%d = %d, %v", i, got, err)
		}
	}
	if err := clusterClient("first").Ping(f.ctx).Err(); err == nil {
		t.Error("the old password still works")
	}
}
