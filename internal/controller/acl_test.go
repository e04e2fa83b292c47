//go:build integration

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// A standalone Redis with users from an ACL Secret: a user can AUTH and is held to its key
// pattern; an edit of the Secret adds a user without restarting the pod; a malformed edit is
// refused with Degraded/InvalidACL naming the line, one Warning event, and the users as they were.
func TestStandaloneACLUsersFromASecret(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	const password = "s3cret-acl"
	kubelet := newFakeKubelet(t, c, builder.DefaultRedisPort)
	kubelet.standalone, kubelet.password, kubelet.aclSecret = true, password, builder.ACLSecretName("cache")

	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-secret", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: ns},
		Data: map[string][]byte{"user.acl": []byte("user reader on >rpw ~app:* +get\n")}}
	if err := c.Create(ctx, users); err != nil {
		t.Fatal(err)
	}
	secretName, secretKey := "redis-secret", "password"
	cr := &v1beta2.Redis{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns},
		Spec: v1beta2.RedisSpec{
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
				ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}},
			ACL: &v1beta2.ACLConfig{Secret: &corev1.SecretVolumeSource{SecretName: "users"}},
		},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	kubelet.runStatefulSet(ctx, ns, "cache")
	// The operator's password still opens the default user although Redis ignores
	// requirepass with an aclfile: Ready means the operator got in.
	waitStandaloneReady(t, c, cr)
	addr := kubelet.pod("cache-0").addr(builder.DefaultRedisPort)
	pid := kubelet.pod("cache-0").cmd.Process.Pid
	admin := goredis.NewClient(&goredis.Options{Addr: addr, Password: password})
	defer func() { _ = admin.Close() }()
	if err := admin.Set(ctx, "app:1", "one", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := goredis.NewClient(&goredis.Options{Addr: addr}).Ping(ctx).Err(); err == nil {
		t.Error("the default user answers without a password")
	}
	reader := goredis.NewClient(&goredis.Options{Addr: addr, Username: "reader", Password: "rpw"})
	defer func() { _ = reader.Close() }()
	if v, err := reader.Get(ctx, "app:1").Result(); err != nil || v != "one" {
		t.Fatalf("reader GET app:1 = %q, %v", v, err)
	}
	wantNoPerm(t, "reader SET app:1", reader.Set(ctx, "app:1", "x", 0).Err())
	wantNoPerm(t, "reader GET other:1", reader.Get(ctx, "other:1").Err())

	// An edit adds a writer; the pod loads it once its file shows it (kubelet's delay).
	users.Data["user.acl"] = []byte("user reader on >rpw ~app:* +get\nuser writer on >wpw ~app:* +get +set\n")
	if err := c.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the operator's ACL Secret has the writer", func() error {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: builder.ACLSecretName("cache")}, &s); err != nil {
			return err
		}
		if !strings.Contains(string(s.Data["user.acl"]), "user writer on") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	writer := goredis.NewClient(&goredis.Options{Addr: addr, Username: "writer", Password: "wpw"})
	defer func() { _ = writer.Close() }()
	time.Sleep(2 * time.Second) // the operator tries ACL LOAD on the stale file meanwhile
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("the operator's password stopped working while the file was stale: %v", err)
	}
	kubelet.refreshSecretVolumes(ctx, ns)
	waitUntil(t, 30*time.Second, "the writer can write", func() error {
		return writer.Set(ctx, "app:2", "two", 0).Err()
	})
	wantNoPerm(t, "writer SET other:2", writer.Set(ctx, "other:2", "x", 0).Err())
	waitForEvent(t, c, ns, "cache", ReasonACLLoaded)

	// A malformed edit is refused, naming the line; nothing changes in the pod.
	users.Data["user.acl"] = []byte("user reader on >rpw ~app:* +get\nuser writer on >wpw ~app:* +get +sett\n")
	if err := c.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "Degraded/InvalidACL", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d != nil && d.Status == metav1.ConditionTrue && d.Reason == ReasonInvalidACL && strings.Contains(d.Message, "line 2") {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})
	kubelet.refreshSecretVolumes(ctx, ns) // a refresh brings the kept file only
	time.Sleep(3 * time.Second)           // reconciles go on (periodic, events) and keep the condition
	if err := writer.Set(ctx, "app:3", "three", 0).Err(); err != nil {
		t.Fatalf("the writer lost its rights after a refused edit: %v", err)
	}
	if v, err := reader.Get(ctx, "app:2").Result(); err != nil || v != "two" {
		t.Fatalf("reader GET app:2 = %q, %v", v, err)
	}
	if n := countEvents(t, c, ns, "cache", ReasonInvalidACL); n != 1 {
		t.Errorf("%d InvalidACL events, want 1", n)
	}

	// A file that defines the operator's own user is refused too.
	users.Data["user.acl"] = []byte("user redis-operator on >x ~* +@all\n")
	if err := c.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "Degraded/InvalidACL for the operator's user", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d != nil && d.Reason == ReasonInvalidACL && strings.Contains(d.Message, "line 1") && strings.Contains(d.Message, "operator's own") {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})

	// Fixed: Ready again, still the same process.
	users.Data["user.acl"] = []byte("user reader on >rpw ~app:* +get\n")
	if err := c.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the operator's ACL Secret drops the writer", func() error {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: builder.ACLSecretName("cache")}, &s); err != nil {
			return err
		}
		if strings.Contains(string(s.Data["user.acl"]), "writer") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	kubelet.refreshSecretVolumes(ctx, ns)
	waitStandaloneReady(t, c, cr)
	waitUntil(t, 30*time.Second, "the writer is gone", func() error {
		if err := goredis.NewClient(&goredis.Options{Addr: addr, Username: "writer", Password: "wpw"}).Ping(ctx).Err(); err == nil {
			return fmt.Errorf("the writer still authenticates")
		}
		return nil
	})
	if kubelet.pod("cache-0").cmd.Process.Pid != pid {
		t.Error("the pod was restarted for an ACL change")
	}
}

