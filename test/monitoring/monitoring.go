// Package monitoring reads the alert rules (config/prometheus) and the Grafana dashboard
// (config/grafana) the project ships, and names the metrics their queries use, so that tests
// can check each one against promtool and against a real scrape.
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Paths of the shipped files, relative to the repository's root.
const (
	RulesFile     = "config/prometheus/alerts.rules.yaml"
	RulesTestFile = "config/prometheus/alerts_test.yaml"
	DashboardFile = "config/grafana/redis-operator-dashboard.json"
)

// Generated is the set of series Prometheus itself makes, which no scrape exposes.
var Generated = []string{"up"}

// OnlyWithBackups are the operator's series that exist only once a RedisBackup has completed or
// a RedisBackupSchedule runs (a labelled metric with no series is not exposed at all), which a
// scrape of an operator that backs nothing up does not have.
var OnlyWithBackups = []string{
	"redis_operator_backup_last_success_timestamp_seconds",
	"redis_operator_backup_schedule_created_timestamp_seconds",
	"redis_operator_backup_schedule_interval_seconds",
}

// RuleExprs returns the expression of every rule in the rules file.
func RuleExprs(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, RulesFile))
	if err != nil {
		return nil, err
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Expr string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", RulesFile, err)
	}
	var out []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out, nil
}

// DashboardExprs returns the query of every panel target, and of every query variable, of the
// dashboard.
func DashboardExprs(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, err
	}
	type panel struct {
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	var out []string
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			if s, ok := q["query"].(string); ok {
				// label_values(selector, label): the selector is what names a metric.
				if inner, ok := strings.CutPrefix(s, "label_values("); ok {
					if i := strings.LastIndex(inner, ","); i >= 0 {
						s = inner[:i]
					}
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	matchers      = regexp.MustCompile(`\{[^}]*\}`)
	ranges        = regexp.MustCompile(`\[[^\]]*\]`)
	labelLists    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords      = []string{"and", "or", "unless", "bool", "offset", "inf", "nan", "Inf", "NaN"}
)

// MetricNames returns the metric names a PromQL expression selects: identifiers that are not
// functions or aggregations (followed by a parenthesis), keywords, label names (inside braces or
// grouping lists) or parts of numbers and durations.
func MetricNames(expr string) []string {
	e := stringLiteral.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, " ")
	e = ranges.ReplaceAllString(e, " ")
	e = labelLists.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(e[loc[0]-1])) {
			continue // 1e3, 5m
		}
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") || slices.Contains(keywords, name) {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// UsedMetrics returns every metric name the rules and the dashboard use, sorted.
func UsedMetrics(root string) ([]string, error) {
	rules, err := RuleExprs(root)
	if err != nil {
		return nil, err
	}
	dash, err := DashboardExprs(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range append(rules, dash...) {
		for _, n := range MetricNames(e) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ScrapedNames returns the metric names of a Prometheus text exposition, with the series a
// histogram or summary exposes under its name (_bucket, _sum, _count).
func ScrapedNames(body string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				names[f[0]] = true
				if f[1] == "histogram" || f[1] == "summary" {
					names[f[0]+"_bucket"], names[f[0]+"_sum"], names[f[0]+"_count"] = true, true, true
				}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := identifier.FindString(line); m != "" && strings.HasPrefix(line, m) {
			names[m] = true
		}
	}
	return names
}
