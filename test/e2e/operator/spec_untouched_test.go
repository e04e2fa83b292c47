package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// A resource of each kind, once Ready, is the spec its user wrote: generation 1, and every
// managed-fields entry that covers spec is the user's apply, none the operator's (it adds its
// finalizer with a patch of metadata.finalizers alone and writes only the status).
func TestTheOperatorNeverWritesASpec(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "spec-untouched")
	for _, file := range []string{"redis_v1beta2_redis_minimal.yaml", "redis_v1beta2_rediscluster_minimal.yaml",
		"redis_v1beta2_redisreplication_minimal.yaml", "redis_v1beta2_redissentinel_minimal.yaml"} {
		sb.Apply(t, ns, sample(t, file))
	}
	for _, obj := range []client.Object{
		&v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-standalone"}},
		&v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-cluster"}},
		&v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-replication"}},
		&v1beta2.RedisSentinel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-sentinel"}},
	} {
		sb.WaitFor(t, ns, fmt.Sprintf("%T %s Ready", obj, obj.GetName()), 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(commonStatus(obj).Conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && len(obj.GetFinalizers()) > 0, fmt.Sprintf("%+v", ready), nil
		})
		if obj.GetGeneration() != 1 {
			t.Errorf("%T %s: generation %d, want 1: its spec was written after the user's apply", obj, obj.GetName(), obj.GetGeneration())
		}
		var appliers []string
		for _, m := range obj.GetManagedFields() {
			if m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:spec"`) {
				appliers = append(appliers, fmt.Sprintf("%s (%s)", m.Manager, m.Operation))
				if m.Operation != metav1.ManagedFieldsOperationApply {
					t.Errorf("%T %s: %s manages spec fields by %s: only the user's apply should", obj, obj.GetName(), m.Manager, m.Operation)
				}
			}
		}
		t.Logf("%T %s: spec managed by %v", obj, obj.GetName(), appliers)
	}
}
