package operator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// Every pod of a sentinel-watched replication deleted at once: the pods come back at new
// addresses from their volumes, while every sentinel still monitors the old master's address
// and knows only the old replicas' addresses, so none of them can ever see the new pods. The
// operator makes the recorded master lead again, points the replicas at it and starts the
// blind sentinels again from the seed, one at a time: the replication and its sentinels are
// Ready again, every sentinel names the master's new address, every key written before is
// there, and the sentinels fail over again when the master's pod is deleted afterwards. Both
// kinds of sentinels: a RedisSentinel's and a replication's own (spec.sentinel).
func TestSentinelWatchedReplicationComesBackAfterEveryPodIsDeleted(t *testing.T) {
	t.Parallel()
	const storage = `
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}`
	for _, tc := range []struct {
		name, manifest string
		// sentinels is the app label of the sentinel pods, group their master group;
		// sentinel the RedisSentinel to wait Ready too ("" for embedded sentinels).
		sentinels, group, sentinel string
	}{
		{name: "RedisSentinel", sentinels: "gone-sn-sentinel", group: "myMaster", sentinel: "gone-sn", manifest: `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: gone
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15` + storage + `
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: gone-sn
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisSentinelConfig:
    redisReplicationName: gone
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
`},
		{name: "embedded", sentinels: "gone-s", group: "mymaster", manifest: `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: gone
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15` + storage + `
  sentinel:
    size: 3
    image: redis:7.0.15
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := sb.Namespace(t, "sentinel-all-gone")
			ctx := context.Background()
			const name = "gone"
			sb.Apply(t, ns, tc.manifest)
			cr := &v1beta2.RedisReplication{}
			watched := sentinelWatched{ns: ns, name: name, sentinel: tc.sentinel, cr: cr, timeout: 6 * time.Minute}
			watched.waitReady(t, "at first", time.Time{})
			master := getPod(t, ns, cr.Status.MasterNode)
			writer := sb.Redis(t, master)
			var keys []string
			for i := range 200 {
				k := "before-" + strconv.Itoa(i)
				if err := writer.Set(ctx, k, i, 0).Err(); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			if n, err := writer.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n < 2 {
				t.Fatalf("WAIT 2: %d replicas, %v", n, err)
			}

			var pods corev1.PodList
			if err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 3 {
				t.Fatalf("%d pods of %s, want 3", len(pods.Items), name)
			}
			oldIPs := map[string]string{}
			deleted := faultTime() // a Ready of the second before the deletion must not count
			for i := range pods.Items {
				p := &pods.Items[i]
				oldIPs[p.Name] = p.Status.PodIP
				if err := sb.Client.Delete(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("deleted every pod of %s (master %s at %s)", name, master.Name, master.Status.PodIP)
			watched.waitReady(t, "after every pod was deleted", deleted)
			t.Logf("Ready again %s after the deletion, master %s", time.Since(deleted).Round(time.Second), cr.Status.MasterNode)

			master = getPod(t, ns, cr.Status.MasterNode)
			if oldIPs[master.Name] == master.Status.PodIP {
				t.Fatalf("the master's pod %s came back at its old address %s: the test needs new ones", master.Name, master.Status.PodIP)
			}
			sentinelsName(t, ns, tc.sentinels, tc.group, master.Status.PodIP)
			reader := sb.Redis(t, master)
			for _, k := range keys {
				if err := reader.Get(ctx, k).Err(); err != nil {
					t.Errorf("key %s written before the deletion is not on the master %s: %v", k, master.Name, err)
				}
			}

			// The sentinels watch again: deleting the master's pod makes them fail over.
			oldMaster := master.Name
			if err := sb.Client.Delete(ctx, master); err != nil {
				t.Fatal(err)
			}
			sb.WaitFor(t, ns, "the sentinels' failover away from "+oldMaster, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
				if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
					return false, "", err
				}
				return cr.Status.MasterNode != "" && cr.Status.MasterNode != oldMaster, "master " + cr.Status.MasterNode, nil
			})
			watched.waitReady(t, "after the failover", time.Time{})
			master = getPod(t, ns, cr.Status.MasterNode)
			sentinelsName(t, ns, tc.sentinels, tc.group, master.Status.PodIP)
			reader = sb.Redis(t, master)
			for _, k := range keys {
				if err := reader.Get(ctx, k).Err(); err != nil {
					t.Errorf("key %s is not on the master %s after the failover: %v", k, master.Name, err)
				}
			}
		})
	}
}

// sentinelsName waits until each of the three sentinel pods labelled app names the master of
// group at ip.
func sentinelsName(t *testing.T, ns, app, group, ip string) {
	t.Helper()
	sb.WaitFor(t, ns, "every sentinel naming the master at "+ip, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods := sentinelPods(t, ns, app)
		if len(pods) != 3 {
			return false, fmt.Sprintf("%d sentinel pods", len(pods)), nil
		}
		var named []string
		for _, p := range pods {
			c := sb.RedisAt(t, p.Status.PodIP, 26379)
			addr, err := c.Do(ctx, "SENTINEL", "get-master-addr-by-name", group).StringSlice()
			_ = c.Close()
			if err != nil || len(addr) != 2 {
				return false, fmt.Sprintf("sentinel %s: %v, %v", p.Name, addr, err), nil
			}
			named = append(named, addr[0])
		}
		return !slices.ContainsFunc(named, func(h string) bool { return h != ip }), fmt.Sprintf("sentinels name %v", named), nil
	})
}
