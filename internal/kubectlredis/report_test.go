package kubectlredis

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// Canaries: none may appear in a report.
const (
	reportPassword   = "canary-pw-5d1c"
	reportSecretData = "canary-secret-data-93ab"
	reportConfPass   = "canary-conf-pass-77e0"
)

// reportFixtures: a RedisCluster cart with two pods (one Running, one Pending), its
// StatefulSet, a Service, a ConfigMap holding a password directive, its password Secret and
// another Secret it owns, and objects of another resource that must stay out.
func reportFixtures() (*kubefake.Clientset, func(t *testing.T) client.Client) {
	owner := metav1.OwnerReference{APIVersion: v1beta2.GroupVersion.String(), Kind: "RedisCluster", Name: "cart", UID: "uid-cart", Controller: ptr(true)}
	labels := func(instance string) map[string]string {
		return map[string]string{builder.LabelInstance: instance, builder.LabelSetupType: builder.SetupCluster}
	}
	meta := func(name, instance string, owned bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels(instance)}
		if owned {
			m.OwnerReferences = []metav1.OwnerReference{owner}
		}
		return m
	}
	cluster := &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)}
	cluster.UID = "uid-cart"
	cluster.Spec.KubernetesConfig.ExistingPasswordSecret = &v1beta2.ExistingPasswordSecret{Name: ptr("cart-password"), Key: ptr("password")}
	running := &corev1.Pod{ObjectMeta: meta("cart-leader-0", "cart", false), Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart-leader", Env: []corev1.EnvVar{{Name: "NOTE", Value: "pw " + reportPassword}}}}}}
	pending := &corev1.Pod{ObjectMeta: meta("cart-follower-0", "cart", false), Status: corev1.PodStatus{Phase: corev1.PodPending}}
	otherPod := &corev1.Pod{ObjectMeta: meta("sessions-0", "sessions", false), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	objs := []client.Object{
		cluster,
		&appsv1.StatefulSet{ObjectMeta: meta("cart-leader", "cart", true)},
		&appsv1.StatefulSet{ObjectMeta: meta("sessions", "sessions", false)},
		&corev1.Service{ObjectMeta: meta("cart-leader", "cart", true)},
		&corev1.ConfigMap{ObjectMeta: meta("cart-leader-config", "cart", true),
			Data: map[string]string{"redis.conf": "cluster-enabled yes\nrequirepass " + reportConfPass + "\nmasterauth \"" + reportConfPass + "\"\n"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("cart-leader-cart-leader-0", "cart", false)},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-password"},
			Data: map[string][]byte{"password": []byte(reportPassword + "\n")}},
		&corev1.Secret{ObjectMeta: meta("cart-auth", "cart", true), Data: map[string][]byte{"redis-password": []byte(reportSecretData)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "unrelated"}, Data: map[string][]byte{"x": []byte(reportSecretData)}},
		running, pending, otherPod,
	}
	event := func(name, kind, object, message string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Type: "Normal", Reason: "Test", Message: message,
			LastTimestamp:  metav1.NewTime(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)),
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: object}}
	}
	operator := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "redis-operator-system", Name: "redis-operator-abc",
		Labels: map[string]string{"app.kubernetes.io/name": "redis-operator"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager"}}}}
	kube := kubefake.NewClientset(running, pending, otherPod, operator,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-password"},
			Data: map[string][]byte{"password": []byte(reportPassword + "\n")}},
		event("e1", "RedisCluster", "cart", "rolled "+reportPassword),
		event("e2", "Pod", "cart-leader-0", "started"),
		event("e3", "Pod", "sessions-0", "another resource's"))
	c := func(t *testing.T) client.Client { t.Helper(); return fakeClient(t, objs...) }
	return kube, c
}

// reportConnector gives the plugin the fake clients, a fixed clock and Redis replies per pod.
func reportConnector(c client.Client, kube *kubefake.Clientset, conns map[string]*fakeConn) Connector {
	return func(_ invocation, out io.Writer) (Plugin, error) {
		return Plugin{Client: c, Kube: kube, Namespace: "shop", Out: out, Now: func() time.Time { return restartClock },
			dial: func(_ context.Context, _ *resource, pod *corev1.Pod) (redisConn, error) {
				if pod.Status.Phase != corev1.PodRunning {
					return nil, errors.New("pod " + pod.Name + " is " + string(pod.Status.Phase))
				}
				if conn, ok := conns[pod.Name]; ok {
					return conn, nil
				}
				return nil, errors.New("no such pod")
			}}, nil
	}
}

