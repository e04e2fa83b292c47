package kubectlredis

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestPauseResume: pause sets the skip-reconcile annotation of the resource's kind, which the
// controllers read, leaving the other annotations; resume removes it.
func TestPauseResume(t *testing.T) {
	c := fakeClient(t,
		&v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", map[string]string{"team": "payments"})},
		&v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)})
	connector := fakeConnector(c, nil)
	run := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := RunWith(t.Context(), args, &out, connector); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	annotations := func(obj client.Object) map[string]string {
		t.Helper()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		return obj.GetAnnotations()
	}
	if out := run("pause", "cart"); !strings.Contains(out, "RedisCluster cart paused") {
		t.Errorf("pause said %q", out)
	}
	run("pause", "sessions", "--kind", "RedisReplication")
	cart := &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)}
	if a := annotations(cart); a["rediscluster.opstreelabs.in/skip-reconcile"] != "true" || a["team"] != "payments" || len(a) != 2 {
		t.Errorf("paused cluster annotations %v", a)
	}
	sessions := &v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)}
	if a := annotations(sessions); a["redisreplication.opstreelabs.in/skip-reconcile"] != "true" {
		t.Errorf("paused replication annotations %v", a)
	}
	run("resume", "cart")
	if a := annotations(cart); len(a) != 1 || a["team"] != "payments" {
		t.Errorf("resumed cluster annotations %v", a)
	}
	var out strings.Builder
	if err := RunWith(t.Context(), []string{"pause", "missing"}, &out, connector); err == nil || !strings.Contains(err.Error(), `named "missing"`) {
		t.Errorf("pause of a missing resource: %v", err)
	}
}
