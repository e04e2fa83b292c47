package operator

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

// Manifests as users wrote them for the origin operator's v1beta1, applied unchanged: the
// first shape (v0.13: Redis and RedisCluster, the pod security context under securityContext,
// probes with timings only, the cluster's nodeSelector at the top) and the last (v0.19: a
// RedisReplication).
const v1beta1Manifests = `
apiVersion: v1
kind: Secret
metadata:
  name: redis-secret
stringData:
  password: Opstree@1234
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: redis-external-config
data:
  redis-additional.conf: |
    tcp-keepalive 400
---
apiVersion: redis.redis.opstreelabs.in/v1beta1
kind: Redis
metadata:
  name: redis-standalone
spec:
  kubernetesConfig:
    image: quay.io/opstree/redis:v6.2.5
    imagePullPolicy: IfNotPresent
    resources:
      requests: {cpu: 101m, memory: 128Mi}
      limits: {cpu: 101m, memory: 128Mi}
    redisSecret:
      name: redis-secret
      key: password
  redisExporter:
    enabled: false
    image: quay.io/opstree/redis-exporter:1.0
  redisConfig:
    additionalRedisConfig: redis-external-config
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
  securityContext:
    runAsUser: 1000
    fsGroup: 1000
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/os
            operator: In
            values: ["linux"]
  readinessProbe:
    initialDelaySeconds: 1
    periodSeconds: 5
  livenessProbe:
    initialDelaySeconds: 1
    periodSeconds: 5
---
apiVersion: redis.redis.opstreelabs.in/v1beta1
kind: RedisCluster
metadata:
  name: redis-cluster
spec:
  clusterSize: 3
  persistenceEnabled: true
  securityContext:
    runAsUser: 1000
    fsGroup: 1000
  nodeSelector:
    kubernetes.io/os: linux
  kubernetesConfig:
    image: quay.io/opstree/redis:v6.2.5
    imagePullPolicy: IfNotPresent
    resources:
      requests: {cpu: 101m, memory: 128Mi}
      limits: {cpu: 101m, memory: 128Mi}
    redisSecret:
      name: redis-secret
      key: password
  redisExporter:
    enabled: false
    image: quay.io/opstree/redis-exporter:1.0
  redisLeader:
    redisConfig:
      additionalRedisConfig: redis-external-config
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            labelSelector:
              matchLabels:
                app: redis-cluster-leader
            topologyKey: kubernetes.io/hostname
    pdb:
      enabled: true
      minAvailable: 1
    readinessProbe:
      initialDelaySeconds: 1
      periodSeconds: 5
    livenessProbe:
      initialDelaySeconds: 1
      periodSeconds: 5
  redisFollower:
    redisConfig:
      additionalRedisConfig: redis-external-config
    pdb:
      enabled: true
      maxUnavailable: 1
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
---
apiVersion: redis.redis.opstreelabs.in/v1beta1
kind: RedisReplication
metadata:
  name: redis-replication
spec:
  clusterSize: 2
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.12
    imagePullPolicy: IfNotPresent
    redisSecret:
      name: redis-secret
      key: password
  securityContext:
    runAsUser: 1000
    fsGroup: 1000
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
`

const (
	operatorNamespace = "redis-operator-system"
	webhookSecret     = "redis-operator-webhook-cert"
)

