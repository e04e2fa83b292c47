package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/monitoring"
)

const operatorNamespace = "redis-operator"

func chart(name string) string { return filepath.Join(sb.Repo(), "charts", name) }

// installOperator installs the operator chart with the sandbox's operator image: any image
// whose repository contains redis-operator runs bin/redis-operator.
func installOperator(t *testing.T, extra ...string) {
	t.Helper()
	sb.MustHelm(t, append([]string{"install", "redis-operator", chart("redis-operator"), "-n", operatorNamespace, "--create-namespace",
		"--set", "redisOperator.imageName=quay.io/opstree/redis-operator", "--set", "redisOperator.imageTag=dev",
		"--set", "redisOperator.imagePullPolicy=IfNotPresent",
		"--set", "resources.requests.cpu=50m", "--set", "resources.requests.memory=64Mi"}, extra...)...)
	sb.WaitFor(t, operatorNamespace, "the operator Deployment available", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		d, err := sb.Kube.AppsV1().Deployments(operatorNamespace).Get(ctx, "redis-operator", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", d.Status.AvailableReplicas), nil
	})
}

func waitReady(t *testing.T, ns string, obj client.Object, conditions func() []metav1.Condition) {
	t.Helper()
	sb.WaitFor(t, ns, fmt.Sprintf("%T %s Ready", obj, obj.GetName()), 5*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(conditions(), v1beta2.ConditionReady)
		if c == nil {
			return false, "no Ready condition", nil
		}
		return c.Status == metav1.ConditionTrue, c.Reason + ": " + c.Message, nil
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
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func podsOf(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := sb.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitExporters waits until the exporter of every pod reports redis_up 1.
func waitExporters(t *testing.T, ns string, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		url := "http://" + net.JoinHostPort(p.Status.PodIP, "9121") + "/metrics"
		sb.WaitFor(t, ns, "redis_up 1 from the exporter of "+p.Name, time.Minute, func(ctx context.Context) (bool, string, error) {
			body, err := httpGet(ctx, url)
			if err != nil {
				return false, err.Error(), nil
			}
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "redis_up ") {
					return line == "redis_up 1", line, nil
				}
			}
			return false, "no redis_up in the scrape", nil
		})
	}
}