// TestReport: the bundle holds the resource, its objects (and no other resource's), the names
// of its Secrets, its events, each running pod's INFO, ROLE and CLUSTER NODES and the
// operator's log; no password or Secret data is in any file, and a part that failed (the
// Pending pod) is in errors.txt.
func TestReport(t *testing.T) {
	kube, newClient := reportFixtures()
	conn := &fakeConn{replies: map[string]any{
		"info":          "# Server\r\nredis_version:7.4.2\r\n# Keyspace\r\ndb0:keys=3,expires=0\r\n",
		"role":          []any{"master", int64(42), []any{}},
		"cluster nodes": "abc 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-16383\n",
	}}
	dir := filepath.Join(t.TempDir(), "bundle")
	var out strings.Builder
	err := RunWith(t.Context(), []string{"report", "cart", "-o", dir, "--tail", "50"}, &out,
		reportConnector(newClient(t), kube, map[string]*fakeConn{"cart-leader-0": conn}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "RedisCluster cart: report written to "+dir) || !strings.Contains(out.String(), "see errors.txt") {
		t.Errorf("output %q", out.String())
	}
	files := map[string]string{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"configmaps.yaml", "errors.txt", "events.txt", "operator-log/redis-operator-abc.log",
		"persistentvolumeclaims.yaml", "poddisruptionbudgets.yaml", "pods.yaml",
		"pods/cart-leader-0/cluster-nodes.txt", "pods/cart-leader-0/info.txt", "pods/cart-leader-0/role.txt",
		"resource.yaml", "secrets.txt", "services.yaml", "statefulsets.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("files %q\nwant  %q", names, want)
	}
	for name, content := range files {
		for _, canary := range []string{reportPassword, reportSecretData, reportConfPass} {
			if strings.Contains(content, canary) {
				t.Errorf("%s holds %q:\n%s", name, canary, content)
			}
		}
		if strings.Contains(content, "managedFields") {
			t.Errorf("%s holds managedFields", name)
		}
	}
	for file, wants := range map[string][]string{
		"resource.yaml":                        {"kind: RedisCluster", "apiVersion: redis.redis.opstreelabs.in/v1beta2", "name: cart"},
		"statefulsets.yaml":                    {"name: cart-leader", "kind: StatefulSet"},
		"pods.yaml":                            {"name: cart-leader-0", "name: cart-follower-0", "pw " + redacted},
		"configmaps.yaml":                      {"requirepass " + redacted, "masterauth " + redacted},
		"secrets.txt":                          {"cart-password", "password Secret of the spec", "cart-auth", "the resource's"},
		"events.txt":                           {"RedisCluster/cart", "rolled " + redacted, "Pod/cart-leader-0"},
		"pods/cart-leader-0/info.txt":          {"# Server\nredis_version:7.4.2\n"},
		"pods/cart-leader-0/role.txt":          {"1) \"master\"\n2) (integer) 42\n3) (empty array)\n"},
		"pods/cart-leader-0/cluster-nodes.txt": {"myself,master"},
		"errors.txt":                           {"pods/cart-follower-0/: pod cart-follower-0 is Pending"},
	} {
		for _, w := range wants {
			if !strings.Contains(files[file], w) {
				t.Errorf("%s lacks %q:\n%s", file, w, files[file])
			}
		}
	}
	for file, unwanted := range map[string]string{"statefulsets.yaml": "name: sessions", "pods.yaml": "sessions-0",
		"events.txt": "another resource's", "secrets.txt": "unrelated"} {
		if strings.Contains(files[file], unwanted) {
			t.Errorf("%s holds another resource's %q:\n%s", file, unwanted, files[file])
		}
	}
	if !conn.closed {
		t.Error("the pod's connection was left open")
	}
}

// TestReportWithoutOperator: an operator not found is noted in errors.txt; the default
// directory is named after the resource and the time.
func TestReportWithoutOperator(t *testing.T) {
	t.Chdir(t.TempDir())
	repl := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)}
	var out strings.Builder
	if err := RunWith(t.Context(), []string{"report", "sessions", "--operator-namespace", "ops"}, &out,
		reportConnector(fakeClient(t, repl), kubefake.NewClientset(), nil)); err != nil {
		t.Fatal(err)
	}
	errs, err := os.ReadFile(filepath.Join("redis-report-sessions-20261206T090000Z", "errors.txt"))
	if err != nil {
		t.Fatalf("%v (output %q)", err, out.String())
	}
	if !strings.Contains(string(errs), "no pod labelled app.kubernetes.io/name=redis-operator in namespace ops") {
		t.Errorf("errors.txt:\n%s", errs)
	}
}

// TestRedact: every password given, and the value of each password directive, is replaced.
func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"requirepass s3cret\nport 6379", "requirepass " + redacted + "\nport 6379"},
		{`masterauth "with space"`, "masterauth " + redacted},
		{"sentinel auth-pass mymaster pw1", "sentinel auth-pass mymaster " + redacted},
		{"  REQUIREPASS\tx", "  REQUIREPASS\t" + redacted},
		{"the password is hunter2, hunter22 too", "the password is " + redacted + ", " + redacted + " too"},
		{"nothing here", "nothing here"},
	} {
		if got := redact(tc.in, []string{"hunter2", "hunter22", ""}); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
