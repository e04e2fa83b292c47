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

// The longest name admission takes for each kind runs to Ready: every object it derives
// (StatefulSets, their pods' controller-revision-hash label, Services, PVC-less pods) exists.
func TestLongestAdmittedNamesRunToReady(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "names")
	// Distinct first letters: two kinds of one name in one namespace would share objects.
	name := func(first string, n int) string { return first + strings.Repeat("o", n-2) + "g" }
	standalone, cluster, replication := name("s", 52), name("c", 43), name("r", 52)
	sb.Apply(t, ns, fmt.Sprintf(`
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: %s
spec:
  kubernetesConfig:
    image: redis:7.0.15
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata:
  name: %s
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisFollower:
    replicas: 0
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: %s
spec:
  clusterSize: 2
  kubernetesConfig:
    image: redis:7.0.15
`, standalone, cluster, replication))
	for _, obj := range []client.Object{
		&v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: standalone}},
		&v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster}},
		&v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: replication}},
	} {
		sb.WaitFor(t, ns, fmt.Sprintf("%T %s Ready", obj, obj.GetName()), 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, "", err
			}
			conditions := commonStatus(obj).Conditions
			ready := meta.FindStatusCondition(conditions, v1beta2.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", ready), nil
		})
	}
}

func commonStatus(obj client.Object) v1beta2.CommonStatus {
	switch o := obj.(type) {
	case *v1beta2.Redis:
		return o.Status.CommonStatus
	case *v1beta2.RedisCluster:
		return o.Status.CommonStatus
	case *v1beta2.RedisReplication:
		return o.Status.CommonStatus
	case *v1beta2.RedisSentinel:
		return o.Status.CommonStatus
	}
	return v1beta2.CommonStatus{}
}
