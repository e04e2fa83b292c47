package operator

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// storageSpec is a storage section of the given data size (and node-conf size, for a cluster,
// when not "") on the sandbox's default StorageClass, which allows expansion.
func storageSpec(data, nodeConf string) string {
	s := fmt.Sprintf(`
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: %s}}
`, data)
	if nodeConf != "" {
		s += fmt.Sprintf(`    nodeConfVolume: true
    nodeConfVolumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: %s}}
`, nodeConf)
	}
	return s
}

// podUIDs maps the names of the running pods of an instance to their UIDs.
func podUIDs(t *testing.T, ns, instance string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := sb.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": instance}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// waitGrown waits until every claim of the StatefulSets reports size (data) or nodeConf and
// the StatefulSets have been recreated with those template sizes and storageCapacity.
func waitGrown(t *testing.T, ns string, statefulSets []string, size, nodeConf string) {
	t.Helper()
	sb.WaitFor(t, ns, "volumes grown to "+size, 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		var claims corev1.PersistentVolumeClaimList
		if err := sb.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		for _, claim := range claims.Items {
			want := resource.MustParse(size)
			if strings.HasPrefix(claim.Name, "node-conf-") {
				want = resource.MustParse(nodeConf)
			}
			if got := claim.Status.Capacity[corev1.ResourceStorage]; got.Cmp(want) != 0 {
				return false, fmt.Sprintf("claim %s has %s, want %s", claim.Name, got.String(), want.String()), nil
			}
		}
		wantBytes := resource.MustParse(size)
		for _, name := range statefulSets {
			var sts appsv1.StatefulSet
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err != nil {
				return false, "", client.IgnoreNotFound(err) // between its deletion and its recreation
			}
			if got := sts.Annotations["storageCapacity"]; got != strconv.FormatInt(wantBytes.Value(), 10) {
				return false, fmt.Sprintf("StatefulSet %s storageCapacity %q", name, got), nil
			}
			for _, tmpl := range sts.Spec.VolumeClaimTemplates {
				want := resource.MustParse(size)
				if tmpl.Name == "node-conf" {
					want = resource.MustParse(nodeConf)
				}
				if got := tmpl.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(want) != 0 {
					return false, fmt.Sprintf("StatefulSet %s template %s at %s", name, tmpl.Name, got.String()), nil
				}
			}
		}
		return len(claims.Items) > 0, fmt.Sprintf("%d claims", len(claims.Items)), nil
	})
}

func assertSamePods(t *testing.T, before, after map[string]types.UID) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("pods before %v, after %v", before, after)
	}
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("pod %s was recreated by the storage growth", name)
		}
	}
}