func wantNoPerm(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("%s: got %v, want NOPERM", what, err)
	}
}

func countEvents(t *testing.T, c client.Client, ns, name, reason string) int {
	t.Helper()
	var events eventsv1.EventList
	if err := c.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			n++ // repeats of one event are a series on one object
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

func waitForEvent(t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	waitUntil(t, 15*time.Second, reason+" event", func() error {
		if countEvents(t, c, ns, name, reason) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
}

// A replication whose ACL Secret adds users still replicates (masterauth is the default
// user's password, which the rendered file keeps): a writer's keys reach the replicas, where a
// reader reads them and cannot write.
func TestReplicationWithACLUsersReplicates(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t, func(f *replicationFixture) {
		if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: f.cr.Namespace},
			Data: map[string][]byte{"user.acl": []byte("user writer on >wpw ~* +@read +@write\nuser reader on >rpw ~* +@read\n")}}); err != nil {
			t.Fatal(err)
		}
		f.cr.Spec.ACL = &v1beta2.ACLConfig{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}
		f.kubelet.aclSecret = builder.ACLSecretName("rr")
	})
	f.waitReady("rr-0")
	writer := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("rr-0").addr(builder.DefaultRedisPort), Username: "writer", Password: "wpw"})
	defer func() { _ = writer.Close() }()
	if err := writer.Set(f.ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.checkTopology("rr-0", map[string]string{"k": "v"})
	reader := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("rr-1").addr(builder.DefaultRedisPort), Username: "reader", Password: "rpw"})
	defer func() { _ = reader.Close() }()
	if v, err := reader.Get(f.ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("reader GET k on a replica = %q, %v", v, err)
	}
	master := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("rr-0").addr(builder.DefaultRedisPort), Username: "reader", Password: "rpw"})
	defer func() { _ = master.Close() }()
	wantNoPerm(t, "reader SET on the master", master.Set(f.ctx, "k", "w", 0).Err())
}

// The ACL Secret of a running replication turns the default user off: the pods load it without
// a restart, the operator and the replicas log in as the operator's own user from then on, and
// a failover after it (REPLICAOF to a new master, a restarted pod) replicates with that user.
func TestReplicationTurnsTheDefaultUserOffInPlace(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t, func(f *replicationFixture) {
		if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: f.cr.Namespace},
			Data: map[string][]byte{"user.acl": []byte("user writer on >wpw ~* +@all\n")}}); err != nil {
			t.Fatal(err)
		}
		f.cr.Spec.ACL = &v1beta2.ACLConfig{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}
		f.kubelet.aclSecret = builder.ACLSecretName("rr")
	})
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "off")
	pids := map[string]int{}
	for _, name := range f.kubelet.podNames() {
		pids[name] = f.kubelet.pod(name).cmd.Process.Pid
	}

	var users corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "users"}, &users); err != nil {
		t.Fatal(err)
	}
	users.Data["user.acl"] = []byte("user default off\nuser writer on >wpw ~* +@all\n")
	if err := f.c.Update(f.ctx, &users); err != nil {
		t.Fatal(err)
	}
	waitForACLSecret(t, f.c, f.cr.Namespace, builder.ACLSecretName("rr"), "user "+redis.OperatorUser+" on")
	f.kubelet.masterUser = redis.OperatorUser // what the auth Secret now gives pods that start
	f.kubelet.refreshSecretVolumes(f.ctx, f.cr.Namespace)
	for _, name := range f.kubelet.podNames() {
		waitUntil(t, 30*time.Second, name+" refuses the default user and replicates as "+redis.OperatorUser, func() error {
			asDefault := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(name).addr(builder.DefaultRedisPort), Password: f.password})
			defer func() { _ = asDefault.Close() }()
			if err := asDefault.Ping(f.ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				return fmt.Errorf("the default user still logs in: %w", err)
			}
			asOperator := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(name).addr(builder.DefaultRedisPort), Username: redis.OperatorUser, Password: f.password})
			defer func() { _ = asOperator.Close() }()
			got, err := asOperator.ConfigGet(f.ctx, "masteruser").Result()
			if err != nil {
				return err
			}
			if got["masteruser"] != redis.OperatorUser {
				return fmt.Errorf("masteruser %v", got)
			}
			return nil
		})
		if pid := f.kubelet.pod(name).cmd.Process.Pid; pid != pids[name] {
			t.Fatalf("%s restarted to take the ACL edit", name)
		}
	}
	f.username = redis.OperatorUser
	f.waitReady("rr-0")

	// The master dies: a replica is promoted, the other follows it, and the old master comes
	// back with its data as a replica: every link logs in as the operator's user.
	f.masterDiesAndRejoins(map[string]string{"before": "off"})
}

