package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

const aclReplication = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: {name: users}
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: redis-auth, key: password}
  acl:
    secret: {secretName: users}
`

// A RedisReplication with ACL users from a Secret, on real pods: it becomes Ready (the
// operator and the replicas authenticate as default with the redisSecret password), a reader
// cannot write (NOPERM), a writer can, and what the writer wrote reaches every replica, where
// the reader reads it.
func TestReplicationACLSecret(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "acl-replication")
	checkReplicationACL(t, ns, "", "default")
}

// The same with a file that turns the default user off: the default user cannot log in, the
// operator and the replicas log in as redis-operator (the README's user), and after the master
// pod is deleted the replication is Ready again on another master that the replicas follow.
func TestReplicationACLSecretDefaultUserOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "acl-default-off")
	master := checkReplicationACL(t, ns, "user default off\n", "redis-operator")
	asDefault := redis.NewClient(&redis.Options{Addr: master.Status.PodIP + ":6379", Password: "admin-pass", MaxRetries: -1})
	defer func() { _ = asDefault.Close() }()
	if err := asDefault.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("the default user with the password = %v, want WRONGPASS", err)
	}
	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	cr := &v1beta2.RedisReplication{}
	sb.WaitFor(t, ns, "Ready on another master", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "users"}, cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.ReadyReplicas == 3 && cr.Status.MasterNode != master.Name,
			fmt.Sprintf("%s master %q: %v", cr.Status.State, cr.Status.MasterNode, ready), nil
	})
	newMaster := getPod(t, ns, cr.Status.MasterNode)
	operator := redis.NewClient(&redis.Options{Addr: newMaster.Status.PodIP + ":6379", Username: "redis-operator", Password: "admin-pass", MaxRetries: -1})
	defer func() { _ = operator.Close() }()
	if err := operator.Set(ctx, "app:after", "failover", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := operator.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the new master = %d, %v: the replicas do not replicate as redis-operator", n, err)
	}
	for i := range 50 {
		if v, err := operator.Get(ctx, fmt.Sprint("app:", i)).Int(); err != nil || v != i {
			t.Fatalf("GET app:%d on the new master = %d, %v", i, v, err)
		}
	}
}

// checkReplicationACL runs the ACL replication sample in ns with the users file extra+reader+
// writer and checks it as described above, the operator's user being adminUser; it returns the
// master pod.
func checkReplicationACL(t *testing.T, ns, extra, adminUser string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("admin-pass")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: ns}, Data: map[string][]byte{"user.acl": []byte(extra +
			"user reader on >reader-pass ~app:* +@read +ping\nuser writer on >writer-pass ~app:* +@read +@write +ping\n")}},
	} {
		if err := sb.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	sb.Apply(t, ns, aclReplication)
	cr := &v1beta2.RedisReplication{}
	sb.WaitFor(t, ns, "RedisReplication Ready", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "users"}, cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.ReadyReplicas == 3 && cr.Status.MasterNode != "",
			fmt.Sprintf("%s master %q: %v", cr.Status.State, cr.Status.MasterNode, ready), nil
	})
	master := getPod(t, ns, cr.Status.MasterNode)
	as := func(p *corev1.Pod, user, password string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: p.Status.PodIP + ":6379", Username: user, Password: password, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for i := range 50 {
		if err := as(master, "writer", "writer-pass").Set(ctx, fmt.Sprint("app:", i), i, 0).Err(); err != nil {
			t.Fatalf("writer SET app:%d: %v", i, err)
		}
	}
	if err := as(master, "writer", "writer-pass").Set(ctx, "other", 1, 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("writer SET other (outside ~app:*) = %v, want NOPERM", err)
	}
	if err := as(master, "reader", "reader-pass").Set(ctx, "app:0", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("reader SET app:0 = %v, want NOPERM", err)
	}
	if err := as(master, "reader", "wrong").Ping(ctx).Err(); err == nil {
		t.Error("the reader logs in with a wrong password")
	}
	if n, err := as(master, adminUser, "admin-pass").Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v: the replicas do not replicate", n, err)
	}
	replicas := 0
	for i := range 3 {
		p := getPod(t, ns, fmt.Sprintf("users-%d", i))
		if p.Name == master.Name {
			continue
		}
		replicas++
		reader := as(p, "reader", "reader-pass")
		for j := range 50 {
			if v, err := reader.Get(ctx, fmt.Sprint("app:", j)).Int(); err != nil || v != j {
				t.Fatalf("reader GET app:%d on replica %s = %d, %v", j, p.Name, v, err)
			}
		}
	}
	if replicas != 2 {
		t.Fatalf("%d replicas checked, want 2", replicas)
	}
	return master
}