// TestReplicationStorageGrowsInPlace grows a RedisReplication's volumes: the claims and the
// StatefulSet get the new size, no pod is recreated, and the data written before is served.
func TestReplicationStorageGrowsInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "grow-replication")
	const name = "grow"
	head := "apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: RedisReplication\nmetadata:\n  name: " + name +
		"\nspec:\n  clusterSize: 2\n  kubernetesConfig:\n    image: redis:7.0.15\n"
	sb.Apply(t, ns, head+storageSpec("1Gi", ""))
	cr := &v1beta2.RedisReplication{}
	waitReady := func(since time.Time) {
		t.Helper()
		sb.WaitFor(t, ns, "RedisReplication Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			ok := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cr.Generation &&
				!ready.LastTransitionTime.Time.Before(since.Truncate(time.Second)) && cr.Status.ReadyReplicas == 2
			return ok, fmt.Sprintf("%s: %s", cr.Status.State, cr.Status.Reason), nil
		})
	}
	waitReady(time.Now().Add(-time.Hour))
	master := getPod(t, ns, cr.Status.MasterNode)
	rdb := sb.Redis(t, master)
	for i := range 100 {
		if err := rdb.Set(ctx, "k-"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	before := podUIDs(t, ns, name)

	grown := faultTime()
	sb.Apply(t, ns, head+storageSpec("2Gi", ""))
	waitGrown(t, ns, []string{name}, "2Gi", "")
	waitReady(grown)
	assertSamePods(t, before, podUIDs(t, ns, name))
	master = getPod(t, ns, cr.Status.MasterNode)
	rdb = sb.Redis(t, master)
	for i := range 100 {
		if got, err := rdb.Get(ctx, "k-"+strconv.Itoa(i)).Int(); err != nil || got != i {
			t.Fatalf("GET k-%d = %d, %v after the growth", i, got, err)
		}
	}
}

// TestClusterStorageGrowsInPlace grows a RedisCluster's data and node-conf volumes: every claim
// of both StatefulSets grows, the StatefulSets are recreated with the new templates, no pod is
// recreated, and every key written before is served.
func TestClusterStorageGrowsInPlace(t *testing.T) {
	t.Parallel()
	start := time.Now()
	head := "apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: RedisCluster\nmetadata:\n  name: grow\n" +
		"spec:\n  clusterSize: 3\n  kubernetesConfig:\n    image: redis:7.0.15\n"
	c := newCluster(t, head+storageSpec("1Gi", "100Mi"))
	c.waitReady(start)
	c.writeKeys("g", 300)
	before := podUIDs(t, c.ns, c.name)

	grown := faultTime()
	sb.Apply(t, c.ns, head+storageSpec("2Gi", "200Mi"))
	waitGrown(t, c.ns, []string{"grow-leader", "grow-follower"}, "2Gi", "200Mi")
	c.waitReady(grown)
	assertSamePods(t, before, podUIDs(t, c.ns, c.name))
	c.readKeys("g", 300)
}

// TestUnboundClaimsAreNamedAndDeletionLeavesNothing runs a replication whose claims name a
// StorageClass that does not exist (its pods stay Pending) beside a Redis whose claim binds:
// the replication's status names the class, and deleting both leaves no claim, pod or
// StatefulSet behind, Pending or bound (the StatefulSet controller recreated the claim of a
// Pending pod deleted too early).
func TestUnboundClaimsAreNamedAndDeletionLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "leftovers")
	sb.Apply(t, ns, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: unbound
spec:
  clusterSize: 2
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
  storage:
    volumeClaimTemplate:
      spec:
        storageClassName: no-such-class
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata:
  name: bound
spec:
  kubernetesConfig:
    image: quay.io/opstree/redis:v7.0.15
`+storageSpec("1Gi", ""))
	replication := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unbound"}}
	sb.WaitFor(t, ns, "the missing StorageClass named on the replication", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(replication), replication); err != nil {
			return false, "", err
		}
		d := meta.FindStatusCondition(replication.Status.Conditions, v1beta2.ConditionDegraded)
		ok := d != nil && d.Status == metav1.ConditionTrue && d.Reason == "Unschedulable" &&
			strings.Contains(d.Message, `StorageClass "no-such-class" does not exist`)
		return ok, fmt.Sprintf("%+v", d), nil
	})
	standalone := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bound"}}
	sb.WaitFor(t, ns, "the Redis Ready on its bound claim", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKeyFromObject(standalone), standalone); err != nil {
			return false, "", err
		}
		r := meta.FindStatusCondition(standalone.Status.Conditions, v1beta2.ConditionReady)
		return r != nil && r.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", r), nil
	})
	// The replication's pods start one at a time: only the first, Pending, has a claim yet.
	var claims corev1.PersistentVolumeClaimList
	if err := sb.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 2 {
		t.Fatalf("want 2 claims before the deletion (unbound-unbound-0, bound-bound-0), got %d (%v)", len(claims.Items), err)
	}

	for _, obj := range []client.Object{replication, standalone} {
		if err := sb.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	sb.WaitFor(t, ns, "both resources gone", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, obj := range []client.Object{replication, standalone} {
			err := sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if err == nil || !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s still there (finalizers %v): %v", obj.GetName(), obj.GetFinalizers(), err), nil
			}
		}
		return true, "", nil
	})
	// Whatever would recreate a claim does so within a second or two: look for a while.
	leftovers := leftoversIn(ns)
	sb.WaitFor(t, ns, "nothing left", time.Minute, leftovers)
	time.Sleep(10 * time.Second)
	if ok, left, err := leftovers(ctx); err != nil || !ok {
		t.Fatalf("after the deletion, these came back: %s (%v)", left, err)
	}
}

// leftoversIn is a condition that holds once namespace ns has no claim, pod or StatefulSet
// left, naming those it still has.
func leftoversIn(ns string) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var claims corev1.PersistentVolumeClaimList
		var pods corev1.PodList
		var sets appsv1.StatefulSetList
		for _, list := range []client.ObjectList{&claims, &pods, &sets} {
			if err := sb.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
		}
		var left []string
		for _, c := range claims.Items {
			left = append(left, "PVC "+c.Name)
		}
		for _, p := range pods.Items {
			left = append(left, "pod "+p.Name)
		}
		for _, s := range sets.Items {
			left = append(left, "StatefulSet "+s.Name)
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	}
}
