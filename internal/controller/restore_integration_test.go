//go:build integration

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

func restoringRedis(ns, name, backup string) *v1beta2.Redis {
	return &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Restore: &v1beta2.RestoreSpec{BackupName: backup}}}
}

// waitRestoreCondition waits for the Restored condition's status and reason, and for the
// Degraded or Progressing condition to carry the same reason when the restore is not done.
func waitRestoreCondition(t *testing.T, c client.Client, cr *v1beta2.Redis, want metav1.ConditionStatus, reason, also string) {
	t.Helper()
	waitUntil(t, 30*time.Second, fmt.Sprintf("%s Restored=%s %s", cr.Name, want, reason), func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		got := meta.FindStatusCondition(cr.Status.Conditions, ConditionRestored)
		other := meta.FindStatusCondition(cr.Status.Conditions, also)
		if got != nil && got.Status == want && got.Reason == reason &&
			(also == "" || other != nil && other.Status == metav1.ConditionTrue && other.Reason == reason) {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})
}

// noStatefulSet checks that nothing started in the restored resource's place.
func noStatefulSet(t *testing.T, c client.Client, cr *v1beta2.Redis) {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), &sts); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet %s: %v, want none", cr.Name, err)
	}
}

// A Redis restored from a backup of another serves every key of it; a restore that cannot be
// done creates nothing, and a running Redis is never restored into.
func TestRestoreIntoRedis(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	source, kubelet := runReadyStandalone(ctx, t, c, ns, "source")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("source-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)
	f := newBackupFixture(t, c, ns)
	nightly := f.create("nightly", v1alpha1.TargetRedis, "source", "", "s3-credentials")
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte("not-the-secret")}}); err != nil {
		t.Fatal(err)
	}
	failed := f.create("failed", v1alpha1.TargetRedis, "source", "", "wrong-credentials")
	f.create("pending", v1alpha1.TargetRedis, "nowhere", "", "s3-credentials") // waits for its target
	f.waitPhase(nightly, v1alpha1.BackupCompleted)
	f.waitPhase(failed, v1alpha1.BackupFailed)

	// Refused or waiting: no StatefulSet, the reason in the conditions.
	missing := restoringRedis(ns, "from-missing", "not-there")
	fromFailed := restoringRedis(ns, "from-failed", "failed")
	fromPending := restoringRedis(ns, "from-pending", "pending")
	for _, cr := range []*v1beta2.Redis{missing, fromFailed, fromPending} {
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	waitRestoreCondition(t, c, missing, metav1.ConditionFalse, status.ReasonRestoreBackupNotFound, v1beta2.ConditionProgressing)
	waitRestoreCondition(t, c, fromFailed, metav1.ConditionFalse, status.ReasonRestoreBackupFailed, v1beta2.ConditionDegraded)
	waitRestoreCondition(t, c, fromPending, metav1.ConditionFalse, status.ReasonRestoreBackupNotReady, v1beta2.ConditionProgressing)
	waitForEvent(t, c, ns, "from-failed", status.ReasonRestoreBackupFailed)

	// The running source is never restored into: Degraded, reconciled without the init container.
	if err := c.Get(ctx, client.ObjectKeyFromObject(source), source); err != nil {
		t.Fatal(err)
	}
	source.Spec.Restore = &v1beta2.RestoreSpec{BackupName: "nightly"}
	if err := c.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	waitRestoreCondition(t, c, source, metav1.ConditionFalse, status.ReasonRestoreRefused, v1beta2.ConditionDegraded)
	waitForEvent(t, c, ns, "source", status.ReasonRestoreRefused)

	// Restored into a new Redis: the init container fills its volume before Redis starts.
	restored := restoringRedis(ns, "restored", "nightly")
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "StatefulSet restored", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(restored), &sts)
	})
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "restore" || inits[0].Image != "redis-operator:test" ||
		sts.Annotations[builder.AnnotationRestoredFrom] != "nightly" {
		t.Fatalf("init containers %+v, annotations %v; want the restore's, from nightly", inits, sts.Annotations)
	}
	kubelet.runStatefulSet(ctx, ns, "restored")
	waitStandaloneReady(t, c, restored)
	waitRestoreCondition(t, c, restored, metav1.ConditionTrue, status.ReasonRestored, "")
	restoredClient := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("restored-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = restoredClient.Close() }()
	checkBackupKeys(ctx, t, restoredClient)
	waitForEvent(t, c, ns, "restored", status.ReasonRestored)
	if n := countEvents(t, c, ns, "restored", status.ReasonRestored); n != 1 {
		t.Errorf("%d Restored events, want 1", n)
	}

	// The backup deleted (as a schedule's retention does): the restored Redis keeps its pod
	// template, built from the restore its StatefulSet recorded, so its pod is not restarted.
	if err := c.Get(ctx, client.ObjectKeyFromObject(restored), &sts); err != nil {
		t.Fatal(err)
	}
	generation := sts.Generation
	if err := c.Delete(ctx, &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "backup nightly gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &v1alpha1.RedisBackup{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(restored), &sts); err != nil {
			t.Fatal(err)
		}
		if sts.Generation != generation || len(sts.Spec.Template.Spec.InitContainers) != 1 {
			t.Fatalf("the backup's deletion changed the restored StatefulSet: generation %d → %d, init containers %+v",
				generation, sts.Generation, sts.Spec.Template.Spec.InitContainers)
		}
	}

	// Every refusal left its resource without a StatefulSet; the source has no init container.
	noStatefulSet(t, c, missing)
	noStatefulSet(t, c, fromFailed)
	noStatefulSet(t, c, fromPending)
	if err := c.Get(ctx, client.ObjectKeyFromObject(source), &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Spec.Template.Spec.InitContainers) != 0 || sts.Annotations[builder.AnnotationRestoredFrom] != "" {
		t.Errorf("the running source got %+v, annotations %v", sts.Spec.Template.Spec.InitContainers, sts.Annotations)
	}
}

