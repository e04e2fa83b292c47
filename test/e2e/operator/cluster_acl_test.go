package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const aclCluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: {name: users}
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: redis-auth, key: password}
  acl:
    secret: {secretName: users}
`

// A RedisCluster with ACL users from a Secret bootstraps (the operator and the replicas
// authenticate as default with the redisSecret password), a user is held to its key pattern
// across the shards, and an edit adds a user and turns the default user off on every node
// without a restart: the operator goes on as redis-operator, and a deleted leader's shard is
// served again with every key.
func TestClusterACLSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "acl-cluster")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("admin-pass")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: ns}, Data: map[string][]byte{"user.acl": []byte("user app on >app-pass ~app:* +@all\n")}},
	} {
		if err := sb.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	sb.Apply(t, ns, aclCluster)
	c := &cluster{t: t, ctx: ctx, ns: ns, name: "users", password: "admin-pass"}
	c.waitReady(start)
	c.assertShape()
	before := map[string]string{}
	var addrs []string
	for _, p := range c.pods(ctx) {
		before[p.Name] = fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount)
		addrs = append(addrs, p.Status.PodIP+":6379")
	}
	as := func(user, password string) *goredis.ClusterClient {
		cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Username: user, Password: password, MaxRedirects: 8, DialTimeout: 2 * time.Second})
		t.Cleanup(func() { _ = cc.Close() })
		return cc
	}
	for i := 0; i < 100; i++ {
		if err := as("app", "app-pass").Set(ctx, fmt.Sprint("app:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := as("app", "app-pass").Set(ctx, "other", 1, 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("app SET other = %v, want NOPERM", err)
	}

	users := &corev1.Secret{}
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "users"}, users); err != nil {
		t.Fatal(err)
	}
	users.Data["user.acl"] = []byte("user default off\nuser app on >app-pass ~app:* +@all\nuser ops on >ops-pass ~* +get +ping +cluster|slots\n")
	if err := sb.Client.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "ops reads every shard", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, p := range c.pods(ctx) {
			n := goredis.NewClient(&goredis.Options{Addr: p.Status.PodIP + ":6379", Username: "ops", Password: "ops-pass", MaxRetries: -1})
			err := n.Ping(ctx).Err()
			_ = n.Close()
			if err != nil {
				return false, p.Name + ": " + err.Error(), nil
			}
		}
		for i := 0; i < 100; i++ {
			if err := as("ops", "ops-pass").Get(ctx, fmt.Sprint("app:", i)).Err(); err != nil {
				return false, err.Error(), nil
			}
		}
		return true, "", nil
	})
	for _, p := range c.pods(ctx) {
		if fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount) != before[p.Name] {
			t.Errorf("pod %s restarted for the ACL edit", p.Name)
		}
		n := goredis.NewClient(&goredis.Options{Addr: p.Status.PodIP + ":6379", Password: "admin-pass", MaxRetries: -1})
		if err := n.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("pod %s: the default user = %v, want WRONGPASS", p.Name, err)
		}
		_ = n.Close()
	}
	c.username = "redis-operator"
	c.waitReady(start)
	c.assertShape()

	leader := c.pod(c.name + "-leader-0")
	deleted := faultTime()
	if err := sb.Client.Delete(ctx, leader); err != nil {
		t.Fatal(err)
	}
	c.waitReady(deleted)
	c.assertShape()
	appOptions := c.clientOptions() // the pods' addresses now
	appOptions.Username, appOptions.Password = "app", "app-pass"
	app := c.clientWith(appOptions)
	for i := 0; i < 100; i++ {
		if v, err := app.Get(ctx, fmt.Sprint("app:", i)).Int(); err != nil || v != i {
			t.Fatalf("app GET app:%d after the leader's deletion = %d, %v", i, v, err)
		}
	}
}
