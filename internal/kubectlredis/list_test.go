package kubectlredis

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func objectMeta(ns, name string, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations,
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}
}

func readyCondition(status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: v1beta2.ConditionReady, Status: status, Reason: reason, Message: reason + " message"}}
}

func listFixtures() []client.Object {
	cluster := &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)}
	cluster.Status.State = "Ready"
	cluster.Status.Conditions = readyCondition(metav1.ConditionTrue, "ClusterOK")
	replication := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)}
	replication.Status.Conditions = append(readyCondition(metav1.ConditionFalse, "NoMaster"),
		metav1.Condition{Type: v1beta2.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "NoMaster"})
	paused := &v1beta2.Redis{ObjectMeta: objectMeta("shop", "cache", map[string]string{"redis.opstreelabs.in/skip-reconcile": "true"})}
	paused.Status.Conditions = readyCondition(metav1.ConditionTrue, "PodReady")
	fresh := &v1beta2.RedisSentinel{ObjectMeta: objectMeta("shop", "watch", nil)}
	elsewhere := &v1beta2.Redis{ObjectMeta: objectMeta("billing", "ledger", nil)}
	elsewhere.Status.Conditions = readyCondition(metav1.ConditionFalse, "PodNotReady")
	return []client.Object{cluster, replication, paused, fresh, elsewhere}
}

// fakeConnector gives the plugin clients over fixed objects in namespace shop.
func fakeConnector(c client.Client, kube *kubefake.Clientset) Connector {
	return func(_ invocation, out io.Writer) (Plugin, error) {
		return Plugin{Client: c, Kube: kube, Namespace: "shop", Out: out}, nil
	}
}

func listRun(t *testing.T, args ...string) string {
	t.Helper()
	var out strings.Builder
	if err := RunWith(t.Context(), append([]string{"list"}, args...), &out, fakeConnector(fakeClient(t, listFixtures()...), nil)); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestList: one line per resource of the namespace, its health read from the skip-reconcile
// annotation and the Ready and Degraded conditions.
func TestList(t *testing.T) {
	out := listRun(t)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "KIND ") {
		t.Fatalf("want a header and 4 lines:\n%s", out)
	}
	for i, want := range [][]string{
		{"Redis", "cache", "Paused", "-", "True", "PodReady"},
		{"RedisCluster", "cart", "Ready", "Ready", "True", "ClusterOK"},
		{"RedisReplication", "sessions", "Degraded", "-", "False", "NoMaster"},
		{"RedisSentinel", "watch", "Unknown", "-", "-", "-"},
	} {
		if got := strings.Fields(lines[i+1]); strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
			t.Errorf("line %d: %q, want %q", i+1, got, want)
		}
	}
	if strings.Contains(out, "ledger") {
		t.Errorf("another namespace's resource listed:\n%s", out)
	}

	all := listRun(t, "-A", "--kind", "redis")
	lines = strings.Split(strings.TrimSpace(all), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE ") ||
		!strings.HasPrefix(lines[1], "billing ") || !strings.Contains(lines[1], "NotReady") || !strings.HasPrefix(lines[2], "shop ") {
		t.Errorf("-A --kind redis:\n%s", all)
	}
}

// TestListDocuments: -o json and -o yaml hold the same items, with the fields the table shows.
func TestListDocuments(t *testing.T) {
	var doc struct{ Items []ListItem }
	if err := json.Unmarshal([]byte(listRun(t, "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Items) != 4 || doc.Items[2].Kind != "RedisReplication" || doc.Items[2].Health != HealthDegraded ||
		doc.Items[2].Cause != "NoMaster" || doc.Items[2].Message != "NoMaster message" || doc.Items[2].Namespace != "shop" {
		t.Errorf("json: %+v", doc.Items)
	}
	var fromYAML struct{ Items []ListItem }
	if err := yaml.Unmarshal([]byte(listRun(t, "-o=yaml", "-A")), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if len(fromYAML.Items) != 5 || fromYAML.Items[0].Name != "ledger" {
		t.Errorf("yaml: %+v", fromYAML.Items)
	}
	var out strings.Builder
	err := RunWith(t.Context(), []string{"list", "-o", "wide"}, &out, noCluster(t))
	if err == nil || !strings.Contains(err.Error(), `unknown output format "wide"`) {
		t.Errorf("-o wide: %v", err)
	}
}
