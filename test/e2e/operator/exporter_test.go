package operator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

const exporterRotationManifests = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: watched
spec:
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: watched-auth
      key: password
  redisExporter:
    enabled: true
    image: quay.io/opstree/redis-exporter:v1.44.0
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: watched-repl
spec:
  clusterSize: 2
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret:
      name: watched-auth
      key: password
  redisExporter:
    enabled: true
    image: quay.io/opstree/redis-exporter:v1.44.0
`

// scrape returns the body of an exporter's or the operator's /metrics.
func scrape(ctx context.Context, ip string, port int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, fmt.Sprint(port))+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// redisUp is the exporter's redis_up line of a scrape.
func redisUp(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "redis_up ") {
			return line
		}
	}
	return "no redis_up"
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

// After a password rotation in place, the exporter sidecar of every pod, a standalone Redis's
// and a replication's, scrapes Redis again (redis_up 1): the operator restarted the exporter
// container alone, the Redis containers and the pods stayed.
func TestExporterScrapesAfterPasswordRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "exporter-password")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "watched-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("before-pass")}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	sb.Apply(t, ns, exporterRotationManifests)
	waitStandaloneReady(t, ns, "watched", 1)
	sb.WaitFor(t, ns, "RedisReplication watched-repl Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisReplication{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "watched-repl"}, cr); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c), nil
	})
	pods := func(ctx context.Context) []corev1.Pod {
		var list corev1.PodList
		if err := sb.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	before := map[string]corev1.Pod{}
	for _, p := range pods(ctx) {
		before[p.Name] = p
	}
	if len(before) != 3 {
		t.Fatalf("%d pods, want 3", len(before))
	}
	exportersUp := func(what string, restarted bool) {
		sb.WaitFor(t, ns, what, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
			for _, p := range pods(ctx) {
				if restarted && containerStatus(&p, "redis-exporter").RestartCount <= containerStatus(refTo(before[p.Name]), "redis-exporter").RestartCount {
					return false, "the exporter of " + p.Name + " not restarted yet", nil
				}
				body, err := scrape(ctx, p.Status.PodIP, 9121)
				if err != nil {
					return false, p.Name + ": " + err.Error(), nil
				}
				if up := redisUp(body); up != "redis_up 1" {
					return false, p.Name + ": " + up, nil
				}
			}
			return true, "", nil
		})
	}
	exportersUp("redis_up 1 from every exporter", false)

	secret.Data["password"] = []byte("after-pass")
	if err := sb.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	exportersUp("redis_up 1 from every restarted exporter after the rotation", true)
	for _, p := range pods(ctx) {
		old := before[p.Name]
		server := p.Spec.Containers[0].Name
		if p.UID != old.UID || containerStatus(&p, server).RestartCount != containerStatus(&old, server).RestartCount {
			t.Errorf("pod %s or its Redis container was restarted for the rotation", p.Name)
		}
		got, err := sb.RedisWithPassword(t, p.Status.PodIP, 6379, "after-pass").ConfigGet(ctx, "requirepass").Result()
		if err != nil || got["requirepass"] != "after-pass" {
			t.Errorf("pod %s requires %v (%v), want the new password", p.Name, got, err)
		}
	}
}

func refTo[T any](v T) *T { return &v }

// The exporter sidecar of a TLS Redis scrapes with a certificate made for the operator we
// replace (one that does not name localhost, the name the exporter dials); a user who turns the
// name check on gets it: such a certificate is refused (redis_up 0), and a renewal that names
// localhost is scraped (redis_up 1) without a restart.
func TestExporterVerifiesTLS(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "exporter-tls")
	ca := redistest.NewCA(t, "redis-ca")
	tlsSecret(t, ns, ca.CertPEM, ca.Issue(t, "tls-exported"))
	manifest := `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: tls-exported
spec:
  kubernetesConfig:
    image: redis:7.0.15
  TLS:
    secret:
      secretName: redis-tls
  redisExporter:
    enabled: true
    image: quay.io/opstree/redis-exporter:v1.44.0
`
	sb.Apply(t, ns, manifest)
	waitStandaloneReady(t, ns, "tls-exported", 1)
	exporterSays := func(pod *corev1.Pod, want string) {
		t.Helper()
		sb.WaitFor(t, ns, "the exporter reporting "+want, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			body, err := scrape(ctx, pod.Status.PodIP, 9121)
			if err != nil {
				return false, err.Error(), nil
			}
			up := redisUp(body)
			return up == want, up, nil
		})
	}
	exporterSays(getPod(t, ns, "tls-exported-0"), "redis_up 1")

	// The user turns the check on: the pod is replaced, and its exporter refuses the name.
	first := getPod(t, ns, "tls-exported-0")
	sb.Apply(t, ns, manifest+`    env:
    - name: REDIS_EXPORTER_SKIP_TLS_VERIFICATION
      value: "false"
`)
	var pod *corev1.Pod
	sb.WaitFor(t, ns, "the pod replaced with the exporter's check on", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tls-exported-0"}, p); err != nil {
			return false, err.Error(), nil
		}
		ready := p.UID != first.UID && p.Status.PodIP != "" && containerStatus(p, "redis-exporter").Ready
		pod = p
		return ready, string(p.Status.Phase), nil
	})
	exporterSays(pod, "redis_up 0")

	tlsSecret(t, ns, ca.CertPEM, ca.Issue(t, "tls-exported", "localhost"))
	exporterSays(pod, "redis_up 1")
	now := getPod(t, ns, pod.Name)
	if now.UID != pod.UID || containerStatus(now, "redis-exporter").RestartCount != containerStatus(pod, "redis-exporter").RestartCount {
		t.Errorf("the pod or its exporter was restarted for the renewal")
	}
}