func TestHelmInstallCluster(t *testing.T) {
	installOperator(t)
	ns := sb.Namespace(t, "helm-cluster")
	_, err := sb.Kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-password"}, StringData: map[string]string{"password": "s3cret-pw"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb.MustHelm(t, "install", "shop", chart("redis-cluster"), "-n", ns,
		"--set", "redisCluster.clusterSize=3", "--set", "redisExporter.enabled=true",
		"--set", "redisCluster.redisSecret.secretName=shop-password", "--set", "redisCluster.redisSecret.secretKey=password")
	cluster := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	waitReady(t, ns, cluster, func() []metav1.Condition { return cluster.Status.Conditions })

	// The chart's CRDs carry no conversion stanza; the operator sets it, and v1beta1 reads.
	sb.WaitFor(t, ns, "the cluster read as v1beta1", time.Minute, func(ctx context.Context) (bool, string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(sb.Bin(), "kubectl"), "--kubeconfig", sb.Inst.Kubeconfig(), "-n", ns,
			"get", "redisclusters.v1beta1.redis.redis.opstreelabs.in", "shop", "-o", "jsonpath={.apiVersion} {.spec.clusterSize}").CombinedOutput()
		return err == nil && string(out) == "redis.redis.opstreelabs.in/v1beta1 3", string(out), nil
	})

	pods := podsOf(t, ns, "app.kubernetes.io/instance=shop")
	if len(pods) != 6 {
		t.Fatalf("%d pods, want 3 leaders and 3 followers", len(pods))
	}
	waitExporters(t, ns, pods)

	// The -metrics Services expose the exporter port alone.
	for _, svc := range []string{"shop-leader-metrics", "shop-follower-metrics"} {
		s, err := sb.Kube.CoreV1().Services(ns).Get(context.Background(), svc, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 9121 {
			t.Errorf("Service %s ports %+v, want only 9121", svc, s.Spec.Ports)
		}
	}

	// The operator's metrics name the cluster, Ready, with every slot served.
	ops := podsOf(t, operatorNamespace, "app.kubernetes.io/name=redis-operator")
	if len(ops) != 1 {
		t.Fatalf("%d operator pods", len(ops))
	}
	labels := fmt.Sprintf(`{kind="RedisCluster",name="shop",namespace=%q}`, ns)
	sb.WaitFor(t, ns, "the operator's metrics for the cluster", time.Minute, func(ctx context.Context) (bool, string, error) {
		body, err := framework.OperatorMetrics(ctx, ops[0].Status.PodIP, sb.MetricsToken(t))
		if err != nil {
			return false, err.Error(), nil
		}
		for _, want := range []string{
			"redis_operator_resource_ready" + labels + " 1",
			"redis_operator_masters" + labels + " 3",
			"redis_operator_replicas_linked" + labels + " 3",
			"redis_operator_cluster_slots_served" + labels + " 16384",
			// The replaced operator's name for it, which its users' alerts query.
			fmt.Sprintf(`rediscluster_healthy{instance="shop",namespace=%q} 1`, ns),
		} {
			if !strings.Contains(body, want) {
				return false, "no " + want, nil
			}
		}
		return true, "", nil
	})

	// kubectl redis status: every pod with its role and, for masters, its slot ranges.
	out, err := exec.Command(filepath.Join(sb.Repo(), "bin", "kubectl-redis"), "status", "shop", "-n", ns,
		"--kubeconfig", sb.Inst.Kubeconfig()).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl redis status: %v\n%s", err, out)
	}
	t.Logf("kubectl redis status shop:\n%s", out)
	masters, replicas := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "shop-") {
			continue
		}
		switch f[2] {
		case "master":
			masters++
			if !strings.Contains(f[4], "-") {
				t.Errorf("master %s shows no slot range: %s", f[0], line)
			}
		case "slave":
			replicas++
			if !strings.HasPrefix(f[3], "shop-leader-") && !strings.HasPrefix(f[3], "shop-follower-") {
				t.Errorf("replica %s names no master pod: %s", f[0], line)
			}
		default:
			t.Errorf("pod %s has role %q: %s", f[0], f[2], line)
		}
	}
	if masters != 3 || replicas != 3 {
		t.Errorf("kubectl redis status shows %d masters and %d replicas, want 3 and 3:\n%s", masters, replicas, out)
	}

	// helm upgrade changing a value reaches the StatefulSets the operator makes.
	sb.MustHelm(t, "upgrade", "shop", chart("redis-cluster"), "-n", ns, "--reuse-values", "--set", "redisCluster.minReadySeconds=2")
	sb.WaitFor(t, ns, "minReadySeconds 2 on the StatefulSets", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, name := range []string{"shop-leader", "shop-follower"} {
			s, err := sb.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if s.Spec.MinReadySeconds != 2 {
				return false, fmt.Sprintf("%s has %d", name, s.Spec.MinReadySeconds), nil
			}
		}
		return true, "", nil
	})

	installOtherCharts(t, ops[0].Status.PodIP, pods)

	sb.MustHelm(t, "uninstall", "shop", "-n", ns, "--wait")
	waitGone(t, ns)

	sb.MustHelm(t, "uninstall", "redis-operator", "-n", operatorNamespace, "--wait")
	sb.WaitFor(t, operatorNamespace, "the operator gone", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		_, err := sb.Kube.AppsV1().Deployments(operatorNamespace).Get(ctx, "redis-operator", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			left := podsOf(t, operatorNamespace, "app.kubernetes.io/name=redis-operator")
			return len(left) == 0, fmt.Sprintf("%d operator pods left", len(left)), nil
		}
		return false, "Deployment still there", err
	})
	// The webhook's certificate Secret, made by the operator, belongs to the chart's Service.
	sb.WaitFor(t, operatorNamespace, "the webhook certificate Secret gone", time.Minute, func(ctx context.Context) (bool, string, error) {
		_, err := sb.Kube.CoreV1().Secrets(operatorNamespace).Get(ctx, "redis-operator-webhook-cert", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		var err error
		if kind == "ClusterRole" {
			_, err = sb.Kube.RbacV1().ClusterRoles().Get(context.Background(), "redis-operator", metav1.GetOptions{})
		} else {
			_, err = sb.Kube.RbacV1().ClusterRoleBindings().Get(context.Background(), "redis-operator", metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s redis-operator left after helm uninstall: %v", kind, err)
		}
	}
}

// installOtherCharts installs the redis, redis-replication and redis-sentinel charts at once
// (the sentinels watching the replication), waits for each to be Ready and their exporters to
// report redis_up 1, checks the operator's metrics of the replication (its lag in seconds
// among them) and that every metric the alerts and the dashboard use is in a real scrape of
// the operator or an exporter (of these and of the cluster's pods), then uninstalls them.
func installOtherCharts(t *testing.T, operatorIP string, clusterPods []corev1.Pod) {
	t.Helper()
	ns := sb.Namespace(t, "helm-others")
	sb.MustHelm(t, "install", "solo", chart("redis"), "-n", ns, "--set", "redisExporter.enabled=true")
	sb.MustHelm(t, "install", "cache", chart("redis-replication"), "-n", ns,
		"--set", "redisReplication.clusterSize=2", "--set", "redisExporter.enabled=true")
	sb.MustHelm(t, "install", "watch", chart("redis-sentinel"), "-n", ns,
		"--set", "redisSentinel.clusterSize=1", "--set", "redisSentinelConfig.redisReplicationName=cache")

	standalone := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "solo"}}
	waitReady(t, ns, standalone, func() []metav1.Condition { return standalone.Status.Conditions })
	replication := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "cache"}}
	waitReady(t, ns, replication, func() []metav1.Condition { return replication.Status.Conditions })
	sentinel := &v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Name: "watch"}}
	waitReady(t, ns, sentinel, func() []metav1.Condition { return sentinel.Status.Conditions })
	waitExporters(t, ns, append(podsOf(t, ns, "app.kubernetes.io/instance=solo"), podsOf(t, ns, "app.kubernetes.io/instance=cache")...))

	labels := fmt.Sprintf(`{kind="RedisReplication",name="cache",namespace=%q}`, ns)
	sb.WaitFor(t, ns, "the operator's metrics for the replication", time.Minute, func(ctx context.Context) (bool, string, error) {
		body, err := framework.OperatorMetrics(ctx, operatorIP, sb.MetricsToken(t))
		if err != nil {
			return false, err.Error(), nil
		}
		for _, want := range []string{
			"redis_operator_resource_ready" + labels + " 1",
			"redis_operator_masters" + labels + " 1",
			"redis_operator_replicas_linked" + labels + " 1",
			fmt.Sprintf(`redisreplication_has_master{instance="cache",namespace=%q} 1`, ns),
			fmt.Sprintf(`redisreplication_connected_slaves_total{instance="cache",namespace=%q} 1`, ns),
			fmt.Sprintf(`redis_operator_resource_ready{kind="Redis",name="solo",namespace=%q} 1`, ns),
			fmt.Sprintf(`redis_operator_resource_ready{kind="RedisSentinel",name="watch",namespace=%q} 1`, ns),
		} {
			if !strings.Contains(body, want) {
				return false, "no " + want, nil
			}
		}
		// A linked replica acknowledges every second: its lag is a second or two at most.
		lag, ok := sample(body, "redis_operator_replication_lag_seconds"+labels)
		if !ok || lag > 2 {
			return false, fmt.Sprintf("replication lag in seconds %v (found %v)", lag, ok), nil
		}
		return true, "", nil
	})

	// A key, so that the keyspace series exist (Redis lists no empty database).
	solo := podsOf(t, ns, "app.kubernetes.io/instance=solo")
	if err := sb.RedisAt(t, solo[0].Status.PodIP, 6379).Set(context.Background(), "dashboard", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	used, err := monitoring.UsedMetrics(sb.Repo())
	if err != nil {
		t.Fatal(err)
	}
	exporters := append(append(podsOf(t, ns, "app.kubernetes.io/instance=solo"), podsOf(t, ns, "app.kubernetes.io/instance=cache")...), clusterPods...)
	sb.WaitFor(t, ns, "every metric of the alerts and the dashboard in a scrape", time.Minute, func(ctx context.Context) (bool, string, error) {
		scraped := map[string]bool{}
		body, err := framework.OperatorMetrics(ctx, operatorIP, sb.MetricsToken(t))
		if err != nil {
			return false, "operator: " + err.Error(), nil
		}
		maps.Copy(scraped, monitoring.ScrapedNames(body))
		var bodies []string
		for _, p := range exporters {
			bodies = append(bodies, "http://"+net.JoinHostPort(p.Status.PodIP, "9121")+"/metrics")
		}
		for _, url := range bodies {
			body, err := httpGet(ctx, url)
			if err != nil {
				return false, url + ": " + err.Error(), nil
			}
			maps.Copy(scraped, monitoring.ScrapedNames(body))
		}
		var missing []string
		for _, m := range used {
			if !scraped[m] && !slices.Contains(monitoring.Generated, m) && !slices.Contains(monitoring.OnlyWithBackups, m) {
				missing = append(missing, m)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not in any scrape: %v", missing), nil
	})

	checkSandboxPrometheus(t, ns, len(exporters))

	for _, release := range []string{"watch", "cache", "solo"} {
		sb.MustHelm(t, "uninstall", release, "-n", ns, "--wait")
	}
	waitGone(t, ns)
}

// checkSandboxPrometheus starts the Prometheus of make sandbox MONITORING=1 on this sandbox and
// waits for it to have scraped every exporter (redis_up 1) and the operator (every resource's
// ready series), then stops it.
func checkSandboxPrometheus(t *testing.T, ns string, exporters int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	script := filepath.Join(sb.Repo(), "hack", "sandbox-monitoring.sh")
	run := func(action string) error {
		cmd := exec.Command(script, action)
		cmd.Env = append(os.Environ(), "SANDBOX_DIR="+sb.Dir, "PROMETHEUS_ADDR="+addr)
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s: %s", script, action, out)
		return err
	}
	if err := run("start"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run("stop") })
	count := func(ctx context.Context, query string) (int, error) {
		body, err := httpGet(ctx, "http://"+addr+"/api/v1/query?query="+url.QueryEscape(query))
		if err != nil {
			return 0, err
		}
		var resp struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			return 0, fmt.Errorf("%w: %s", err, body)
		}
		return len(resp.Data.Result), nil
	}
	sb.WaitFor(t, ns, "Prometheus scraping every exporter and the operator", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		up, err := count(ctx, "redis_up == 1")
		if err != nil {
			return false, err.Error(), nil
		}
		ready, err := count(ctx, `redis_operator_resource_ready{namespace="`+ns+`"} == 1`)
		if err != nil {
			return false, err.Error(), nil
		}
		return up >= exporters && ready == 3, fmt.Sprintf("%d exporters up, %d resources of %s ready", up, ready, ns), nil
	})
}

