//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// startPlainRedis makes the test's namespace, starts an operator on it and runs a standalone
// Redis named plain without password, ready to back up.
func startPlainRedis(t *testing.T, options ...operatorOption) (string, client.Client) {
	t.Helper()
	ns := testNamespace(t)
	c := newClient(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns, options...)
	runReadyStandalone(ctx, t, c, ns, "plain")
	return ns, c
}

// scheduleBackups lists the RedisBackups of a schedule, by name.
func scheduleBackups(t *testing.T, c client.Client, ns, name string) []v1alpha1.RedisBackup {
	t.Helper()
	var list v1alpha1.RedisBackupList
	if err := c.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelBackupSchedule: name}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b v1alpha1.RedisBackup) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// touch wakes the schedule's reconciler (a fake clock moves no timer of controller-runtime).
func touch(t *testing.T, c client.Client, rbs *v1alpha1.RedisBackupSchedule, edit func(*v1alpha1.RedisBackupSchedule)) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(rbs), rbs); err != nil {
		t.Fatal(err)
	}
	if rbs.Annotations == nil {
		rbs.Annotations = map[string]string{}
	}
	rbs.Annotations["test/touched"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if edit != nil {
		edit(rbs)
	}
	if err := c.Update(ctx, rbs); err != nil {
		t.Fatal(err)
	}
}

// waitFirstSchedule moves the fake time past the schedule's creation, so that its first
// minute is a run, and waits for its first status, with no backup made yet.
func waitFirstSchedule(t *testing.T, c client.Client, clk *clocktesting.FakePassiveClock, rbs *v1alpha1.RedisBackupSchedule) {
	t.Helper()
	clk.SetTime(time.Now())
	waitUntil(t, 30*time.Second, "the schedule's first status", func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(rbs), rbs); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(rbs.Status.Conditions, v1beta2.ConditionReady)
		if ready == nil || ready.Reason != ReasonScheduled || rbs.Status.NextScheduleTime == nil {
			return fmt.Errorf("conditions %s", describeConditions(rbs.Status.Conditions))
		}
		return nil
	})
	if got := scheduleBackups(t, c, rbs.Namespace, rbs.Name); len(got) != 0 {
		t.Fatalf("%d backups before the first run", len(got))
	}
}

// nextRun moves the fake time a minute, wakes the schedule, and returns the backup it makes
// for that minute, checking that the schedule labels and controls it.
func nextRun(t *testing.T, c client.Client, clk *clocktesting.FakePassiveClock, rbs *v1alpha1.RedisBackupSchedule) *v1alpha1.RedisBackup {
	t.Helper()
	clk.SetTime(clk.Now().Add(time.Minute))
	touch(t, c, rbs, nil)
	b := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Name: backupName(rbs.Name, clk.Now().UTC().Truncate(time.Minute)), Namespace: rbs.Namespace}}
	waitUntil(t, 30*time.Second, "RedisBackup "+b.Name, func() error {
		return c.Get(context.Background(), client.ObjectKeyFromObject(b), b)
	})
	if b.Labels[v1alpha1.LabelBackupSchedule] != rbs.Name || !metav1.IsControlledBy(b, rbs) {
		t.Errorf("backup %s: labels %v, owners %v", b.Name, b.Labels, b.OwnerReferences)
	}
	return b
}

// waitKeptTheLastTwo waits until the schedule's backups are the last two it made, and the
// store's objects (listed by objects) one of each, named <namespace>/<backup>/plain-0.rdb.
func waitKeptTheLastTwo(t *testing.T, c client.Client, rbs *v1alpha1.RedisBackupSchedule, made []string, objects func() []string) {
	t.Helper()
	kept := made[len(made)-2:]
	waitUntil(t, 60*time.Second, "two backups and their objects", func() error {
		var names []string
		for _, b := range scheduleBackups(t, c, rbs.Namespace, rbs.Name) {
			names = append(names, b.Name)
		}
		if !slices.Equal(names, kept) {
			return fmt.Errorf("backups %v, want %v", names, kept)
		}
		keys := objects()
		if len(keys) != 2 || !strings.HasSuffix(keys[0], rbs.Namespace+"/"+kept[0]+"/plain-0.rdb") ||
			!strings.HasSuffix(keys[1], rbs.Namespace+"/"+kept[1]+"/plain-0.rdb") {
			return fmt.Errorf("objects %v, want one of each of %v", keys, kept)
		}
		return nil
	})
}

