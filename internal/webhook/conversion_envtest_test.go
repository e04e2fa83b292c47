//go:build integration

package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/webhook"
)

const (
	namespace  = "default"
	secretName = "webhook-cert"
)

// env is an API server with our CRDs and the operator's conversion webhook running in this
// test process, reached at a URL on loopback.
type env struct {
	client client.Client
	hook   *webhook.Webhook
}

func start(t *testing.T, validity time.Duration) *env {
	t.Helper()
	cfg := startAPIServer(t)
	hook := startReplica(t, cfg, validity, false)
	c, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{client: c, hook: hook}
	e.waitInjected(t, nil)
	return e
}

func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin")
	}
	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := testEnv.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})
	return cfg
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1beta1.AddToScheme, v1beta2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// startReplica runs one replica of the operator's webhook (with leader election when
// leaderElect) on a free loopback port, until the test ends.
func startReplica(t *testing.T, cfg *rest.Config, validity time.Duration, leaderElect bool) *webhook.Webhook {
	t.Helper()
	port := freePort(t)
	hook, err := webhook.New(cfg, webhook.Options{Port: port, CertOptions: webhook.CertOptions{
		Namespace:      namespace,
		URL:            fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.ConvertPath),
		SecretName:     secretName,
		Validity:       validity,
		ResyncInterval: 2 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: newScheme(t), Metrics: metricsserver.Options{BindAddress: "0"}, WebhookServer: hook.Server(),
		LeaderElection: leaderElect, LeaderElectionID: "webhook-test", LeaderElectionNamespace: namespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hook.AddTo(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return hook
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// waitInjected waits until every CRD converts through the webhook with the CA bundle of the
// Secret, other than notBundle.
func (e *env) waitInjected(t *testing.T, notBundle []byte) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var secret corev1.Secret
		if last = e.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: secretName}, &secret); last != nil {
			continue
		}
		bundle := secret.Data["ca.crt"]
		if string(bundle) == string(notBundle) {
			last = errors.New("the Secret still holds the old CA bundle")
			continue
		}
		last = nil
		for _, name := range webhook.CRDNames {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := e.client.Get(context.Background(), client.ObjectKey{Name: name}, &crd); err != nil {
				last = err
				break
			}
			conv := crd.Spec.Conversion
			if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil ||
				string(conv.Webhook.ClientConfig.CABundle) != string(bundle) {
				last = fmt.Errorf("CRD %s does not convert through the webhook with the Secret's CA yet", name)
				break
			}
		}
		if last == nil && e.hook.Certs().Ready() == nil {
			return
		}
	}
	t.Fatalf("the conversion webhook was not set up: %v", last)
}

func applyFile(t *testing.T, c client.Client, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(namespace)
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s as written (v1beta1): %v", path, err)
	}
}

func get(t *testing.T, c client.Client, name string, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatalf("get %T %s: %v", obj, name, err)
	}
}

