package monitoring

import (
	"slices"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/test/e2e/framework"
)

func repo(t *testing.T) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`redis_operator_resource_ready == 0`, []string{"redis_operator_resource_ready"}},
		{`sum by (kind, phase) (rate(redis_operator_reconcile_errors_total{namespace=~"$namespace"}[5m]))`, []string{"redis_operator_reconcile_errors_total"}},
		{`up{container="redis-exporter"} == 0 or redis_up == 0`, []string{"up", "redis_up"}},
		{`absent(controller_runtime_reconcile_total{controller="rediscluster"})`, []string{"controller_runtime_reconcile_total"}},
		{`rate(a_total[1m]) / on (pod) group_left (node) b_info > 1e3 offset 5m`, []string{"a_total", "b_info"}},
		{`redis_operator_replicas_linked < bool redis_operator_replicas_desired`, []string{"redis_operator_replicas_linked", "redis_operator_replicas_desired"}},
	} {
		if got := MetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("MetricNames(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}

// Every panel of the dashboard has a query, and the rules and the dashboard name metrics of
// the operator or of the exporter only (that they exist in a real scrape, the helm e2e checks).
func TestDashboardQueries(t *testing.T) {
	root := repo(t)
	exprs, err := DashboardExprs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Errorf("%d queries in the dashboard", len(exprs))
	}
	used, err := UsedMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range used {
		if !strings.HasPrefix(m, "redis_") && !strings.HasPrefix(m, "controller_runtime_") && !slices.Contains(Generated, m) {
			t.Errorf("metric %s is neither the operator's nor the exporter's", m)
		}
	}
	t.Logf("metrics used: %v", used)
}

func TestScrapedNames(t *testing.T) {
	names := ScrapedNames("# HELP a_seconds x\n# TYPE a_seconds histogram\na_seconds_bucket{le=\"1\"} 1\n# TYPE b_total counter\nb_total{x=\"y\"} 3\nc 1\n")
	for _, n := range []string{"a_seconds", "a_seconds_bucket", "a_seconds_count", "b_total", "c"} {
		if !names[n] {
			t.Errorf("%s not found in %v", n, names)
		}
	}
}

// The metrics the scrape check lets off are ones the rules or the dashboard use: a name left
// in the list after its last query went would hide nothing, but would say something untrue.
func TestOnlyWithBackupsAreUsed(t *testing.T) {
	used, err := UsedMetrics(repo(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range OnlyWithBackups {
		if !slices.Contains(used, m) {
			t.Errorf("%s is in OnlyWithBackups but no rule or panel uses it", m)
		}
	}
}