// A RedisReplication or RedisCluster cannot be restored into yet: spec.restore is refused and
// nothing is created, rather than an empty resource in the restore's place.
func TestRestoreRefusedForOtherKinds(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	size := int32(2)
	kc := v1beta2.KubernetesConfig{Image: "redis:7.0.15"}
	restore := &v1beta2.RestoreSpec{BackupName: "nightly"}
	repl := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "repl", Namespace: ns},
		Spec: v1beta2.RedisReplicationSpec{Size: &size, KubernetesConfig: kc, Restore: restore}}
	cluster := &v1beta2.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: "cl", Namespace: ns},
		Spec: v1beta2.RedisClusterSpec{Size: &size, KubernetesConfig: kc, Restore: restore}}
	for _, obj := range []client.Object{repl, cluster} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		obj        client.Object
		conditions func() []metav1.Condition
		sts        string
	}{
		{repl, func() []metav1.Condition { return repl.Status.Conditions }, "repl"},
		{cluster, func() []metav1.Condition { return cluster.Status.Conditions }, "cl-leader"},
	} {
		waitUntil(t, 30*time.Second, tc.obj.GetName()+" refuses the restore", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
				return err
			}
			restored := meta.FindStatusCondition(tc.conditions(), ConditionRestored)
			degraded := meta.FindStatusCondition(tc.conditions(), v1beta2.ConditionDegraded)
			if restored != nil && restored.Reason == status.ReasonRestoreUnsupported &&
				degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.Reason == status.ReasonRestoreUnsupported {
				return nil
			}
			return fmt.Errorf("conditions %s", describeConditions(tc.conditions()))
		})
		var sts appsv1.StatefulSet
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.sts}, &sts); !apierrors.IsNotFound(err) {
			t.Errorf("StatefulSet %s: %v, want none", tc.sts, err)
		}
	}
}
