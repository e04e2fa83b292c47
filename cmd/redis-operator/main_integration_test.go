//go:build integration

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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
		l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
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
		resp, err := get(t.Context(), url, token)
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
func get(ctx context.Context, url, token string) (*http.Response, error) {
	// A probe that hangs must fail the test, not stall it until the package timeout.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test checks authentication, not the self-signed certificate
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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
		resp, err := get(t.Context(), url, token)
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