// waitStatusAfterRuns waits for the events and the status of a schedule of every minute after
// the runs that made made, each completed, all but the last two pruned: the newest backup is
// the last successful one, its minute the last run, and the next run the minute after the
// fake time.
func waitStatusAfterRuns(t *testing.T, c client.Client, clk *clocktesting.FakePassiveClock, rbs *v1alpha1.RedisBackupSchedule, made []string) {
	t.Helper()
	last := clk.Now().UTC().Truncate(time.Minute)
	waitUntil(t, 15*time.Second, "the events and the status", func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(rbs), rbs); err != nil {
			return err
		}
		if n := countEvents(t, c, rbs.Namespace, rbs.Name, ReasonBackupScheduled); n != len(made) {
			return fmt.Errorf("%d BackupScheduled events, want %d", n, len(made))
		}
		if n := countEvents(t, c, rbs.Namespace, rbs.Name, ReasonBackupPruned); n != len(made)-2 {
			return fmt.Errorf("%d BackupPruned events, want %d", n, len(made)-2)
		}
		st := rbs.Status
		if st.LastSuccessfulBackup != made[len(made)-1] || st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(last) ||
			backupName(rbs.Name, st.LastScheduleTime.Time) != made[len(made)-1] ||
			st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(last.Add(time.Minute)) || st.ObservedGeneration != rbs.Generation {
			return fmt.Errorf("status %+v, want the last run at %s and the next at %s", st, last, last.Add(time.Minute))
		}
		if p := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionProgressing); p == nil || p.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %s, want Progressing False", describeConditions(st.Conditions))
		}
		return nil
	})
}

// A schedule of every minute with keep.last 2, over four runs (the fake clock moved a minute
// each), makes four backups one after the other and leaves the two newest, with their
// objects alone in the bucket. Suspended, it makes no more.
func TestRedisBackupScheduleKeepsTheLastTwo(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	ns, c := startPlainRedis(t, withClock(clk))
	ctx := context.Background()
	f := newBackupFixture(t, c, ns)
	two := int32(2)
	rbs := &v1alpha1.RedisBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "minutely", Namespace: ns},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * * *", Keep: &v1alpha1.BackupRetention{Last: &two},
			BackupTemplate: f.spec(v1alpha1.TargetRedis, "plain", "", "s3-credentials")},
	}
	if err := c.Create(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	waitFirstSchedule(t, c, clk, rbs)
	var made []string
	for range 4 {
		b := nextRun(t, c, clk, rbs)
		made = append(made, b.Name)
		f.waitPhase(b, v1alpha1.BackupCompleted)
	}
	waitKeptTheLastTwo(t, c, rbs, made, f.objects)
	waitStatusAfterRuns(t, c, clk, rbs, made)

	// Suspended: the minutes pass and no backup is made.
	touch(t, c, rbs, func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Suspend = true })
	waitUntil(t, 15*time.Second, "the schedule suspended", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(rbs), rbs); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(rbs.Status.Conditions, v1beta2.ConditionReady)
		if ready == nil || ready.Reason != ReasonSuspended || rbs.Status.NextScheduleTime != nil {
			return fmt.Errorf("conditions %s, next %v", describeConditions(rbs.Status.Conditions), rbs.Status.NextScheduleTime)
		}
		return nil
	})
	for range 2 {
		clk.SetTime(clk.Now().Add(time.Minute))
		touch(t, c, rbs, nil)
		time.Sleep(time.Second)
	}
	if got := scheduleBackups(t, c, ns, rbs.Name); len(got) != 2 {
		t.Errorf("%d backups after two suspended minutes, want 2", len(got))
	}
}

