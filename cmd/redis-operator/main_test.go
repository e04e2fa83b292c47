package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--metrics-bind-address", metricsAddr,
			"--health-probe-bind-address", probeAddr,
			"--leader-elect",
			"--leader-election-namespace", "default",
			"--watch-namespace", "default,other",
		}, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator exited with error: %v", err)
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		body := waitFor200(t, "http://"+probeAddr+path, done)
		if !strings.Contains(body, "ok") {
			t.Errorf("%s answered %q, want ok", path, body)
		}
	}
	metrics := waitFor200(t, "http://"+metricsAddr+"/metrics", done)
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

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func waitFor200(t *testing.T, url string, exited <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("operator exited early: %v", err)
		default:
		}
		resp, err := http.Get(url)
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
