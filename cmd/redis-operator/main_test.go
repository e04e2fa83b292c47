package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rediskube/redis-operator/internal/version"
)

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
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, server.URL+"/api/v1/pods"+query, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
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

// TestVersionFlag: --version prints the version line and returns without looking for an API
// server.
func TestVersionFlag(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	t.Setenv("KUBECONFIG", "/nonexistent")
	err = run(t.Context(), []string{"--version"}, nil)
	os.Stdout = stdout
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), version.String("redis-operator")+"\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}