func TestV1beta1ManifestsOfTheFirstShapeReadBackInBothVersions(t *testing.T) {
	// Each test runs a kube-apiserver and webhook of its own: they wait in parallel.
	t.Parallel()
	e := start(t, 365*24*time.Hour)

	applyFile(t, e.client, "testdata/v1beta1-redis.yaml")
	var redisV2 v1beta2.Redis
	get(t, e.client, "redis-standalone", &redisV2)
	if sc := redisV2.Spec.PodSecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, 0) != 1000 || ptr.Deref(sc.FSGroup, 0) != 1000 {
		t.Errorf("v1beta2 podSecurityContext = %+v, want runAsUser and fsGroup 1000 from v1beta1 securityContext", sc)
	}
	if redisV2.Spec.SecurityContext != nil {
		t.Errorf("v1beta2 (container) securityContext = %+v, want none", redisV2.Spec.SecurityContext)
	}
	if s := redisV2.Spec.KubernetesConfig.ExistingPasswordSecret; s == nil || ptr.Deref(s.Name, "") != "redis-secret" {
		t.Errorf("redisSecret = %+v", s)
	}
	if redisV2.Spec.Storage == nil || redisV2.Spec.Affinity == nil || redisV2.Spec.LivenessProbe == nil || redisV2.Spec.LivenessProbe.PeriodSeconds != 10 ||
		redisV2.Spec.RedisConfig == nil || ptr.Deref(redisV2.Spec.RedisConfig.AdditionalRedisConfig, "") != "redis-external-config" {
		t.Errorf("storage, affinity, probes or additional config lost in v1beta2: %+v", redisV2.Spec)
	}
	var redisV1 v1beta1.Redis
	get(t, e.client, "redis-standalone", &redisV1)
	if sc := redisV1.Spec.SecurityContext; sc == nil || ptr.Deref(sc.FSGroup, 0) != 1000 {
		t.Errorf("v1beta1 securityContext = %+v, want it back", sc)
	}
	if len(redisV1.Annotations) != 0 {
		t.Errorf("v1beta1 read back with annotations %v; it had none", redisV1.Annotations)
	}

	applyFile(t, e.client, "testdata/v1beta1-rediscluster.yaml")
	var clusterV2 v1beta2.RedisCluster
	get(t, e.client, "redis-cluster", &clusterV2)
	for role, sel := range map[string]map[string]string{"leader": clusterV2.Spec.RedisLeader.NodeSelector, "follower": clusterV2.Spec.RedisFollower.NodeSelector} {
		if sel["kubernetes.io/os"] != "linux" {
			t.Errorf("v1beta2 %s nodeSelector = %v, want the top-level v1beta1 one", role, sel)
		}
	}
	if !ptr.Deref(clusterV2.Spec.PersistenceEnabled, false) || clusterV2.Spec.RedisLeader.PodDisruptionBudget == nil ||
		!clusterV2.Spec.RedisLeader.PodDisruptionBudget.Enabled || clusterV2.Spec.PodSecurityContext == nil {
		t.Errorf("persistenceEnabled, pdb or the pod security context lost in v1beta2: %+v", clusterV2.Spec)
	}
	if ptr.Deref(clusterV2.Spec.Port, 0) != 6379 {
		t.Errorf("v1beta2 port = %v, want the v1beta2 default 6379", clusterV2.Spec.Port)
	}
	var clusterV1 v1beta1.RedisCluster
	get(t, e.client, "redis-cluster", &clusterV1)
	if clusterV1.Spec.NodeSelector["kubernetes.io/os"] != "linux" || clusterV1.Spec.RedisFollower.NodeSelector != nil {
		t.Errorf("v1beta1 placement reads back as top-level %v, follower %v; want it where it was written", clusterV1.Spec.NodeSelector, clusterV1.Spec.RedisFollower.NodeSelector)
	}
	if _, ok := clusterV1.Annotations[v1beta1.V1beta1FieldsAnnotation]; ok {
		t.Error("the v1beta1 object shows the annotation that carries its placement in v1beta2")
	}

	// Status written in v1beta2 reads the same in v1beta1.
	clusterV2.Status.State, clusterV2.Status.Reason, clusterV2.Status.ReadyLeaderReplicas = "Ready", "RedisCluster is ready", 3
	if err := e.client.Status().Update(context.Background(), &clusterV2); err != nil {
		t.Fatal(err)
	}
	get(t, e.client, "redis-cluster", &clusterV1)
	if s := clusterV1.Status; s.State != "Ready" || s.Reason != "RedisCluster is ready" || s.ReadyLeaderReplicas != 3 {
		t.Errorf("v1beta1 status = %+v, want what v1beta2 says", s)
	}

	// A v1beta2 object with fields v1beta1 lacks reads as v1beta1, and an update through
	// v1beta1 keeps those fields.
	created := &v1beta2.Redis{}
	created.Name, created.Namespace = "made-as-v1beta2", namespace
	created.Spec.KubernetesConfig.Image = "redis:7"
	created.Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	created.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	if err := e.client.Create(context.Background(), created); err != nil {
		t.Fatal(err)
	}
	var old v1beta1.Redis
	get(t, e.client, "made-as-v1beta2", &old)
	if old.Spec.KubernetesConfig.Image != "redis:7" {
		t.Errorf("v1beta1 image = %q", old.Spec.KubernetesConfig.Image)
	}
	old.Spec.PriorityClassName = "high"
	if err := e.client.Update(context.Background(), &old); err != nil {
		t.Fatalf("update through v1beta1: %v", err)
	}
	var after v1beta2.Redis
	get(t, e.client, "made-as-v1beta2", &after)
	if after.Spec.PriorityClassName != "high" || ptr.Deref(after.Spec.TerminationGracePeriodSeconds, 0) != 45 ||
		after.Spec.SecurityContext == nil || !ptr.Deref(after.Spec.SecurityContext.ReadOnlyRootFilesystem, false) {
		t.Errorf("after an update through v1beta1: %+v; want the v1beta2-only fields kept and the change made", after.Spec)
	}
	if len(after.Annotations) != 0 {
		t.Errorf("the stored object kept conversion annotations: %v", after.Annotations)
	}
}

