//go:build integration

package helm

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var charts = []string{"redis-operator", "redis", "redis-cluster", "redis-replication", "redis-sentinel"}

// builtCharts is a copy of charts/ in which each kind chart carries the library chart in its
// charts/ directory, as `helm dependency build` (make chart-deps) puts it there: built once per
// run from the current sources, so that no stale vendored copy in the tree is what renders.
var builtCharts string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "charts-")
	if err == nil {
		err = buildCharts(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the charts:", err)
		os.Exit(1)
	}
	builtCharts = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// buildCharts copies the repository's charts into dir, leaving out what chart-deps vendored, and
// runs helm dependency build in each kind chart.
func buildCharts(dir string) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	src := filepath.Join(root, "charts")
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && filepath.Base(rel) == "charts" && strings.Count(rel, string(filepath.Separator)) == 1 {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	for _, c := range kindCharts {
		if out, err := runHelm(root, "dependency", "build", "--skip-refresh", filepath.Join(dir, c)); err != nil {
			return fmt.Errorf("helm dependency build %s: %w\n%s", c, err, out)
		}
	}
	return nil
}

// chartPath is the built copy of a chart.
func chartPath(name string) string { return filepath.Join(builtCharts, name) }

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runHelm(repo(t), args...)
}

// runHelm runs bin/helm with its own empty configuration; its output is stdout, with stderr
// added on failure.
func runHelm(root string, args ...string) (string, error) {
	bin := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is missing: run make helm", bin)
	}
	dir, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

func TestLint(t *testing.T) {
	for _, c := range append(slices.Clone(charts), library) {
		if out, err := helm(t, "lint", "--strict", chartPath(c)); err != nil {
			t.Errorf("helm lint %s: %v\n%s", c, err, out)
		}
	}
}

// TestPackage: each kind chart packages with the library inside, and the package renders as the
// chart directory does (testdata/<chart>-default.yaml).
func TestPackage(t *testing.T) {
	dest := t.TempDir()
	for _, c := range kindCharts {
		out, err := helm(t, "package", chartPath(c), "--destination", dest)
		if err != nil {
			t.Fatalf("helm package %s: %v\n%s", c, err, out)
		}
		pkg := filepath.Join(dest, c+"-"+readChart(t, chartPath(c)).Version+".tgz")
		out, err = helm(t, "template", "release", pkg, "--namespace", "ns")
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s", pkg, err, out)
		}
		want, err := os.ReadFile(filepath.Join("testdata", c+"-default.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if string(want) != out {
			t.Errorf("the package of %s renders otherwise than testdata/%s-default.yaml:\n%s", c, c, out)
		}
	}
}

// Each case renders a chart with --set values; its output is testdata/<chart>-<case>.yaml.
var templateCases = []struct {
	chart, name string
	set         []string
}{
	{"redis-operator", "default", nil},
	{"redis-operator", "options", []string{`redisOperator.watchNamespace=a\,b`, "redisOperator.metrics.enabled=false", "redisOperator.serviceDNSDomain=corp.example",
		"redisOperator.pprof.enabled=true", "manager.config.kubeClientQPS=25", "manager.config.kubeClientTimeout=2m",
		"tolerateAllTaints=true", "redisOperator.extraArgs={--zap-log-level=debug}", "rbac.enabled=false"}},
	{"redis-operator", "namespaced", []string{"rbac.scope=namespace", `redisOperator.watchNamespace=apps\, cache`}},
	{"redis-operator", "monitoring", []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true", "grafanaDashboard.namespace=grafana"}},
	{"redis-cluster", "default", nil},
	{"redis-cluster", "full", []string{"redisExporter.enabled=true", "externalConfig.enabled=true", "externalService.enabled=true",
		"serviceMonitor.enabled=true", "redisCluster.enableMasterSlaveAntiAffinity=true", "redisCluster.leader.pdb.enabled=true",
		"redisCluster.recreateStatefulSetOnUpdateInvalid=true", "redisCluster.redisSecret.secretName=pw", "redisCluster.redisSecret.secretKey=password",
		"TLS.secret.secretName=tls", "acl.secret.secretName=acl"}},
	{"redis", "default", nil},
	{"redis", "full", []string{"redisExporter.enabled=true", "externalConfig.enabled=true", "externalService.enabled=true",
		"redisStandalone.redisSecret.secretName=pw", "redisStandalone.redisSecret.secretKey=password", "nodeSelector.disk=ssd"}},
	{"redis-replication", "default", nil},
	{"redis-replication", "sentinel", []string{"sentinel.enabled=true", "redisExporter.enabled=true", "pdb.enabled=true"}},
	{"redis-sentinel", "default", nil},
	{"redis-sentinel", "full", []string{"redisSentinelConfig.masterGroupName=mymaster", "redisSentinelConfig.redisReplicationPassword.secretName=pw",
		"externalConfig.enabled=true", "redisExporter.enabled=true", "pdb.enabled=true"}},
}

func TestTemplateGolden(t *testing.T) {
	for _, c := range templateCases {
		t.Run(c.chart+"-"+c.name, func(t *testing.T) {
			args := []string{"template", "release", chartPath(c.chart), "--namespace", "ns"}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			golden := filepath.Join("testdata", c.chart+"-"+c.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./helm/ -update)", err)
			}
			if string(want) != out {
				t.Errorf("helm template differs from %s (run go test ./helm/ -update and review the diff):\n%s", golden, out)
			}
		})
	}
}