// The operator, deployed as the README says, serves v1beta1 through its conversion webhook:
// manifests of both v1beta1 shapes apply unchanged, run to Ready and read back in both
// versions; a v1beta2 object reads as v1beta1; listing v1beta1 keeps working after the
// operator restarts and after its certificate is replaced.
func TestV1beta1ManifestsRunToReadyAndReadInBothVersions(t *testing.T) {
	ctx := context.Background()
	ns := sb.Namespace(t, "v1beta1")
	sb.Apply(t, ns, v1beta1Manifests)

	cluster := &cluster{t: t, ctx: ctx, ns: ns, name: "redis-cluster", password: "Opstree@1234"}
	cluster.waitReady(time.Time{})
	cluster.assertShape()
	cluster.writeKeys("v1beta1", 50)
	cluster.readKeys("v1beta1", 50)
	waitStandaloneReady(t, ns, "redis-standalone", 1)
	sb.WaitFor(t, ns, "RedisReplication Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisReplication{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-replication"}, cr); err != nil {
			return false, "", err
		}
		return cr.Status.State == "Ready", cr.Status.State + " " + cr.Status.Reason, nil
	})

	// v1beta2 sees each v1beta1 field in its v1beta2 home.
	clusterV2 := cluster.get()
	for role, r := range map[string]v1beta2.RedisClusterRole{"leader": clusterV2.Spec.RedisLeader.RedisClusterRole, "follower": clusterV2.Spec.RedisFollower.RedisClusterRole} {
		if r.NodeSelector["kubernetes.io/os"] != "linux" {
			t.Errorf("v1beta2 %s nodeSelector = %v, want the v1beta1 top-level one", role, r.NodeSelector)
		}
	}
	if sc := clusterV2.Spec.PodSecurityContext; sc == nil || ptr.Deref(sc.FSGroup, 0) != 1000 || ptr.Deref(sc.RunAsUser, 0) != 1000 {
		t.Errorf("v1beta2 podSecurityContext = %+v, want v1beta1's securityContext", sc)
	}
	var pod corev1.Pod
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-cluster-leader-0"}, &pod); err != nil {
		t.Fatal(err)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, 0) != 1000 || ptr.Deref(sc.FSGroup, 0) != 1000 {
		t.Errorf("leader pod security context = %+v, want runAsUser and fsGroup 1000", sc)
	}

	// v1beta1 reads back what was written, with the status v1beta2 reports.
	var clusterV1 v1beta1.RedisCluster
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-cluster"}, &clusterV1); err != nil {
		t.Fatal(err)
	}
	if clusterV1.Spec.NodeSelector["kubernetes.io/os"] != "linux" || clusterV1.Spec.RedisFollower.NodeSelector != nil ||
		clusterV1.Spec.SecurityContext == nil || !ptr.Deref(clusterV1.Spec.PersistenceEnabled, false) {
		t.Errorf("v1beta1 RedisCluster reads back as %+v", clusterV1.Spec)
	}
	if clusterV1.Status.State != "Ready" || clusterV1.Status.ReadyLeaderReplicas != 3 || clusterV1.Status.ReadyFollowerReplicas != 3 {
		t.Errorf("v1beta1 status = %+v, want Ready with 3 ready leaders and followers", clusterV1.Status)
	}
	var redisV1 v1beta1.Redis
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis-standalone"}, &redisV1); err != nil {
		t.Fatal(err)
	}
	if redisV1.Spec.SecurityContext == nil || redisV1.Spec.LivenessProbe == nil || redisV1.Spec.LivenessProbe.PeriodSeconds != 5 || redisV1.Status.State != "Ready" {
		t.Errorf("v1beta1 Redis reads back as %+v, status %+v", redisV1.Spec, redisV1.Status)
	}

	// An object created as v1beta2 reads as v1beta1.
	sb.Apply(t, ns, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: made-as-v1beta2
spec:
  kubernetesConfig:
    image: redis:7.0.15
  podSecurityContext:
    fsGroup: 2000
  terminationGracePeriodSeconds: 40
`)
	var madeV1 v1beta1.Redis
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "made-as-v1beta2"}, &madeV1); err != nil {
		t.Fatalf("read a v1beta2 Redis as v1beta1: %v", err)
	}
	if sc := madeV1.Spec.SecurityContext; sc == nil || ptr.Deref(sc.FSGroup, 0) != 2000 || madeV1.Spec.KubernetesConfig.Image != "redis:7.0.15" {
		t.Errorf("a v1beta2 Redis reads as v1beta1 %+v", madeV1.Spec)
	}
	if !strings.Contains(madeV1.Annotations[v1beta1.V1beta2FieldsAnnotation], `"terminationGracePeriodSeconds":40`) {
		t.Errorf("v1beta1 annotations %v do not carry the v1beta2-only field", madeV1.Annotations)
	}

	kubectlGetV1beta1(t, ns, "before any restart")

	// The operator restarts: the webhook comes back with the same certificate.
	var pods corev1.PodList
	if err := sb.Client.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "redis-operator"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("operator pod: %v (%d pods)", err, len(pods.Items))
	}
	operatorPod := pods.Items[0].Name
	restarts := func(p *corev1.Pod) int32 {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "manager" {
				return cs.RestartCount
			}
		}
		return 0
	}
	before := restarts(&pods.Items[0])
	if err := sb.Fault.CrashContainer(ctx, operatorNamespace, operatorPod, "manager"); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the operator restarted and ready", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		var p corev1.Pod
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorPod}, &p); err != nil {
			return false, "", err
		}
		return restarts(&p) > before && framework.PodReady(&p), framework.DescribePod(&p), nil
	})
	kubectlGetV1beta1(t, ns, "after the operator restarted")

	// The certificate is replaced (its Secret deleted): a new CA reaches the CRDs.
	var secret corev1.Secret
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: webhookSecret}, &secret); err != nil {
		t.Fatal(err)
	}
	oldCA := secret.Data["ca.crt"]
	if err := sb.Client.Delete(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "a new webhook CA in the Secret and every CRD", time.Minute, func(ctx context.Context) (bool, string, error) {
		var s corev1.Secret
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: webhookSecret}, &s); apierrors.IsNotFound(err) {
			return false, "no Secret yet", nil
		} else if err != nil {
			return false, "", err
		}
		if bytes.Equal(s.Data["ca.crt"], oldCA) {
			return false, "the Secret holds the old CA", nil
		}
		for _, kind := range []string{"redis", "redisclusters", "redisreplications", "redissentinels"} {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := sb.Client.Get(ctx, client.ObjectKey{Name: kind + ".redis.redis.opstreelabs.in"}, &crd); err != nil {
				return false, "", err
			}
			if c := crd.Spec.Conversion; c == nil || c.Webhook == nil || !bytes.Equal(c.Webhook.ClientConfig.CABundle, s.Data["ca.crt"]) {
				return false, "CRD " + crd.Name + " has another CA bundle", nil
			}
		}
		return true, "", nil
	})
	kubectlGetV1beta1(t, ns, "after the certificate was replaced")
}

// kubectlGetV1beta1 runs `kubectl get redisclusters.v1beta1...` until it lists the cluster
// (the webhook may take a moment to come back after a restart).
func kubectlGetV1beta1(t *testing.T, ns, when string) {
	t.Helper()
	sb.WaitFor(t, ns, "kubectl get redisclusters.v1beta1 "+when, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(sb.Bin(), "kubectl"), "--kubeconfig", sb.Inst.Kubeconfig(),
			"get", "redisclusters.v1beta1.redis.redis.opstreelabs.in", "-n", ns, "-o", "yaml")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("kubectl: %v: %s", err, out), nil
		}
		text := string(out)
		if !strings.Contains(text, "apiVersion: redis.redis.opstreelabs.in/v1beta1") || !strings.Contains(text, "name: redis-cluster") ||
			!strings.Contains(text, "persistenceEnabled: true") {
			return false, "kubectl output lacks the v1beta1 cluster:\n" + text, nil
		}
		return true, "", nil
	})
}
