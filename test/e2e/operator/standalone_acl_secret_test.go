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

const aclStandalone = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: guarded}
spec:
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: redis-auth, key: password}
  acl:
    secret: {secretName: users}
`

// A standalone Redis with ACL users from a Secret, on real pods: a user is held to its key
// pattern; an edit adds a user that works once the kubelet refreshed the volume, without the
// pod restarting; a malformed edit is Degraded/InvalidACL naming the line while the users
// keep working.
func TestStandaloneACLSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "acl-secret")
	for name, data := range map[string]string{"redis-auth": "admin-pass", "users": "user reader on >reader-pass ~app:* +get\n"} {
		key := "password"
		if name == "users" {
			key = "user.acl"
		}
		if err := sb.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data: map[string][]byte{key: []byte(data)}}); err != nil {
			t.Fatal(err)
		}
	}
	sb.Apply(t, ns, aclStandalone)
	waitStandaloneReady(t, ns, "guarded", 1)
	pod := getPod(t, ns, "guarded-0")
	before := fmt.Sprint(pod.UID, pod.Status.ContainerStatuses[0].RestartCount)
	admin := sb.RedisWithPassword(t, pod.Status.PodIP, 6379, "admin-pass")
	if err := admin.Set(ctx, "app:1", "one", 0).Err(); err != nil {
		t.Fatal(err)
	}
	as := func(user, password string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: pod.Status.PodIP + ":6379", Username: user, Password: password, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if v, err := as("reader", "reader-pass").Get(ctx, "app:1").Result(); err != nil || v != "one" {
		t.Fatalf("reader GET app:1 = %q, %v", v, err)
	}
	if err := as("reader", "reader-pass").Set(ctx, "app:1", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("reader SET = %v, want NOPERM", err)
	}

	users := &corev1.Secret{}
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "users"}, users); err != nil {
		t.Fatal(err)
	}
	users.Data["user.acl"] = []byte("user reader on >reader-pass ~app:* +get\nuser writer on >writer-pass ~app:* +get +set\n")
	if err := sb.Client.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the writer added by the edit writes", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		err := as("writer", "writer-pass").Set(ctx, "app:2", "two", 0).Err()
		return err == nil, fmt.Sprint(err), nil
	})
	pod = getPod(t, ns, "guarded-0")
	if fmt.Sprint(pod.UID, pod.Status.ContainerStatuses[0].RestartCount) != before {
		t.Error("the pod restarted for the ACL edit")
	}

	users.Data["user.acl"] = []byte("user reader on >reader-pass ~app:* +get\nuser writer on >writer-pass ~app:* +get +sett\n")
	if err := sb.Client.Update(ctx, users); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "Degraded/InvalidACL naming line 2", time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.Redis{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guarded"}, cr); err != nil {
			return false, "", err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && d.Reason == "InvalidACL" && strings.Contains(d.Message, "line 2"), fmt.Sprintf("%+v", d), nil
	})
	// The refused edit must never reach the pod: after the kubelets' refresh period, its
	// aclfile is still the last good one the operator rendered.
	time.Sleep(2*sb.VolumeRefresh() + time.Second)
	rendered := &corev1.Secret{}
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guarded-acl"}, rendered); err != nil {
		t.Fatal(err)
	}
	if got, _, err := sb.Exec(ctx, ns, "guarded-0", pod.Spec.Containers[0].Name, "cat", "/etc/redis/user.acl"); err != nil || got != string(rendered.Data["user.acl"]) {
		t.Errorf("the pod's aclfile = %q (%v), want the operator's last good render %q", got, err, rendered.Data["user.acl"])
	} else if strings.Contains(got, "+sett") {
		t.Errorf("the refused edit reached the pod's aclfile: %q", got)
	}
	if err := as("writer", "writer-pass").Set(ctx, "app:3", "three", 0).Err(); err != nil {
		t.Errorf("the writer lost its rights after the refused edit: %v", err)
	}
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Errorf("the default user lost its password: %v", err)
	}
	pod = getPod(t, ns, "guarded-0")
	if fmt.Sprint(pod.UID, pod.Status.ContainerStatuses[0].RestartCount) != before {
		t.Error("the pod restarted after the refused edit")
	}
}