// A schedule whose backups are on a PersistentVolumeClaim goes through the claim's store: of
// every minute with keep.last 2, over four runs, it leaves the two newest backups, controlled
// by it and Completed at pvc://<claim>/<subPath>/backups/..., and only their files in the
// claim's folder, each of the size its backup recorded: the pruned backups' files were
// deleted through the store. Its status names the newest backup, its run and the next run.
func TestRedisBackupScheduleOnAClaimKeepsTheLastTwo(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	store := newClaimStore(t, testNamespace(t), "backups")
	ns, c := startPlainRedis(t, withClock(clk), store.stores())
	ctx := context.Background()
	createClaim(t, c, ns, "backups")
	two := int32(2)
	rbs := &v1alpha1.RedisBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "minutely", Namespace: ns},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * * *", Keep: &v1alpha1.BackupRetention{Last: &two},
			BackupTemplate: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "plain"},
				Storage: v1alpha1.BackupStorage{PersistentVolumeClaim: &v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "redis/minutely"}}}},
	}
	if err := c.Create(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	waitFirstSchedule(t, c, clk, rbs)
	f := &backupFixture{t: t, c: c, ns: ns}
	var made []string
	for run := range 4 {
		b := nextRun(t, c, clk, rbs)
		made = append(made, b.Name)
		if run == 0 {
			// The first backup on the claim made its store: its pod runs from now on.
			store.serve()
		}
		f.waitPhase(b, v1alpha1.BackupCompleted)
	}
	waitKeptTheLastTwo(t, c, rbs, made, store.files)
	for _, b := range scheduleBackups(t, c, ns, rbs.Name) {
		want := "pvc://backups/redis/minutely/backups/" + ns + "/" + b.Name + "/"
		if b.Status.Phase != v1alpha1.BackupCompleted || !metav1.IsControlledBy(&b, rbs) || b.Status.Location != want ||
			len(b.Status.Shards) != 1 || b.Status.Shards[0].Location != want+"plain-0.rdb" {
			t.Errorf("RedisBackup %s: phase %s, owners %v, at %s, shards %+v; want Completed at %splain-0.rdb",
				b.Name, b.Status.Phase, b.OwnerReferences, b.Status.Location, b.Status.Shards, want)
			continue
		}
		file := filepath.Join(store.gateway.Load().Dir, builder.ClaimStoreBucket, ns, b.Name, "plain-0.rdb")
		if info, err := os.Stat(file); err != nil || info.Size() != b.Status.Shards[0].Bytes {
			t.Errorf("the file of %s: %v, want %d bytes", b.Name, err, b.Status.Shards[0].Bytes)
		}
	}
	for _, pruned := range made[:2] {
		waitForEvent(t, c, ns, pruned, ReasonBackupObjectsDeleted)
	}
	waitStatusAfterRuns(t, c, clk, rbs, made)
}

// A cron expression or time zone the schema lets through but cron cannot read stops the
// schedule with Ready False InvalidSchedule and a Warning event, and no backup.
func TestRedisBackupScheduleInvalid(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	template := v1alpha1.RedisBackupSpec{
		Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "plain"},
		Storage: v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://127.0.0.1:1", Bucket: "backups",
			CredentialsSecret: v1alpha1.SecretReference{Name: "s3-credentials"}}},
	}
	// The schema refuses what it can see is wrong: four fields.
	four := &v1alpha1.RedisBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "four", Namespace: ns},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * *", BackupTemplate: template}}
	if err := c.Create(ctx, four); !apierrors.IsInvalid(err) {
		t.Errorf("a four-field schedule: %v, want Invalid", err)
	}
	// Its name labels its backups: 63 characters at most.
	long := &v1alpha1.RedisBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 64), Namespace: ns},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "* * * * *", BackupTemplate: template}}
	if err := c.Create(ctx, long); !apierrors.IsInvalid(err) {
		t.Errorf("a name of 64 characters: %v, want Invalid", err)
	}
	for _, tc := range []struct{ name, cron, zone string }{
		{"minute-61", "61 * * * *", ""},
		{"on-mars", "0 3 * * *", "Mars/Olympus"},
	} {
		rbs := &v1alpha1.RedisBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
			Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: tc.cron, TimeZone: tc.zone, BackupTemplate: template}}
		if err := c.Create(ctx, rbs); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, tc.name+" InvalidSchedule", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(rbs), rbs); err != nil {
				return err
			}
			ready := meta.FindStatusCondition(rbs.Status.Conditions, v1beta2.ConditionReady)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonInvalidSchedule {
				return fmt.Errorf("conditions %s", describeConditions(rbs.Status.Conditions))
			}
			return nil
		})
		waitForEvent(t, c, ns, tc.name, ReasonInvalidSchedule)
		waitSamples(t, tc.name+" has no interval", []wantSample{noSample("redis_operator_backup_schedule_interval_seconds",
			map[string]string{"namespace": ns, "schedule": tc.name, "target_kind": v1alpha1.TargetRedis, "target": "plain"})})
		if got := scheduleBackups(t, c, ns, tc.name); len(got) != 0 {
			t.Errorf("%s made %d backups", tc.name, len(got))
		}
	}
}