// sample is the value of the series (name with its labels, as exposed) in a scrape.
func sample(body, series string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if value, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// waitGone waits until the namespace holds no pod, StatefulSet, Service, ConfigMap or claim
// of ours and no custom resource.
func waitGone(t *testing.T, ns string) {
	t.Helper()
	sb.WaitFor(t, ns, "nothing of ours left after helm uninstall", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		var left []string
		sts, err := sb.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, s := range sts.Items {
			left = append(left, "statefulset/"+s.Name)
		}
		pods, err := sb.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
		svcs, err := sb.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, s := range svcs.Items {
			left = append(left, "service/"+s.Name)
		}
		cms, err := sb.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range cms.Items {
			if c.Name != "kube-root-ca.crt" {
				left = append(left, "configmap/"+c.Name)
			}
		}
		pvcs, err := sb.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range pvcs.Items {
			left = append(left, "pvc/"+c.Name)
		}
		for _, list := range []client.ObjectList{&v1beta2.RedisClusterList{}, &v1beta2.RedisList{}, &v1beta2.RedisReplicationList{}, &v1beta2.RedisSentinelList{}} {
			if err := sb.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			if n := meta.LenList(list); n > 0 {
				left = append(left, fmt.Sprintf("%d %T", n, list))
			}
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
}
