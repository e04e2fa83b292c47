package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

func s3Storage() v1alpha1.BackupStorage {
	return v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://s3", Bucket: "bucket",
		CredentialsSecret: v1alpha1.SecretReference{Name: "creds"}}}
}

func completedBackup(namespace, name, target string, started, done time.Time, bytes int64) *v1alpha1.RedisBackup {
	return &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Finalizers: []string{BackupFinalizer}},
		Spec: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedisReplication, Name: target},
			Storage: s3Storage()},
		Status: v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupCompleted, StartedAt: &metav1.Time{Time: started},
			CompletedAt: &metav1.Time{Time: done}, TotalBytes: bytes},
	}
}

func backupLabelsOf(namespace, kind, target string) prometheus.Labels {
	return prometheus.Labels{"namespace": namespace, "target_kind": kind, "target": target}
}

// The gauges show the newest Completed backup of each target, whichever order the backups are
// read in (an operator that starts reads them all), and only while the target is there;
// reading Completed backups counts nothing.
func TestBackupGaugesFromCompletedBackups(t *testing.T) {
	scheme := backupScheme(t)
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const ns = "backup-gauges"
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	newer := completedBackup(ns, "newer", "cache", t0.Add(24*time.Hour), t0.Add(24*time.Hour+90*time.Second), 4096)
	older := completedBackup(ns, "older", "cache", t0, t0.Add(30*time.Second), 1024)
	orphan := completedBackup(ns, "orphan", "gone", t0, t0.Add(time.Second), 1)
	target := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(newer, older, orphan, target).
		WithStatusSubresource(&v1alpha1.RedisBackup{}).Build()
	memory := NewMemory()
	r := &RedisBackupReconciler{Client: c, Scheme: scheme, Recorder: events.NewFakeRecorder(10), Memory: memory}
	ctx := context.Background()
	for _, b := range []*v1alpha1.RedisBackup{newer, older, newer, orphan} {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
			t.Fatal(err)
		}
	}
	l := backupLabelsOf(ns, v1alpha1.TargetRedisReplication, "cache")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"last success", testutil.ToFloat64(backupLastSuccess.With(l)), float64(t0.Add(24*time.Hour + 90*time.Second).Unix())},
		{"duration", testutil.ToFloat64(backupDuration.With(l)), 90},
		{"bytes", testutil.ToFloat64(backupBytes.With(l)), 4096},
		{"completed", testutil.ToFloat64(backupsEnded.With(withResult(l, backupResultCompleted))), 0},
		{"failed", testutil.ToFloat64(backupsEnded.With(withResult(l, backupResultFailed))), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if backupLastSuccess.Delete(backupLabelsOf(ns, v1alpha1.TargetRedisReplication, "gone")) {
		t.Error("a backup of a target that is gone made its series")
	}

	// The target goes: so do its series, and what the memory says was shown.
	forgetResource(memory, "RedisReplication", ns, "cache")
	for name, vec := range map[string]interface{ Delete(prometheus.Labels) bool }{
		"last success": backupLastSuccess, "duration": backupDuration, "bytes": backupBytes,
	} {
		if vec.Delete(l) {
			t.Errorf("the %s series is left after the target is gone", name)
		}
	}
	if backupsEnded.Delete(withResult(l, backupResultCompleted)) {
		t.Error("the counter is left after the target is gone")
	}
	if memory.backups.shown(backupTargetKey(ns, v1alpha1.TargetRedisReplication, "cache"), t0) {
		t.Error("the memory still holds the target that is gone")
	}
}

// A backup this operator ends is counted once: not again when read Failed later, and not when
// its status write lost to a newer version (another reconcile ended it).
func TestBackupEndCountedOnce(t *testing.T) {
	scheme := backupScheme(t)
	const ns = "backup-counted"
	// A kind the operator cannot back up (the fake client checks no enum): failed at once.
	const kind = "RedisSentinel"
	unsupported := &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: ns},
		Spec: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: kind, Name: "solo"},
			Storage: v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://s3:9000", Bucket: "backups"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(unsupported).WithStatusSubresource(&v1alpha1.RedisBackup{}).Build()
	r := &RedisBackupReconciler{Client: c, Scheme: scheme, Recorder: events.NewFakeRecorder(10), Memory: NewMemory()}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(unsupported)}
	failed := withResult(backupLabelsOf(ns, kind, "solo"), backupResultFailed)
	completed := withResult(backupLabelsOf(ns, kind, "solo"), backupResultCompleted)
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var b v1alpha1.RedisBackup
	if err := c.Get(ctx, req.NamespacedName, &b); err != nil || b.Status.Phase != v1alpha1.BackupFailed {
		t.Fatalf("phase %q (%v), want Failed", b.Status.Phase, err)
	}
	if got := testutil.ToFloat64(backupsEnded.With(failed)); got != 1 {
		t.Errorf("failed = %v after three reconciles, want 1", got)
	}
	if got := testutil.ToFloat64(backupsEnded.With(completed)); got != 0 {
		t.Errorf("completed = %v, want 0", got)
	}

	// A stale read: the status write meets a newer version and counts nothing.
	stale := b.DeepCopy()
	stale.Status = v1alpha1.RedisBackupStatus{}
	b.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, &b); err != nil {
		t.Fatal(err)
	}
	s := &backupScope{backup: stale, before: stale.DeepCopy()}
	if err := r.fail(ctx, s, ReasonBackupFailed, "stale"); err == nil {
		t.Fatal("a stale status write succeeded")
	}
	if got := testutil.ToFloat64(backupsEnded.With(failed)); got != 1 {
		t.Errorf("failed = %v after a lost write, want 1", got)
	}
}