// TestSchemaRefuses: a value we cannot honour fails the install with the key's path.
func TestSchemaRefuses(t *testing.T) {
	for _, c := range []struct{ chart, set, path string }{
		{"redis-operator", "redisOperator.webhook=maybe", "/redisOperator/webhook"},
		{"redis-operator", "manager.config.kubeClientQPS=-1", "/manager/config/kubeClientQPS"},
		{"redis-operator", "manager.config.kubeClientTimeout=soon", "/manager/config/kubeClientTimeout"},
		{"redis-operator", "certmanager.enabled=yes", "/certmanager/enabled"},
		{"redis-operator", "featureGates.GenerateConfigInInitContainer=on", "/featureGates"},
		{"redis-operator", "issuer.kind=CA", "/issuer/kind"},
		{"redis-sentinel", "acl.secret.secretName=users", "/acl/secret/secretName"},
		{"redis-operator", "manager.config.execCommandTimeout=30s", "/manager/config/execCommandTimeout"},
		{"redis-operator", "rbac.scope=namespaces", "/rbac/scope"},
		{"redis-operator", "redisOperator.serviceDNSDomain=-not-a-domain-", "/redisOperator/serviceDNSDomain"},
		{"redis-operator", "notAKey=1", "notAKey"},
		{"redis-cluster", "redisCluster.leader.serviceType=NodePort", "/redisCluster/leader/serviceType"},
		{"redis-cluster", "redisCluster.clusterSize=0", "/redisCluster/clusterSize"},
		{"redis", "topologySpreadConstraints[0].maxSkew=1", "/topologySpreadConstraints"},
		{"redis-sentinel", "redisSentinelConfig.quorum=two", "/redisSentinelConfig/quorum"},
		{"redis-replication", "sentinel.resolveHostnames=maybe", "/sentinel/resolveHostnames"},
	} {
		out, err := helm(t, "template", "r", chartPath(c.chart), "--set", c.set)
		if err == nil {
			t.Errorf("%s --set %s: accepted", c.chart, c.set)
			continue
		}
		if !strings.Contains(out, c.path) {
			t.Errorf("%s --set %s: the error does not name %s:\n%s", c.chart, c.set, c.path, out)
		}
	}
}

// TestReferenceKeys: every key and default of the charts users have today is in our values.
func TestReferenceKeys(t *testing.T) {
	for _, c := range charts {
		tsv, err := os.ReadFile(filepath.Join("testdata", "reference-keys", c+".tsv"))
		if err != nil {
			t.Fatal(err)
		}
		values, err := helm(t, "show", "values", chartPath(c))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n")[1:] {
			key, _, _ := strings.Cut(line, "\t")
			leaf := key[strings.LastIndex(key, ".")+1:]
			if !strings.Contains(values, leaf+":") {
				t.Errorf("%s: values.yaml lacks %s", c, key)
			}
		}
	}
}

// TestNamespacedRBAC: with rbac.scope=namespace the operator gets Roles in the namespaces it
// watches and a ClusterRole for cluster-scoped resources only, so it can touch no Secret,
// ConfigMap, Service or StatefulSet elsewhere (kube-system included); without namespaces to
// watch the install fails.
func TestNamespacedRBAC(t *testing.T) {
	chart := chartPath("redis-operator")
	out, err := helm(t, "template", "r", chart, "--namespace", "ops", "--set", "rbac.scope=namespace", "--set", `redisOperator.watchNamespace=apps\,cache`)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	clusterScoped := map[string]bool{"customresourcedefinitions": true, "storageclasses": true, "tokenreviews": true, "subjectaccessreviews": true}
	roles := map[string]bool{}
	bindings := map[string]bool{}
	for _, doc := range strings.Split(out, "\n---") {
		var obj rbacv1.ClusterRole // a Role has the same fields
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "ClusterRole":
			for _, r := range obj.Rules {
				for _, res := range r.Resources {
					if !clusterScoped[res] {
						t.Errorf("the ClusterRole grants %v on %s, a namespaced resource", r.Verbs, res)
					}
				}
			}
		case "Role":
			roles[obj.Namespace] = true
		case "RoleBinding":
			bindings[obj.Namespace] = true
		}
	}
	for _, ns := range []string{"apps", "cache", "ops"} {
		if !roles[ns] || !bindings[ns] {
			t.Errorf("namespace %s: Role %v, RoleBinding %v", ns, roles[ns], bindings[ns])
		}
	}
	if len(roles) != 3 {
		t.Errorf("Roles in %v, want apps, cache and ops (leader election)", roles)
	}
	if out, err := helm(t, "template", "r", chart, "--set", "rbac.scope=namespace"); err == nil || !strings.Contains(out, "watchNamespace") {
		t.Errorf("rbac.scope=namespace without watchNamespace: %v\n%s", err, out)
	}
}