// A RedisCluster with an ACL Secret: a user is held to its key pattern across the shards, an
// edit adds a user without restarting a node, and a password rotation keeps the default user
// usable with the new password while the pods' files still hold the old one.
func TestClusterACLUsersFromASecret(t *testing.T) {
	t.Parallel()
	startOperator(t, testNamespace(t))
	f := newClusterFixtureWithPassword(t, 3, 3, "first")
	if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: f.ns},
		Data: map[string][]byte{"user.acl": []byte("user app on >apw ~app:* +@all\n")}}); err != nil {
		t.Fatal(err)
	}
	cr := f.get()
	cr.Spec.ACL = &v1beta2.ACLConfig{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}
	if err := f.c.Update(f.ctx, cr); err != nil {
		t.Fatal(err)
	}
	f.kubelet.aclSecret = builder.ACLSecretName(f.name)
	f.runPods()
	f.waitReady(60 * time.Second)
	pids := map[string]int{}
	for _, name := range f.kubelet.podNames() {
		pids[name] = f.kubelet.pod(name).cmd.Process.Pid
	}
	as := func(user, password string) *goredis.ClusterClient {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: f.addrs(), Username: user, Password: password, MaxRedirects: 8})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for i := 0; i < 50; i++ {
		if err := as("app", "apw").Set(f.ctx, fmt.Sprint("app:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantNoPerm(t, "app SET other", as("app", "apw").Set(f.ctx, "other", 1, 0).Err())

	var users corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "users"}, &users); err != nil {
		t.Fatal(err)
	}
	users.Data["user.acl"] = []byte("user app on >apw ~app:* +@all\nuser ops on >opw ~* +get +cluster|slots\n")
	if err := f.c.Update(f.ctx, &users); err != nil {
		t.Fatal(err)
	}
	waitForACLSecret(t, f.c, f.ns, builder.ACLSecretName(f.name), "user ops on")
	f.kubelet.refreshSecretVolumes(f.ctx, f.ns)
	waitUntil(t, 30*time.Second, "ops reads every shard", func() error {
		for i := 0; i < 50; i++ {
			if err := as("ops", "opw").Get(f.ctx, fmt.Sprint("app:", i)).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	wantNoPerm(t, "ops SET", as("ops", "opw").Set(f.ctx, "app:0", 1, 0).Err())

	// The password changes: the default user takes the new one at once, even before the
	// pods' files are refreshed, and keeps it after.
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "redis-secret"}, &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["password"] = []byte("second")
	if err := f.c.Update(f.ctx, &secret); err != nil {
		t.Fatal(err)
	}
	pingAll := func(password string) error {
		for _, addr := range f.addrs() {
			c := goredis.NewClient(&goredis.Options{Addr: addr, Password: password, MaxRetries: -1})
			err := c.Ping(f.ctx).Err()
			_ = c.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
		}
		return nil
	}
	waitForACLSecret(t, f.c, f.ns, builder.ACLSecretName(f.name), hashHex("second"))
	waitUntil(t, 30*time.Second, "every node takes the new password", func() error { return pingAll("second") })
	time.Sleep(2 * time.Second) // ACL LOAD of the stale file meanwhile must not take it away
	if err := pingAll("second"); err != nil {
		t.Fatalf("the new password stopped working while the files were stale: %v", err)
	}
	f.kubelet.refreshSecretVolumes(f.ctx, f.ns)
	waitUntil(t, 30*time.Second, "the old password is refused", func() error {
		if pingAll("first") == nil {
			return fmt.Errorf("the old password still works")
		}
		return pingAll("second")
	})
	f.waitReady(30 * time.Second)
	if err := as("app", "apw").Get(f.ctx, "app:1").Err(); err != nil {
		t.Fatalf("app after the rotation: %v", err)
	}
	for name, pid := range pids {
		if p := f.kubelet.pod(name); p == nil || p.cmd.Process.Pid != pid {
			t.Errorf("pod %s was restarted", name)
		}
	}
}

func hashHex(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

func waitForACLSecret(t *testing.T, c client.Client, ns, name, contains string) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the operator's ACL Secret has "+contains, func() error {
		var s corev1.Secret
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return err
		}
		if !strings.Contains(string(s.Data["user.acl"]), contains) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
}
