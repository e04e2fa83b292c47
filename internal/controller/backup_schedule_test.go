package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/backup/store"
)

func backupScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A run that falls while the schedule's backup is still Pending waits for it to end; runs
// missed meanwhile give one backup, of the newest run.
func TestScheduleWaitsForTheBackupUnderWay(t *testing.T) {
	scheme := backupScheme(t)
	created := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	rbs := &v1alpha1.RedisBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "uid-s", Generation: 1, CreationTimestamp: metav1.Time{Time: created}},
		Spec:       v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * * *"},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rbs).
		WithStatusSubresource(&v1alpha1.RedisBackupSchedule{}, &v1alpha1.RedisBackup{}).Build()
	clk := clocktesting.NewFakePassiveClock(created.Add(40 * time.Second)) // 00:01:10
	r := &RedisBackupScheduleReconciler{Client: c, Scheme: scheme, Recorder: events.NewFakeRecorder(10), Clock: clk}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rbs)}

	reconcileOnce := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := reconcileOnce()
	if res.RequeueAfter != 50*time.Second {
		t.Errorf("requeue after %s, want 50s (00:02:00)", res.RequeueAfter)
	}
	first := &v1alpha1.RedisBackup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "s-1767225660"}, first); err != nil {
		t.Fatalf("the backup of 00:01: %v", err)
	}
	// Five minutes on, the first still Pending: no second backup.
	clk.SetTime(created.Add(5*time.Minute + 40*time.Second)) // 00:06:10
	reconcileOnce()
	var list v1alpha1.RedisBackupList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("%d backups while one is Pending, want 1 (%v)", len(list.Items), err)
	}
	if err := c.Get(ctx, req.NamespacedName, rbs); err != nil {
		t.Fatal(err)
	}
	if p := meta.FindStatusCondition(rbs.Status.Conditions, v1beta2.ConditionProgressing); p == nil || p.Status != metav1.ConditionTrue {
		t.Errorf("conditions %+v, want Progressing True", rbs.Status.Conditions)
	}
	// It completes: one backup for the five runs missed, the newest.
	first.Status.Phase = v1alpha1.BackupCompleted
	if err := c.Status().Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("%d backups, want 2 (%v)", len(list.Items), err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "s-1767225960"}, &v1alpha1.RedisBackup{}); err != nil {
		t.Errorf("the backup of 00:06: %v", err)
	}
	if err := c.Get(ctx, req.NamespacedName, rbs); err != nil {
		t.Fatal(err)
	}
	if rbs.Status.LastSuccessfulBackup != first.Name || !rbs.Status.LastScheduleTime.Equal(&metav1.Time{Time: created.Add(5*time.Minute + 30*time.Second)}) {
		t.Errorf("status %+v", rbs.Status)
	}
}

func TestScheduledTimeFromName(t *testing.T) {
	at := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	name := backupName("nightly", at)
	if got, ok := scheduledTime("nightly", name); !ok || !got.Equal(at) {
		t.Errorf("scheduledTime(%q) = %s, %v", name, got, ok)
	}
	for _, other := range []string{"nightly", "nightly-", "nightly-x1", "other-1767225600", "nightly-weekly-1767225600"} {
		if _, ok := scheduledTime("nightly", other); ok {
			t.Errorf("scheduledTime(%q) read a time", other)
		}
	}
}

// A deleted backup whose store fails keeps its finalizer, says why in its Ready condition and
// comes back; once the store answers, its objects go and so does the backup.
func TestDeletedBackupWaitsForItsStore(t *testing.T) {
	scheme := backupScheme(t)
	now := metav1.Now()
	b := &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "ns", Finalizers: []string{BackupFinalizer}, DeletionTimestamp: &now},
		Spec: v1alpha1.RedisBackupSpec{Storage: v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://s3", Bucket: "b",
			CredentialsSecret: v1alpha1.SecretReference{Name: "creds"}}}},
		Status: v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupCompleted, Location: "s3://b/ns/rb/",
			Shards: []v1alpha1.ShardBackup{{Location: "s3://b/ns/rb/r-0.rdb"}}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns"},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte("id"), S3SecretAccessKeyKey: []byte("key")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(b, secret).WithStatusSubresource(&v1alpha1.RedisBackup{}).Build()
	st := &memoryStore{objects: map[string]bool{"ns/rb/r-0.rdb": true}, deleteErr: errors.New("connection refused")}
	r := &RedisBackupReconciler{Client: c, Scheme: scheme, Recorder: events.NewFakeRecorder(10),
		Stores: func(store.S3Config) (BackupStore, error) { return st, nil }}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}

	res, err := r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != backupRetry {
		t.Fatalf("store down: %+v, %v; want a retry after %s", res, err, backupRetry)
	}
	if err := c.Get(ctx, req.NamespacedName, b); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	if ready == nil || ready.Reason != ReasonBackupObjectsNotDeleted || len(b.Finalizers) != 1 {
		t.Errorf("conditions %+v, finalizers %v", b.Status.Conditions, b.Finalizers)
	}
	st.deleteErr = nil
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, b); !apierrors.IsNotFound(err) {
		t.Errorf("the backup is still there (%v), finalizers %v", err, b.Finalizers)
	}
	if len(st.objects) != 0 {
		t.Errorf("objects left: %v", st.objects)
	}
}

// Backups of two runs that complete within one second (completion times have whole seconds):
// the newest run's is the last successful backup, whichever the list gives first.
func TestLastSuccessfulBackupIsTheNewestRunsWhenCompletionsTie(t *testing.T) {
	scheme := backupScheme(t)
	rbs := &v1alpha1.RedisBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "uid-s", Generation: 1},
		Spec:       v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * * *"},
	}
	completed := metav1.NewTime(time.Date(2026, 1, 1, 0, 3, 1, 0, time.UTC))
	backup := func(name string) *v1alpha1.RedisBackup {
		b := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{v1alpha1.LabelBackupSchedule: "s"}}}
		if err := controllerutil.SetControllerReference(rbs, b, scheme); err != nil {
			t.Fatal(err)
		}
		b.Status = v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupCompleted, CompletedAt: &completed}
		return b
	}
	// 00:01 and 00:02: the older one sorts first by name.
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rbs, backup("s-1767225660"), backup("s-1767225720")).Build()
	r := &RedisBackupScheduleReconciler{Client: c, Scheme: scheme}
	s := &scheduleScope{schedule: rbs}
	if _, err := r.readBackups(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := rbs.Status.LastSuccessfulBackup; got != "s-1767225720" {
		t.Errorf("last successful backup %q, want s-1767225720 (the run of 00:02)", got)
	}
}