// A completed backup is counted and shown at once by the reconcile that ended it.
func TestCountBackupEnded(t *testing.T) {
	const ns = "backup-ended"
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	b := completedBackup(ns, "b", "cache", t0, t0.Add(2*time.Minute), 10)
	memory := NewMemory()
	countBackupEnded(b)
	observeBackupCompleted(memory.backups, b)
	l := backupLabelsOf(ns, v1alpha1.TargetRedisReplication, "cache")
	if got := testutil.ToFloat64(backupsEnded.With(withResult(l, backupResultCompleted))); got != 1 {
		t.Errorf("completed = %v, want 1", got)
	}
	if got := testutil.ToFloat64(backupsEnded.With(withResult(l, backupResultFailed))); got != 0 {
		t.Errorf("failed = %v, want 0", got)
	}
	if got := testutil.ToFloat64(backupDuration.With(l)); got != 120 {
		t.Errorf("duration = %v, want 120", got)
	}
	forgetBackupTarget(memory.backups, v1alpha1.TargetRedisReplication, ns, "cache")
}

// A schedule's interval comes from its cron; its series follow its target, and go when it is
// suspended, invalid or deleted.
func TestScheduleIntervalSeries(t *testing.T) {
	scheme := backupScheme(t)
	const ns = "schedule-series"
	created := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	rbs := &v1alpha1.RedisBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns, UID: "uid-s", Generation: 1, CreationTimestamp: metav1.Time{Time: created}},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "*/5 * * * *", BackupTemplate: v1alpha1.RedisBackupSpec{
			Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedisCluster, Name: "cart"}, Storage: s3Storage()}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rbs).
		WithStatusSubresource(&v1alpha1.RedisBackupSchedule{}, &v1alpha1.RedisBackup{}).Build()
	clk := clocktesting.NewFakePassiveClock(created.Add(time.Minute))
	r := &RedisBackupScheduleReconciler{Client: c, Scheme: scheme, Recorder: events.NewFakeRecorder(100), Clock: clk}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rbs)}
	reconcileOnce := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	update := func(change func(*v1alpha1.RedisBackupSchedule)) {
		t.Helper()
		if err := c.Get(ctx, req.NamespacedName, rbs); err != nil {
			t.Fatal(err)
		}
		change(rbs)
		if err := c.Update(ctx, rbs); err != nil {
			t.Fatal(err)
		}
		reconcileOnce()
	}
	cart := prometheus.Labels{"namespace": ns, "schedule": "s", "target_kind": v1alpha1.TargetRedisCluster, "target": "cart"}
	solo := prometheus.Labels{"namespace": ns, "schedule": "s", "target_kind": v1alpha1.TargetRedis, "target": "solo"}
	gone := func(l prometheus.Labels) bool {
		interval, created := scheduleInterval.Delete(l), scheduleCreated.Delete(l)
		return !interval && !created
	}

	reconcileOnce()
	if got := testutil.ToFloat64(scheduleInterval.With(cart)); got != 300 {
		t.Errorf("interval of */5 * * * * = %v, want 300", got)
	}
	if got := testutil.ToFloat64(scheduleCreated.With(cart)); got != float64(created.Unix()) {
		t.Errorf("created = %v, want %d", got, created.Unix())
	}

	update(func(s *v1alpha1.RedisBackupSchedule) {
		s.Spec.Schedule = "0 3 * * *"
		s.Spec.BackupTemplate.Target = v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "solo"}
	})
	if got := testutil.ToFloat64(scheduleInterval.With(solo)); got != 86400 {
		t.Errorf("interval of 0 3 * * * = %v, want 86400", got)
	}
	if !gone(cart) {
		t.Error("the series of the former target are left")
	}

	update(func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Suspend = true })
	if !gone(solo) {
		t.Error("the series of a suspended schedule are left")
	}
	update(func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Suspend = false })
	if got := testutil.ToFloat64(scheduleInterval.With(solo)); got != 86400 {
		t.Errorf("interval once resumed = %v, want 86400", got)
	}
	update(func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Schedule = "not a schedule" })
	if !gone(solo) {
		t.Error("the series of an invalid schedule are left")
	}
	update(func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Schedule = "0 3 * * *" })
	if err := c.Delete(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	if !gone(solo) {
		t.Error("the series of a deleted schedule are left")
	}
}
