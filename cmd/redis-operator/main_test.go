package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestOperatorServesProbesMetricsAndElectsALeader starts the operator against a real
// kube-apiserver and checks what a kubelet and Prometheus would see.
func TestOperatorServesProbesMetricsAndElectsALeader(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver from %s (run `make test`, it builds it): %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})

	metricsAddr, probeAddr, pprofAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	operator := &operatorRun{exited: make(chan struct{})}
	go func() {
		defer close(operator.exited)
		operator.err = run(ctx, []string{
			"--metrics-bind-address", metricsAddr,
			"--health-probe-bind-address", probeAddr,
			"--leader-elect",
			"--leader-election-namespace", "default",
			"--watch-namespace", "default,other",
			// The client settings their users tune: the operator still works with them.
			"--kube-client-qps", "50", "--kube-client-timeout", "30s",
			"--pprof-bind-address", pprofAddr,
		}, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-operator.exited:
			if operator.err != nil {
				t.Errorf("operator exited with error: %v", operator.err)
			}
		case <-time.After(time.Minute):
			t.Errorf("operator still running a minute after its context was cancelled")
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		body := waitFor200(t, "http://"+probeAddr+path, "", operator)
		if !strings.Contains(body, "ok") {
			t.Errorf("%s answered %q, want ok", path, body)
		}
	}
	if body := waitFor200(t, "http://"+pprofAddr+"/debug/pprof/", "", operator); !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ answered %.200q, want the pprof index", body)
	}
	// /metrics is HTTPS for callers with a token that may get /metrics: none, one the API
	// server does not know, and one of a ServiceAccount without the permission are refused.
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := scraperToken(ctx, t, kube)
	metricsURL := "https://" + metricsAddr + "/metrics"
	for _, tc := range []struct{ token, want string }{{"", "401"}, {"not-a-token", "401"}, {token, "403"}} {
		if got := waitForStatus(t, metricsURL, tc.token, operator); fmt.Sprint(got) != tc.want {
			t.Errorf("/metrics with token %.10q: %d, want %s", tc.token, got, tc.want)
		}
	}
	allowMetrics(ctx, t, kube)
	metrics := waitFor200(t, metricsURL, token, operator)
	if !strings.Contains(metrics, "controller_runtime_") && !strings.Contains(metrics, "go_goroutines") {
		t.Errorf("/metrics does not look like Prometheus metrics:\n%.500s", metrics)
	}

	k8sClient, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var lease coordinationv1.Lease
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: "default", Name: "redis-operator.redis.opstreelabs.in"}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader elected within 30s: lease %+v, err %v", lease.Spec, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestParseFlagsSplitsWatchNamespaces(t *testing.T) {
	opts, err := parseFlags([]string{"--watch-namespace", " a, b,,c "})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(splitNamespaces(opts.watchNamespaces))
	if got != "[a b c]" {
		t.Errorf("watch namespaces = %s, want [a b c]", got)
	}
	if _, err := parseFlags([]string{"--no-such-flag"}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

func TestMaxConcurrentReconcilesFromFlagOrEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env     string
		args    []string
		want    int
		refused bool
	}{
		{want: defaultMaxConcurrentReconciles},
		{env: "8", want: 8},
		{env: "8", args: []string{"--max-concurrent-reconciles", "2"}, want: 2},
		{env: "many", refused: true},
		{env: "0", refused: true},
		{args: []string{"--max-concurrent-reconciles", "0"}, refused: true},
	} {
		t.Run(fmt.Sprint(tc.env, tc.args), func(t *testing.T) {
			t.Setenv("MAX_CONCURRENT_RECONCILES", tc.env)
			opts, err := parseFlags(tc.args)
			if tc.refused {
				if err == nil {
					t.Errorf("accepted, %d", opts.maxConcurrentReconciles)
				}
				return
			}
			if err != nil || opts.maxConcurrentReconciles != tc.want {
				t.Errorf("got %v, %v; want %d", opts, err, tc.want)
			}
		})
	}
}

func TestServiceDNSDomainFromFlagOrEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want string // "" when refused
	}{
		{want: "cluster.local"},
		{env: "corp.example", want: "corp.example"},
		{env: "Corp.Example.", want: "corp.example"}, // as a resolv.conf search line may write it
		{env: "corp.example", args: []string{"--service-dns-domain", "k8s.internal"}, want: "k8s.internal"},
		{env: "not a domain"},
		{args: []string{"--service-dns-domain", "-bad-"}},
	} {
		t.Run(fmt.Sprint(tc.env, tc.args), func(t *testing.T) {
			t.Setenv("SERVICE_DNS_DOMAIN", tc.env)
			opts, err := parseFlags(tc.args)
			if tc.want == "" {
				if err == nil {
					t.Errorf("accepted, %q", opts.dnsDomain)
				}
				return
			}
			if err != nil || opts.dnsDomain != tc.want || opts.webhook.DNSDomain != tc.want {
				t.Errorf("got %v; want %q for the controllers and the webhook", err, tc.want)
			}
		})
	}
}

func TestKubeClientAndPprofFlags(t *testing.T) {
	opts, err := parseFlags(nil)
	if err != nil || opts.kubeClientQPS != 0 || opts.kubeClientTimeout != 0 || opts.pprofAddr != "" {
		t.Fatalf("defaults %+v, %v: want no limit, no timeout, no pprof", opts, err)
	}
	base := &rest.Config{Host: "https://api.example", QPS: -1}
	if c := clientConfig(base, opts); c.QPS != -1 || c.WrapTransport != nil {
		t.Errorf("the defaults changed the client: QPS %v, wrapped %v", c.QPS, c.WrapTransport != nil)
	}
	opts, err = parseFlags([]string{"--kube-client-qps=25.5", "--kube-client-timeout=45s", "--pprof-bind-address=:6060"})
	if err != nil || opts.kubeClientQPS != 25.5 || opts.kubeClientTimeout != 45*time.Second || opts.pprofAddr != ":6060" {
		t.Fatalf("parsed %+v, %v", opts, err)
	}
	if c := clientConfig(base, opts); c.QPS != 25.5 || c.WrapTransport == nil || base.QPS != -1 {
		t.Errorf("client QPS %v, wrapped %v (the base config must stay as it was: QPS %v)", c.QPS, c.WrapTransport != nil, base.QPS)
	}
	for _, bad := range [][]string{{"--kube-client-qps=-1"}, {"--kube-client-timeout=-1s"}, {"--kube-client-timeout=soon"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// --kube-client-timeout cuts a request that takes longer, body included, but not a watch,
// which lasts by design.
func TestRequestTimeoutSparesWatches(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // the body comes late
		_, _ = io.WriteString(w, "done")
	}))
	t.Cleanup(server.Close)
	client := &http.Client{Transport: requestTimeout{next: http.DefaultTransport, limit: 100 * time.Millisecond}}
	read := func(query string) (string, error) {
		resp, err := client.Get(server.URL + "/api/v1/pods" + query)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	if body, err := read(""); err == nil {
		t.Errorf("a request slower than the limit answered %q", body)
	}
	if body, err := read("?watch=true"); err != nil || body != "done" {
		t.Errorf("a watch was cut: %q, %v", body, err)
	}
}

// operatorRun is one run of the operator in the test: exited closes when run returns, and err
// is what it returned. A closed channel (unlike a value sent once) can be observed both by the
// waits below and by the cleanup.
type operatorRun struct {
	exited chan struct{}
	err    error
}

// freeAddr picks a free loopback port below the kernel's ephemeral range (32768 and up), so
// that a port the operator binds a moment later is not taken meanwhile by one of the many
// connections and `:0` listeners that other test packages open at the same time.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return ""
}

// scraperToken makes the ServiceAccount "scraper" in default and returns a token of it.
func scraperToken(ctx context.Context, t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// allowMetrics lets the ServiceAccount scraper get /metrics, as config/rbac's metrics-reader
// ClusterRole does.
func allowMetrics(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: "default"}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForStatus returns the first HTTP status the URL answers with the bearer token.
func waitForStatus(t *testing.T, url, token string, operator *operatorRun) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-operator.exited:
			t.Fatalf("operator exited early: %v", operator.err)
		default:
		}
		resp, err := get(url, token)
		if err == nil {
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within 30s: %v", url, last)
	return 0
}

// get sends a GET with the bearer token (none when empty), trusting any certificate: the
// metrics endpoint serves a self-signed one.
func get(url, token string) (*http.Response, error) {
	// A probe that hangs must fail the test, not stall it until the package timeout.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test checks authentication, not the self-signed certificate
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return httpClient.Do(req)
}

func waitFor200(t *testing.T, url, token string, operator *operatorRun) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-operator.exited:
			t.Fatalf("operator exited early: %v", operator.err)
		default:
		}
		resp, err := get(url, token)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			last = fmt.Sprintf("status %d: %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within 30s; last: %s", url, last)
	return ""
}
