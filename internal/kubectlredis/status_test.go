package kubectlredis

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

func TestParseArgs(t *testing.T) {
	inv, _, err := parseArgs([]string{"status", "shop", "-n", "prod", "--kind=rediscluster"})
	if err != nil || inv.command != "status" || inv.args[0] != "shop" || inv.value("namespace") != "prod" || inv.value("kind") != "rediscluster" {
		t.Fatalf("%+v %v", inv, err)
	}
	if _, _, err := parseArgs([]string{"status", "-n"}); err == nil {
		t.Error("a flag without its value is accepted")
	}
	if k, err := normalizeKind("redisclusters"); err != nil || k != "RedisCluster" {
		t.Errorf("normalizeKind = %q %v", k, err)
	}
	if k, err := normalizeKind("redis"); err != nil || k != "Redis" {
		t.Errorf("normalizeKind(redis) = %q %v", k, err)
	}
}

func TestRender(t *testing.T) {
	pods := []PodStatus{
		{Pod: "shop-leader-0", IP: "10.0.0.1", Node: "node-a", Ready: true, Role: "master", Offset: 900, Lag: 0,
			Slots: []redis.SlotRange{{Start: 0, End: 5460}}, Keys: keysOf("keys=12,expires=0,avg_ttl=0"), Memory: "1.2M"},
		{Pod: "shop-follower-0", IP: "10.0.0.4", Node: "node-b", Ready: true, Role: "slave", Offset: 850, Lag: -1,
			masterIP: "10.0.0.1", masterPort: 6379, Link: "connected"},
		{Pod: "shop-follower-1", Role: "?", Lag: -1, Error: "pod Pending"},
	}
	resolveMasters(pods)
	var b bytes.Buffer
	conds := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterOK", Message: "all slots served"}}
	if err := Render(&b, "RedisCluster", "shop", "Ready", "", pods, conds, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"RedisCluster shop: Ready",
		"shop-leader-0", "0-5460", "12", "1.2M",
		"shop-follower-0  true   slave   shop-leader-0", "connected", "node-b",
		"shop-follower-1: pod Pending",
		"Ready", "ClusterOK", "Last events:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if pods[1].Lag != 50 {
		t.Errorf("follower lag = %d, want 50", pods[1].Lag)
	}
}

// TestStatusDocuments: status -o json and -o yaml hold the resource, its pods and its events;
// pods not running are reported without being dialled.
func TestStatusDocuments(t *testing.T) {
	repl := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)}
	repl.Status.State = "Failed"
	repl.Status.Reason = "no master"
	repl.Status.Conditions = readyCondition(metav1.ConditionFalse, "NoMaster")
	pod := func(name, setup string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Labels: map[string]string{builder.LabelInstance: "sessions", builder.LabelSetupType: setup}},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	kube := kubefake.NewClientset(pod("sessions-1", builder.SetupReplication), pod("sessions-0", builder.SetupReplication),
		pod("other-0", builder.SetupCluster),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "e1"}, Type: "Warning", Reason: "NoMaster",
			Message: "no pod is master", Count: 3, LastTimestamp: metav1.Now(),
			InvolvedObject: corev1.ObjectReference{Kind: "RedisReplication", Name: "sessions"}})
	connector := fakeConnector(fakeClient(t, repl), kube)
	for _, format := range []string{"json", "yaml"} {
		var out strings.Builder
		if err := RunWith(t.Context(), []string{"status", "sessions", "-o", format}, &out, connector); err != nil {
			t.Fatal(err)
		}
		var doc StatusDocument
		if err := yaml.Unmarshal([]byte(out.String()), &doc); err != nil { // YAML reads JSON too
			t.Fatalf("%s: %v\n%s", format, err, out.String())
		}
		if doc.Kind != "RedisReplication" || doc.Name != "sessions" || doc.Namespace != "shop" || doc.State != "Failed" || doc.Reason != "no master" {
			t.Errorf("%s: resource %+v", format, doc)
		}
		if len(doc.Pods) != 2 || doc.Pods[0].Pod != "sessions-0" || doc.Pods[0].Error != "pod Pending" || doc.Pods[0].Lag != nil ||
			doc.Pods[0].Role != "?" || doc.Pods[1].Node != "node-a" {
			t.Errorf("%s: pods %+v", format, doc.Pods)
		}
		if len(doc.Conditions) != 1 || doc.Conditions[0].Reason != "NoMaster" {
			t.Errorf("%s: conditions %+v", format, doc.Conditions)
		}
		if len(doc.Events) != 1 || doc.Events[0].Message != "no pod is master" || doc.Events[0].Count != 3 {
			t.Errorf("%s: events %+v", format, doc.Events)
		}
		if format == "json" && !strings.HasPrefix(out.String(), "{\n  \"kind\": \"RedisReplication\"") {
			t.Errorf("not indented JSON:\n%s", out.String())
		}
	}
}
