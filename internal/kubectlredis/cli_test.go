package kubectlredis

import (
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rediskube/redis-operator/internal/version"
)

// noCluster is a connector that fails the test: the invocation should have been refused (or
// answered) before any API call.
func noCluster(t *testing.T) Connector {
	t.Helper()
	return func(invocation, io.Writer) (Plugin, error) {
		t.Helper()
		t.Fatal("the plugin connected to the cluster")
		return Plugin{}, nil
	}
}

// TestVersionNeedsNoCluster: `kubectl redis version --client` answers from the binary alone,
// even with a kubeconfig that does not exist.
func TestVersionNeedsNoCluster(t *testing.T) {
	var out strings.Builder
	if err := Run(t.Context(), []string{"version", "--client", "--kubeconfig", "/nonexistent"}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), version.String("kubectl-redis")+"\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// TestArgumentErrorsBeforeAnyAPICall: a wrong command line is refused with the command's
// usage, and nothing reaches the cluster.
func TestArgumentErrorsBeforeAnyAPICall(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "status needs NAME"},
		{[]string{"status", "a", "b"}, "at most 1 argument"},
		{[]string{"failover", "a", "b", "c"}, "at most 2 argument"},
		{[]string{"failover", "--client", "a"}, "failover takes no --client flag"},
		{[]string{"status", "a", "--kind", "memcached"}, `unknown kind "memcached"`},
		{[]string{"status", "a", "--bogus"}, "unknown flag --bogus"},
		{[]string{"status", "a", "-n"}, "flag -n needs a value"},
		{[]string{"version", "--client=yes"}, "flag --client takes no value"},
		{[]string{"version", "extra"}, "at most 0 argument"},
		{[]string{"frobnicate", "a"}, `unknown command "frobnicate"`},
		{[]string{"restart"}, "restart needs NAME [POD]"},
		{[]string{"restart", "a", "b", "c"}, "at most 2 argument"},
		{[]string{"restart", "a", "-o", "json"}, "restart takes no --output flag"},
		{[]string{"report"}, "report needs NAME"},
		{[]string{"report", "a", "b"}, "at most 1 argument"},
		{[]string{"report", "a", "--tail", "0"}, `--tail "0"`},
		{[]string{"report", "a", "--tail=many"}, `--tail "many"`},
		{[]string{"report", "a", "--master"}, "report takes no --master flag"},
		{[]string{"cli"}, "cli needs NAME [POD]"},
		{[]string{"cli", "a", "b", "c"}, "at most 2 argument"},
		{[]string{"cli", "a", "--"}, "cli: no command after --"},
		{[]string{"cli", "a", "--master", "--kind", "redissentinel"}, "a RedisSentinel has no master"},
		{[]string{"cli", "a", "--tail", "3"}, "cli takes no --tail flag"},
		{[]string{"status", "a", "--", "INFO"}, "status takes no command after --"},
	} {
		var out strings.Builder
		err := RunWith(t.Context(), tc.args, &out, noCluster(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
			continue
		}
		if tc.args[0] != "frobnicate" && !strings.Contains(err.Error(), "usage: kubectl redis "+tc.args[0]) &&
			!strings.Contains(err.Error(), "flag") {
			t.Errorf("%q: error %v does not give the usage", tc.args, err)
		}
	}
}

// TestHelp: the plugin's help lists every command; each command's help tells its arguments
// and its own flags, whatever else is on the line.
func TestHelp(t *testing.T) {
	var out strings.Builder
	if err := RunWith(t.Context(), nil, &out, noCluster(t)); err != nil {
		t.Fatal(err)
	}
	for _, name := range commandNames() {
		if !strings.Contains(out.String(), "\n  "+name+" ") {
			t.Errorf("help lacks %s:\n%s", name, out.String())
		}
	}
	for _, args := range [][]string{{"status", "--help"}, {"help", "status"}, {"status", "a", "b", "-h"}} {
		out.Reset()
		if err := RunWith(t.Context(), args, &out, noCluster(t)); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if !strings.HasPrefix(out.String(), "Usage: kubectl redis status NAME [-n NAMESPACE] [--kind KIND]") ||
			!strings.Contains(out.String(), "--kubeconfig FILE") || strings.Contains(out.String(), "--client") {
			t.Errorf("%q:\n%s", args, out.String())
		}
	}
}

// TestCommandWordsAreNotFlags: after "--" every word is the Redis command's, even one that
// looks like a flag of the plugin; before it, flags go anywhere.
func TestCommandWordsAreNotFlags(t *testing.T) {
	inv, _, err := parseArgs([]string{"cli", "-n", "shop", "cart", "--master", "--", "CLIENT", "KILL", "-n", "--kind"})
	if err != nil {
		t.Fatal(err)
	}
	if inv.value("namespace") != "shop" || !inv.set("master") || inv.set("kind") || len(inv.args) != 1 ||
		strings.Join(inv.words, " ") != "CLIENT KILL -n --kind" {
		t.Errorf("%+v", inv)
	}
	if inv, _, err := parseArgs([]string{"cli", "cart"}); err != nil || inv.words != nil {
		t.Errorf("without --: words %q, %v", inv.words, err)
	}
}

// TestCommandHelpOverridesFlagDocs: report's -o is a directory, in its usage and its help,
// while status keeps -o FORMAT; cli's usage tells the command after --.
func TestCommandHelpOverridesFlagDocs(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := RunWith(t.Context(), args, &out, noCluster(t)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	report := help("report", "--help")
	if !strings.Contains(report, "[-o DIR]") || !strings.Contains(report, "-o, --output DIR") ||
		strings.Contains(report, "FORMAT") || !strings.Contains(report, "--operator-namespace NAMESPACE") {
		t.Errorf("report help:\n%s", report)
	}
	if status := help("status", "--help"); !strings.Contains(status, "-o, --output FORMAT") {
		t.Errorf("status help:\n%s", status)
	}
	if cli := help("help", "cli"); !strings.HasPrefix(cli, "Usage: kubectl redis cli NAME [POD] [-n NAMESPACE] [--kind KIND] [--master] [-- COMMAND [ARG...]]") {
		t.Errorf("cli help:\n%s", cli)
	}
	if restart := help("restart", "-h"); !strings.Contains(restart, RestartAnnotation) {
		t.Errorf("restart help:\n%s", restart)
	}
}

// TestVersionWarnsOfSkew: the operator's version comes from the chart's label or the image
// tag, and a minor version other than the plugin's is warned of.
func TestVersionWarnsOfSkew(t *testing.T) {
	deployment := func(ns string, labels map[string]string, image string) *appsv1.Deployment {
		labels["app.kubernetes.io/name"] = "redis-operator"
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "redis-operator", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image}}}}}}
	}
	kube := fake.NewClientset(
		deployment("chart", map[string]string{"app.kubernetes.io/version": "1.4.2"}, "example/redis-operator@sha256:ab"),
		deployment("kustomize", map[string]string{}, "registry:5000/redis-operator:v1.3.0"),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "x"}},
	)
	var out strings.Builder
	if err := (Plugin{Kube: kube, Out: &out}).OperatorVersions(t.Context(), "1.4.0"); err != nil {
		t.Fatal(err)
	}
	want := "operator chart/redis-operator: 1.4.2\n" +
		"operator kustomize/redis-operator: 1.3.0\n" +
		"WARNING: plugin 1.4.0 and operator 1.3.0 differ in minor version: use the plugin of the operator's release\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if w := skewWarning("dev", "1.4.0"); !strings.Contains(w, "development build") {
		t.Errorf("dev plugin: %q", w)
	}
}
