package switching

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
)

const (
	// ourNamespace is where docs/switching.md installs our operator.
	ourNamespace = "redis-operator"
	// theirNamespace is where the other operator's chart ran (its documented namespace):
	// what it leaves behind there is cleaned up by the runbook.
	theirNamespace = "ot-operators"
	// theirWebhook and theirCertSecret are the names its chart and kustomize install give
	// its pod-mutating webhook and the certificate Secret cert-manager wrote for it.
	theirWebhook    = "mutating-webhook-configuration"
	theirCertSecret = "webhook-server-cert"
	// The label of the namespaces its webhook mutates pods in.
	theirWebhookLabel = "ot-mutate-pod-webhook-injection"
	certManagerInject = "cert-manager.io/inject-ca-from"
)

var crdNames = []string{
	"redis.redis.redis.opstreelabs.in", "redisclusters.redis.redis.opstreelabs.in",
	"redisreplications.redis.redis.opstreelabs.in", "redissentinels.redis.redis.opstreelabs.in",
}

// usersManifests are a Redis, a RedisReplication with its own sentinel and a RedisCluster as
// the other operator's users write them: its images, volumes, no quorum given (its CRD stores
// "2", more than the one sentinel there is).
const usersManifests = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: cache}
spec:
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
    imagePullPolicy: IfNotPresent
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: {name: orders}
spec:
  clusterSize: 2
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
    imagePullPolicy: IfNotPresent
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
  sentinel:
    size: 1
    image: quay.io/opstree/redis-sentinel:v7.0.15
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: {name: shop}
spec:
  clusterSize: 3
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
    imagePullPolicy: IfNotPresent
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
`

// The switch of docs/switching.md, on resources stored under the other operator's CRDs: our
// CRDs applied over theirs, what their install leaves behind removed, our chart installed;
// every resource is the same object, Ready, with the defaults its CRD stored. Then the two
// moves that must touch no Redis pod: our operator uninstalled and installed again (as after a
// switch, an operator taking over pods that run), and an upgrade of ours, CRDs first, to
// plain-HTTP metrics. Keys written once are read back after each.
//
// No other operator runs here (the sandbox runs our binary for any operator image), so the
// pods are first made by ours: what the test shows of their operator is its CRDs, the objects
// its users stored under them, and the objects its uninstall leaves (its webhook, its
// certificate Secret, the CA-injection annotation), not its StatefulSets.
func TestSwitchFromTheOtherOperator(t *testing.T) {
	// Their CRDs as Helm creates them from their chart's crds/ (manager "helm"), with the
	// CA-injection annotation of their kustomize install with webhooks.
	kubectl(t, "", "create", "--field-manager=helm", "-f", filepath.Join(sb.Repo(), "test", "compat", "testdata", "reference"))
	waitEstablished(t)
	kubectl(t, "", append([]string{"annotate", "crd"}, append(crdNames, certManagerInject+"="+theirNamespace+"/serving-cert")...)...)

	ns := sb.Namespace(t, "switch")
	kubectl(t, usersManifests, "apply", "-n", ns, "-f", "-")
	uids := resourceUIDs(t, ns)
	if q := storedQuorum(t, ns); q != "2" {
		t.Fatalf("their CRD stored sentinel.quorum %q, want its default \"2\"", q)
	}

	leaveTheirLeftovers(t, ns)

	// docs/switching.md, "Replace their operator" (their release is gone: nothing runs it).
	kubectl(t, "", "delete", "mutatingwebhookconfiguration", theirWebhook, "--ignore-not-found")
	kubectl(t, "", "delete", "validatingwebhookconfiguration", "validating-webhook-configuration", "--ignore-not-found")
	kubectl(t, "", "-n", theirNamespace, "delete", "secret", theirCertSecret, "--ignore-not-found")
	kubectl(t, "", append([]string{"annotate", "crd"}, append(crdNames, certManagerInject+"-")...)...)
	applyOurCRDs(t)
	sb.MustHelm(t, "install", "redis-operator", chart(), "-n", ourNamespace, "--create-namespace",
		"--set", "redisOperator.imageName=quay.io/opstree/redis-operator", "--set", "redisOperator.imageTag=dev",
		"--set", "redisOperator.imagePullPolicy=IfNotPresent",
		"--set", "resources.requests.cpu=50m", "--set", "resources.requests.memory=64Mi")
	waitOperatorRolledOut(t)

	checkCRDsAreOurs(t)
	waitAllReady(t, ns)
	if now := resourceUIDs(t, ns); fmt.Sprint(now) != fmt.Sprint(uids) {
		t.Fatalf("the resources are not the objects stored before the switch: %v, then %v", uids, now)
	}
	if q := storedQuorum(t, ns); q != "2" {
		t.Errorf("after the switch sentinel.quorum is %q, want the stored \"2\" untouched", q)
	}
	repl := &v1beta2.RedisReplication{}
	get(t, ns, "orders", repl)
	if c := meta.FindStatusCondition(repl.Status.Conditions, "QuorumAdjusted"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the replication with quorum 2 and one sentinel says %+v, want QuorumAdjusted True", c)
	}
	writeKeys(t, ns)
	pods := podSnapshot(t, ns)
	waitReconciled(t, ns, httpsMetrics(t))

	// Uninstalled and installed again: the resources keep running without an operator, and
	// the new one takes their pods over without replacing any.
	sb.MustHelm(t, "uninstall", "redis-operator", "-n", ourNamespace, "--wait")
	waitNoOperatorPod(t)
	// Its webhook certificate goes with the chart's Service (garbage collection): the next
	// operator makes a new one, which the v1beta1 read below goes through.
	sb.WaitFor(t, ourNamespace, "the webhook certificate Secret gone", time.Minute, func(ctx context.Context) (bool, string, error) {
		_, err := sb.Kube.CoreV1().Secrets(ourNamespace).Get(ctx, "redis-operator-webhook-cert", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	if now := podSnapshot(t, ns); now != pods {
		t.Fatalf("pods changed while no operator ran:\n%s\nthen\n%s", pods, now)
	}
	applyOurCRDs(t)
	sb.MustHelm(t, "install", "redis-operator", chart(), "-n", ourNamespace,
		"--set", "redisOperator.imageName=quay.io/opstree/redis-operator", "--set", "redisOperator.imageTag=dev",
		"--set", "redisOperator.imagePullPolicy=IfNotPresent",
		"--set", "resources.requests.cpu=50m", "--set", "resources.requests.memory=64Mi")
	waitOperatorRolledOut(t)
	waitReconciled(t, ns, httpsMetrics(t))
	waitAllReady(t, ns)
	// The new operator made a new webhook certificate: v1beta1 reads go through it.
	sb.WaitFor(t, ns, "the cluster read as v1beta1 through the new webhook certificate", time.Minute, func(ctx context.Context) (bool, string, error) {
		out, err := kubectlErr(ctx, "", "-n", ns, "get", "redisclusters.v1beta1.redis.redis.opstreelabs.in", "shop", "-o", "jsonpath={.apiVersion}")
		return err == nil && out == "redis.redis.opstreelabs.in/v1beta1", out, nil
	})
	assertSamePods(t, ns, pods, "the operator's reinstall")
	readKeys(t, ns)

	// An upgrade of ours, CRDs first, keeping plain-HTTP metrics for scrapers not yet moved
	// to HTTPS: the operator's pod is replaced, no Redis pod is.
	applyOurCRDs(t)
	sb.MustHelm(t, "upgrade", "redis-operator", chart(), "-n", ourNamespace, "--reuse-values", "--set", "redisOperator.metrics.secure=false")
	waitOperatorRolledOut(t)
	waitReconciled(t, ns, func(ctx context.Context, ip string) (string, error) {
		return httpGet(ctx, "http://"+net.JoinHostPort(ip, "8080")+"/metrics")
	})
	waitAllReady(t, ns)
	assertSamePods(t, ns, pods, "the operator's upgrade")
	readKeys(t, ns)
}

// applyOurCRDs is the runbook's CRD step: server-side (a CRD is too large for the
// last-applied annotation of a client-side apply), taking over the fields that Helm, kubectl
// create or an earlier apply set.
func applyOurCRDs(t *testing.T) {
	t.Helper()
	kubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(chart(), "crds"))
	waitEstablished(t)
}

func waitEstablished(t *testing.T) {
	t.Helper()
	args := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, name := range crdNames {
		args = append(args, "crd/"+name)
	}
	kubectl(t, "", args...)
}

// leaveTheirLeftovers makes what the other operator's uninstall can leave: its pod-mutating
// webhook (kept by a kustomize install, failing every Redis pod's creation in a labelled
// namespace while nothing answers it) and the certificate Secret cert-manager wrote for it.
func leaveTheirLeftovers(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := sb.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: theirNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sb.Kube.CoreV1().Namespaces().Delete(context.Background(), theirNamespace, metav1.DeleteOptions{})
	})
	if _, err := sb.Kube.CoreV1().Secrets(theirNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: theirCertSecret}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("stale"), "tls.key": []byte("stale")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	path := "/mutate-core-v1-pod"
	webhook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: theirWebhook},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "ot-mutate-pod.opstree.com",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: theirNamespace, Name: "webhook-service", Path: &path}},
			FailurePolicy: &fail,
			SideEffects:   &none,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{theirWebhookLabel: "enabled"}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "redis_setup_type", Operator: metav1.LabelSelectorOpExists}}},
		}},
	}
	if _, err := sb.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, webhook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sb.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), theirWebhook, metav1.DeleteOptions{})
	})
	kubectl(t, "", "label", "namespace", ns, theirWebhookLabel+"=enabled")
}

// checkCRDsAreOurs checks that the runbook left our CRDs in place of theirs: our v1beta1
// served beside v1beta2, and no CA-injection annotation of their certificate.
func checkCRDsAreOurs(t *testing.T) {
	t.Helper()
	for _, name := range crdNames {
		out := kubectl(t, "", "get", "crd", name, "-o", `jsonpath={.spec.versions[*].name} {.metadata.annotations.cert-manager\.io/inject-ca-from}`)
		if strings.TrimSpace(out) != "v1beta1 v1beta2" {
			t.Errorf("CRD %s after the runbook: versions and annotation %q, want \"v1beta1 v1beta2\" and none", name, out)
		}
	}
	if _, err := sb.Kube.CoreV1().Secrets(theirNamespace).Get(context.Background(), theirCertSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("their certificate Secret after the runbook: %v", err)
	}
}

// resource is one of usersManifests' resources, with its conditions.
type resource struct {
	kind, name string
	obj        client.Object
	conditions func() []metav1.Condition
}

func resources() []resource {
	standalone, replication, cluster := &v1beta2.Redis{}, &v1beta2.RedisReplication{}, &v1beta2.RedisCluster{}
	return []resource{
		{"Redis", "cache", standalone, func() []metav1.Condition { return standalone.Status.Conditions }},
		{"RedisReplication", "orders", replication, func() []metav1.Condition { return replication.Status.Conditions }},
		{"RedisCluster", "shop", cluster, func() []metav1.Condition { return cluster.Status.Conditions }},
	}
}

func resourceUIDs(t *testing.T, ns string) []types.UID {
	t.Helper()
	var uids []types.UID
	for _, r := range resources() {
		get(t, ns, r.name, r.obj)
		uids = append(uids, r.obj.GetUID())
	}
	return uids
}

// storedQuorum reads the replication's stored spec.sentinel.quorum as it is, without our types.
func storedQuorum(t *testing.T, ns string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("redis.redis.opstreelabs.in/v1beta2")
	u.SetKind("RedisReplication")
	get(t, ns, "orders", u)
	q, _, err := unstructured.NestedString(u.Object, "spec", "sentinel", "quorum")
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func get(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

// waitAllReady waits until each resource says Ready for its current generation.
func waitAllReady(t *testing.T, ns string) {
	t.Helper()
	for _, r := range resources() {
		sb.WaitFor(t, ns, r.kind+" "+r.name+" Ready", 6*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, r.obj); err != nil {
				return false, "", err
			}
			c := meta.FindStatusCondition(r.conditions(), v1beta2.ConditionReady)
			if c == nil {
				return false, "no Ready condition", nil
			}
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.obj.GetGeneration(), c.Reason + ": " + c.Message, nil
		})
	}
}

// podSnapshot names every pod of ns with its UID and restart count: the same snapshot later
// means no pod was replaced or restarted.
func podSnapshot(t *testing.T, ns string) string {
	t.Helper()
	list, err := sb.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range list.Items {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		lines = append(lines, fmt.Sprintf("%s %s restarts=%d", p.Name, p.UID, restarts))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func assertSamePods(t *testing.T, ns, before, what string) {
	t.Helper()
	if now := podSnapshot(t, ns); now != before {
		t.Errorf("%s replaced or restarted pods:\nbefore\n%s\nafter\n%s", what, before, now)
	}
}

const keysPerResource = 100

func writeKeys(t *testing.T, ns string) { t.Helper(); eachStore(t, ns, true) }
func readKeys(t *testing.T, ns string)  { t.Helper(); eachStore(t, ns, false) }

// eachStore writes (or reads back) keysPerResource keys in the standalone Redis, the
// replication's master and the cluster.
func eachStore(t *testing.T, ns string, write bool) {
	t.Helper()
	ctx := context.Background()
	repl := &v1beta2.RedisReplication{}
	get(t, ns, "orders", repl)
	stores := map[string]goredis.Cmdable{
		"cache":  sb.Redis(t, pod(t, ns, "cache-0")),
		"orders": sb.Redis(t, pod(t, ns, repl.Status.MasterNode)),
	}
	list, err := sb.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "redis_setup_type=cluster"})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, p := range list.Items {
		addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, "6379"))
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	stores["shop"] = cc
	for name, rdb := range stores {
		for i := range keysPerResource {
			key, want := fmt.Sprintf("switch-%s-%d", name, i), fmt.Sprintf("value-%d", i)
			if write {
				if err := rdb.Set(ctx, key, want, 0).Err(); err != nil {
					t.Fatalf("SET %s in %s: %v", key, name, err)
				}
				continue
			}
			if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
				t.Errorf("GET %s in %s: %q %v, want %q", key, name, got, err, want)
			}
		}
	}
}

func pod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := sb.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitReconciled waits until the operator now running reports every resource Ready in its
// metrics, which a new operator process does only once it has reconciled them.
func waitReconciled(t *testing.T, ns string, scrape func(ctx context.Context, ip string) (string, error)) {
	t.Helper()
	sb.WaitFor(t, ns, "the running operator's metrics to report each resource Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		ip, err := operatorPodIP(ctx)
		if err != nil || ip == "" {
			return false, fmt.Sprintf("operator pod: %v", err), nil
		}
		body, err := scrape(ctx, ip)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, r := range resources() {
			want := fmt.Sprintf(`redis_operator_resource_ready{kind=%q,name=%q,namespace=%q} 1`, r.kind, r.name, ns)
			if !strings.Contains(body, want) {
				return false, "no " + want, nil
			}
		}
		return true, "", nil
	})
}

func httpsMetrics(t *testing.T) func(ctx context.Context, ip string) (string, error) {
	t.Helper()
	token := sb.MetricsToken(t)
	return func(ctx context.Context, ip string) (string, error) { return framework.OperatorMetrics(ctx, ip, token) }
}

// operatorPodIP is the address of the one operator pod that runs and is not going away.
func operatorPodIP(ctx context.Context) (string, error) {
	list, err := sb.Kube.CoreV1().Pods(ourNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=redis-operator"})
	if err != nil {
		return "", err
	}
	var ips []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && framework.PodReady(&p) {
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) != 1 {
		return "", fmt.Errorf("%d operator pods ready", len(ips))
	}
	return ips[0], nil
}

// waitOperatorRolledOut waits until the operator Deployment runs its current template in one
// available pod, and no older pod is left.
func waitOperatorRolledOut(t *testing.T) {
	t.Helper()
	sb.WaitFor(t, ourNamespace, "the operator rolled out", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		d, err := sb.Kube.AppsV1().Deployments(ourNamespace).Get(ctx, "redis-operator", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		s := d.Status
		if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != 1 || s.AvailableReplicas != 1 || s.Replicas != 1 {
			return false, fmt.Sprintf("generation %d observed %d, %d updated, %d available, %d in all", d.Generation, s.ObservedGeneration, s.UpdatedReplicas, s.AvailableReplicas, s.Replicas), nil
		}
		_, err = operatorPodIP(ctx)
		return err == nil, fmt.Sprint(err), nil
	})
}

func waitNoOperatorPod(t *testing.T) {
	t.Helper()
	sb.WaitFor(t, ourNamespace, "no operator pod left", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		list, err := sb.Kube.CoreV1().Pods(ourNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=redis-operator"})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d operator pods", len(list.Items)), nil
	})
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

func chart() string { return filepath.Join(sb.Repo(), "charts", "redis-operator") }

// kubectl runs bin/kubectl against the sandbox with stdin (when not empty) and fails the
// test on error.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := kubectlErr(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(sb.Bin(), "kubectl"), append([]string{"--kubeconfig", sb.Inst.Kubeconfig()}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