// A schedule's interval and creation time are metrics, labelled with its target, while it is
// neither suspended nor deleted; they follow its cron.
func TestRedisBackupScheduleMetrics(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := context.Background()
	rbs := &v1alpha1.RedisBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "often", Namespace: ns},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "*/5 * * * *", BackupTemplate: v1alpha1.RedisBackupSpec{
			Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "plain"},
			Storage: v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://127.0.0.1:1", Bucket: "backups",
				CredentialsSecret: v1alpha1.SecretReference{Name: "s3-credentials"}}}}}}
	if err := c.Create(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": ns, "schedule": "often", "target_kind": v1alpha1.TargetRedis, "target": "plain"}
	waitSamples(t, "the interval of */5 * * * *", []wantSample{
		sampleOf("redis_operator_backup_schedule_interval_seconds", labels, 300),
		sampleOf("redis_operator_backup_schedule_created_timestamp_seconds", labels, float64(rbs.CreationTimestamp.Unix())),
	})
	touch(t, c, rbs, func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Schedule = "0 3 * * *" })
	waitSamples(t, "the interval of 0 3 * * *", []wantSample{sampleOf("redis_operator_backup_schedule_interval_seconds", labels, 86400)})
	touch(t, c, rbs, func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Suspend = true })
	waitSamples(t, "no interval while suspended", []wantSample{
		noSample("redis_operator_backup_schedule_interval_seconds", labels),
		noSample("redis_operator_backup_schedule_created_timestamp_seconds", labels),
	})
	touch(t, c, rbs, func(s *v1alpha1.RedisBackupSchedule) { s.Spec.Suspend = false })
	waitSamples(t, "the interval once resumed", []wantSample{sampleOf("redis_operator_backup_schedule_interval_seconds", labels, 86400)})
	if err := c.Delete(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	waitSamples(t, "no interval once deleted", []wantSample{noSample("redis_operator_backup_schedule_interval_seconds", labels)})
}

// Deleting a Completed RedisBackup deletes its objects; one whose credentials Secret is gone
// is let go with a Warning event, its objects left in place.
func TestRedisBackupDeletedRemovesItsObjects(t *testing.T) {
	t.Parallel()
	ns, c := startPlainRedis(t)
	ctx := context.Background()
	f := newBackupFixture(t, c, ns)
	first := f.create("first", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	second := f.create("second", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	f.waitPhase(first, v1alpha1.BackupCompleted)
	f.waitPhase(second, v1alpha1.BackupCompleted)
	if keys := f.objects(); len(keys) != 2 {
		t.Fatalf("objects %v, want 2", keys)
	}
	if !slices.Contains(first.Finalizers, BackupFinalizer) {
		t.Errorf("finalizers %v, want %s", first.Finalizers, BackupFinalizer)
	}

	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, first)
	if keys := f.objects(); len(keys) != 1 || !strings.Contains(keys[0], "/second/") {
		t.Errorf("objects %v, want only second's", keys)
	}
	waitForEvent(t, c, ns, "first", ReasonBackupObjectsDeleted)

	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, second)
	waitForEvent(t, c, ns, "second", ReasonBackupObjectsLeft)
	if keys := f.objects(); len(keys) != 1 {
		t.Errorf("objects %v, want second's left in place", keys)
	}
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	waitUntil(t, 60*time.Second, obj.GetName()+" gone", func() error {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there, finalizers %v", obj.GetFinalizers())
	})
}
