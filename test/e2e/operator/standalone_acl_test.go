package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const limitedStandalone = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: acl-claim}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Mi}}
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: limited}
spec:
  kubernetesConfig:
    image: redis:7.0.15
    resources:
      requests: {memory: 64Mi}
      limits: {memory: 256Mi}
  redisConfig:
    maxMemoryPercentOfLimit: 50
  acl:
    persistentVolumeClaim: acl-claim
`

// A standalone Redis with maxMemoryPercentOfLimit and its ACL file on a claim, as users of the
// reference run it: maxmemory is half the memory limit, the container says so in
// REDIS_MAX_MEMORY, the new claim gets an empty /data/redis/user.acl so Redis starts, and a
// user created with ACL SETUSER and written by ACL SAVE is there again after the pod is
// replaced.
func TestStandaloneMaxMemoryAndACLClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "acl-claim")
	sb.Apply(t, ns, limitedStandalone)
	pod := sb.WaitPodReady(t, ns, "limited-0", 3*time.Minute)
	const half = 128 * 1024 * 1024

	var env string
	for _, c := range pod.Spec.Containers {
		if c.Name == "limited" {
			for _, e := range c.Env {
				if e.Name == "REDIS_MAX_MEMORY" {
					env = e.Value
				}
			}
		}
	}
	if env == "" {
		t.Error("the Redis container has no REDIS_MAX_MEMORY")
	}
	rdb := sb.Redis(t, pod)
	if got, err := rdb.ConfigGet(ctx, "maxmemory").Result(); err != nil || got["maxmemory"] != fmt.Sprint(half) {
		t.Errorf("maxmemory = %v (%v), want %d (50%% of 256Mi); REDIS_MAX_MEMORY=%s", got, err, half, env)
	}
	if got, err := rdb.ConfigGet(ctx, "aclfile").Result(); err != nil || got["aclfile"] != "/data/redis/user.acl" {
		t.Errorf("aclfile = %v (%v)", got, err)
	}
	if err := rdb.Do(ctx, "ACL", "SETUSER", "alice", "on", ">alice-secret", "~app:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatalf("ACL SAVE onto the claim: %v", err)
	}

	if err := sb.Client.Delete(ctx, &corev1.Pod{ObjectMeta: pod.ObjectMeta}); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "limited-0 replaced", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "limited-0"}, p); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		return p.UID != pod.UID && ready, string(p.Status.Phase), nil
	})
	again := sb.Redis(t, getPod(t, ns, "limited-0"))
	users, err := again.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil || !strings.Contains(strings.Join(users, "\n"), "user alice on") {
		t.Errorf("ACL LIST after the pod was replaced = %v (%v): alice was not kept on the claim", users, err)
	}
	alice := sb.RedisWithPassword(t, getPod(t, ns, "limited-0").Status.PodIP, 6379, "")
	if err := alice.Do(ctx, "AUTH", "alice", "alice-secret").Err(); err != nil {
		t.Errorf("alice cannot authenticate after the pod was replaced: %v", err)
	}
}