func TestTheWebhookKeepsConvertingAcrossCertificateRenewals(t *testing.T) {
	t.Parallel()
	// Serving certificates valid 30 s renew after 20 s: the test sees a renewal go by, with
	// room for a loaded machine between the start and the first request.
	e := start(t, 30*time.Second)
	applyFile(t, e.client, "testdata/v1beta1-rediscluster.yaml")
	first := servingSerial(t, e)
	deadline := time.Now().Add(90 * time.Second)
	for servingSerial(t, e) == first {
		if time.Now().After(deadline) {
			t.Fatal("the serving certificate was not renewed within 90 s of a 30 s validity")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var cluster v1beta1.RedisCluster
	get(t, e.client, "redis-cluster", &cluster)

	// Deleting the Secret forces a new CA; the CRDs get its bundle and conversion goes on.
	var secret corev1.Secret
	get(t, e.client, secretName, &secret)
	oldBundle := secret.Data["ca.crt"]
	if err := e.client.Delete(context.Background(), &secret); err != nil {
		t.Fatal(err)
	}
	e.waitInjected(t, oldBundle)
	var list v1beta1.RedisClusterList
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := e.client.List(context.Background(), &list, client.InNamespace(namespace))
		if err == nil && len(list.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list v1beta1 RedisClusters after the CA was replaced: %v (%d items)", err, len(list.Items))
		}
	}
}

// servingSerial is the serial number of the serving certificate in the Secret.
func servingSerial(t *testing.T, e *env) string {
	t.Helper()
	var secret corev1.Secret
	get(t, e.client, secretName, &secret)
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("no serving certificate in the Secret")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

// With leader election, a replica that is not the leader serves the leader's certificate from
// the Secret and converts, and writes nothing.
func TestAReplicaThatIsNotLeaderServesTheSharedCertificate(t *testing.T) {
	t.Parallel()
	cfg := startAPIServer(t)
	leader := startReplica(t, cfg, time.Hour, true)
	c, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{client: c, hook: leader}
	e.waitInjected(t, nil)
	var secret corev1.Secret
	get(t, c, secretName, &secret)

	follower := startReplica(t, cfg, time.Hour, true)
	deadline := time.Now().Add(90 * time.Second)
	for follower.Certs().Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the second replica loaded no certificate: %v", follower.Certs().Ready())
		}
		time.Sleep(100 * time.Millisecond)
	}
	served, err := follower.Certs().GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil || string(served.Certificate[0]) != string(block.Bytes) {
		t.Fatal("the second replica serves another certificate than the Secret's")
	}

	// It converts, over TLS trusted through the Secret's CA, like the leader.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data["ca.crt"])
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"redis.redis.opstreelabs.in/v1beta1",
		"objects":[{"apiVersion":"redis.redis.opstreelabs.in/v1beta2","kind":"RedisCluster","metadata":{"name":"c","namespace":"default"},
		"spec":{"clusterSize":3,"kubernetesConfig":{"image":"redis:7"},"podSecurityContext":{"fsGroup":1000},"port":6380}}]}}`
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var req *http.Request
		if req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, follower.URL(), strings.NewReader(review)); err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err = httpClient.Do(req)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("convert through the second replica: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out apiextensionsv1.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.Result.Status != "Success" || len(out.Response.ConvertedObjects) != 1 {
		t.Fatalf("conversion response %+v", out.Response)
	}
	var converted v1beta1.RedisCluster
	if err := json.Unmarshal(out.Response.ConvertedObjects[0].Raw, &converted); err != nil {
		t.Fatal(err)
	}
	if sc := converted.Spec.SecurityContext; sc == nil || ptr.Deref(sc.FSGroup, 0) != 1000 ||
		!strings.Contains(converted.Annotations[v1beta1.V1beta2FieldsAnnotation], `"port":6380`) {
		t.Errorf("converted by the second replica: %+v, annotations %v", converted.Spec, converted.Annotations)
	}

	// The CRDs still call the leader, and the Secret is the leader's.
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: webhook.CRDNames[1]}, &crd); err != nil {
		t.Fatal(err)
	}
	if url := ptr.Deref(crd.Spec.Conversion.Webhook.ClientConfig.URL, ""); url != leader.URL() {
		t.Errorf("the CRD calls %s, want the leader's %s", url, leader.URL())
	}
	var after corev1.Secret
	get(t, c, secretName, &after)
	if after.ResourceVersion != secret.ResourceVersion {
		t.Error("the Secret was written again after the second replica started")
	}
}
