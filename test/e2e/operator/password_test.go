package operator

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
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
	t.Parallel()
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

const passwordReplicationWithSentinels = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: watched
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: redis-auth
      key: password
  sentinel:
    size: 3
    image: redis:7.0.15
    quorum: "2"
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
    parallelSyncs: "1"
`

// A replication watched by its embedded sentinels takes a new password in place, sentinels
// included: no pod restarts, the old password is refused, every sentinel keeps seeing the
// master up, and when the master's pod is deleted the sentinels fail over to a replica that
// holds every acknowledged key.
func TestReplicationWithSentinelsPasswordRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "password-sentinel")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("first-pass")}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	sb.Apply(t, ns, passwordReplicationWithSentinels)
	cr := &v1beta2.RedisReplication{}
	waitReady := func(what string, ok func(*v1beta2.RedisReplication) bool) {
		t.Helper()
		sb.WaitFor(t, ns, what, 4*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "watched"}, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.ReadyReplicas == 3 && ok(cr),
				fmt.Sprintf("%s master %q: %v", cr.Status.State, cr.Status.MasterNode, ready), nil
		})
	}
	waitReady("RedisReplication Ready with its sentinels", func(*v1beta2.RedisReplication) bool { return true })
	firstMaster := cr.Status.MasterNode
	master := getPod(t, ns, firstMaster)
	rdb := sb.RedisWithPassword(t, master.Status.PodIP, 6379, "first-pass")
	for i := range 100 {
		if err := rdb.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rdb.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v", n, err)
	}
	podsOf := func(app string) []corev1.Pod {
		var pods corev1.PodList
		if err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	before := map[string]string{}
	for _, app := range []string{"watched", "watched-s"} {
		for _, p := range podsOf(app) {
			before[p.Name] = fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount)
		}
	}
	if len(before) != 6 {
		t.Fatalf("%d pods, want 3 Redis and 3 sentinels", len(before))
	}

	secret.Data["password"] = []byte("second-pass")
	if err := sb.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "every pod requires the new password", time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, p := range podsOf("watched") {
			got, err := sb.RedisWithPassword(t, p.Status.PodIP, 6379, "second-pass").ConfigGet(ctx, "requirepass").Result()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", p.Name, err), nil
			}
			if got["requirepass"] != "second-pass" {
				return false, p.Name + " still requires the old one", nil
			}
		}
		return true, "", nil
	})
	for _, p := range podsOf("watched") {
		if err := sb.RedisWithPassword(t, p.Status.PodIP, 6379, "first-pass").Ping(ctx).Err(); err == nil {
			t.Errorf("%s still takes the old password", p.Name)
		}
	}
	// Sentinels re-authenticate when their links drop: cut them, then every sentinel must see
	// the master up (flags "master" alone) past its down-after period.
	for _, p := range podsOf("watched") {
		for _, typ := range []string{"normal", "pubsub"} {
			if err := sb.RedisWithPassword(t, p.Status.PodIP, 6379, "second-pass").Do(ctx, "client", "kill", "type", typ).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(5 * time.Second)
	for _, p := range podsOf("watched-s") {
		sentinel := sb.RedisAt(t, p.Status.PodIP, 26379)
		sb.WaitFor(t, ns, p.Name+" sees the master up", 30*time.Second, func(ctx context.Context) (bool, string, error) {
			state, err := sentinel.Do(ctx, "sentinel", "master", "mymaster").Result()
			if err != nil {
				return false, err.Error(), nil
			}
			fields := map[string]string{}
			switch r := state.(type) { // RESP3 map or RESP2 field/value array
			case map[any]any:
				for k, v := range r {
					fields[fmt.Sprint(k)] = fmt.Sprint(v)
				}
			case []any:
				for i := 0; i+1 < len(r); i += 2 {
					fields[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
				}
			}
			return fields["flags"] == "master" && fields["ip"] == master.Status.PodIP, fmt.Sprintf("%s flags %q", fields["ip"], fields["flags"]), nil
		})
	}
	for _, app := range []string{"watched", "watched-s"} {
		for _, p := range podsOf(app) {
			if fmt.Sprint(p.UID, p.Status.ContainerStatuses[0].RestartCount) != before[p.Name] {
				t.Errorf("pod %s restarted for the rotation", p.Name)
			}
		}
	}

	// The sentinels still fail over: they authenticate to the replicas they promote.
	if err := sb.Client.Delete(ctx, master); err != nil {
		t.Fatal(err)
	}
	waitReady("the sentinels to promote a replica", func(cr *v1beta2.RedisReplication) bool {
		return cr.Status.MasterNode != "" && cr.Status.MasterNode != firstMaster
	})
	for _, p := range podsOf("watched") {
		c := sb.RedisWithPassword(t, p.Status.PodIP, 6379, "second-pass")
		sb.WaitFor(t, ns, "every key on "+p.Name, time.Minute, func(ctx context.Context) (bool, string, error) {
			for i := range 100 {
				if v, err := c.Get(ctx, "k"+strconv.Itoa(i)).Int(); err != nil || v != i {
					return false, fmt.Sprintf("k%d = %d (%v)", i, v, err), nil
				}
			}
			return true, "", nil
		})
	}
	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Promote" {
			t.Errorf("the operator promoted a replica although sentinels monitor the replication: %s", e.Note)
		}
	}
}
