package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// The images the replaced operator's users run (shared/reference/images.md), in the shape of
// their manifests: the opstree Redis image (whose entrypoint ignores container args), its
// sentinel image (no redis-server), its exporter (no shell), and bitnami/redis. Each kind runs
// Ready with our configuration in force, serves keys and survives a failover.

const opstreeExporter = `
  redisExporter:
    enabled: true
    image: quay.io/opstree/redis-exporter:v1.44.0`

// exporterUp waits until the exporter of pod answers redis_up 1: it reached its Redis.
func exporterUp(t *testing.T, ns string, pod *corev1.Pod) {
	t.Helper()
	sb.WaitFor(t, ns, "the exporter of "+pod.Name+" to scrape its Redis", time.Minute, func(ctx context.Context) (bool, string, error) {
		body, err := scrape(ctx, pod.Status.PodIP, 9121)
		return err == nil && redisUp(body) == "redis_up 1", redisUp(body), nil
	})
}

// clusterWithImage runs a 3×(1+1) cluster of image: Ready, every node announcing its own pod
// address (our --cluster-announce-ip, which an args-only container would lose), keys kept
// through a leader pod's deletion.
func clusterWithImage(t *testing.T, image, extra string) *cluster {
	t.Helper()
	start := time.Now()
	c := newCluster(t, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: images
spec:
  clusterSize: 3
  kubernetesConfig:
    image: `+image+`
    imagePullPolicy: IfNotPresent
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}`+extra+`
`)
	c.waitReady(start)
	c.assertShape()
	for _, p := range c.pods(c.ctx) {
		got, err := c.redis(&p).ConfigGet(c.ctx, "cluster-announce-ip").Result()
		if err != nil || got["cluster-announce-ip"] != p.Status.PodIP {
			t.Errorf("%s announces %v (%v), want its pod address %s: the operator's arguments did not reach Redis", p.Name, got, err, p.Status.PodIP)
		}
	}
	c.writeKeys("img", 300)

	leader := c.pod(c.name + "-leader-0")
	fault := faultTime()
	if err := sb.Client.Delete(c.ctx, leader); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, c.ns, "leader-0 back", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: leader.Name}, p); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return p.UID != leader.UID && framework.PodReady(p), p.Status.PodIP, nil
	})
	c.waitReady(fault)
	c.readKeys("img", 300)
	return c
}

func TestOpstreeImagesRunACluster(t *testing.T) {
	t.Parallel()
	// The security context of the replaced operator's charts: uid 1000, fsGroup 1000.
	c := clusterWithImage(t, "quay.io/opstree/redis:v7.0.15", `
  podSecurityContext:
    runAsUser: 1000
    fsGroup: 1000`+opstreeExporter)
	exporterUp(t, c.ns, c.pod(c.name+"-leader-1"))
}

func TestBitnamiImageRunsACluster(t *testing.T) {
	t.Parallel()
	clusterWithImage(t, "bitnami/redis:7.2.5", "")
}

// replicationWithSentinels runs a RedisReplication of redisImage (with extra spec lines)
// watched by a RedisSentinel of sentinelImage through a master pod's deletion: the sentinels
// fail it over and name the new master, which it returns.
func replicationWithSentinels(t *testing.T, nsPrefix, redisImage, extra, sentinelImage string) *corev1.Pod {
	t.Helper()
	ns := sb.Namespace(t, nsPrefix)
	sb.Apply(t, ns, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: redis-replication
spec:
  clusterSize: 3
  kubernetesConfig:
    image: `+redisImage+`
    imagePullPolicy: IfNotPresent`+extra+`
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: redis-sentinel
spec:
  clusterSize: 3
  kubernetesConfig:
    image: `+sentinelImage+`
    imagePullPolicy: IfNotPresent
  redisSentinelConfig:
    redisReplicationName: redis-replication
`)
	master := replicationFailsOver(t, ns)
	sentinelsName(t, ns, "redis-sentinel-sentinel", "myMaster", master.Status.PodIP)
	return master
}

// A replication of the opstree Redis image watched by sentinels of the opstree sentinel image:
// the sentinels monitor the real master (the image's own file would watch 0.0.0.0) and fail it
// over when its pod is deleted.
func TestOpstreeImagesRunReplicationWithSentinels(t *testing.T) {
	t.Parallel()
	master := replicationWithSentinels(t, "opstree-sentinel", "quay.io/opstree/redis:v7.0.15", opstreeExporter, "quay.io/opstree/redis-sentinel:v7.0.15")
	exporterUp(t, master.Namespace, master)
	var events corev1.EventList
	if err := sb.Client.List(context.Background(), &events, client.InNamespace(master.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Failed" && strings.Contains(e.Message, "not found") {
			t.Errorf("a container could not start: %s", e.Message)
		}
	}
}

// A standalone Redis of the opstree image with its exporter: our redis.conf runs (the
// password it renders is the one clients need), the exporter scrapes it.
func TestOpstreeImagesRunAStandaloneRedis(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "opstree-standalone")
	sb.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: standalone-auth
stringData:
  password: opstree-pw
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: standalone
spec:
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
    imagePullPolicy: IfNotPresent
    redisSecret:
      name: standalone-auth
      key: password`+opstreeExporter+`
  redisConfig:
    additionalRedisConfig: standalone-extra
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: standalone-extra
data:
  redis-additional.conf: |
    maxmemory-policy allkeys-lru
`)
	waitStandaloneReady(t, ns, "standalone", 1)
	pod := getPod(t, ns, "standalone-0")
	rdb := sb.RedisWithPassword(t, pod.Status.PodIP, 6379, "opstree-pw")
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k = %q, %v", got, err)
	}
	if got, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result(); err != nil || got["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("maxmemory-policy %v (%v): the additional configuration is not in force", got, err)
	}
	exporterUp(t, ns, pod)
}
