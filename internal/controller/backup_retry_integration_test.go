//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/s3test"
)

// newReservedBackupFixture is a backup fixture whose store is not started: its port is
// picked, its credentials Secret made, and nothing listens there until f.s3.Run.
func newReservedBackupFixture(t *testing.T, c client.Client, ns string) *backupFixture {
	t.Helper()
	f := &backupFixture{t: t, c: c, ns: ns, s3: s3test.Reserve(t, s3test.Options{})}
	if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte(f.s3.SecretKey)}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// backupEvents are the events of a backup with reason, oldest first.
func backupEvents(t *testing.T, c client.Client, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// runStandaloneWithKeys runs a ready standalone Redis named name holding the backup keys.
func runStandaloneWithKeys(ctx context.Context, t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, name)
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod(name + "-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)
}

// A backup whose store refuses the connection (nothing listens on its port yet, as behind a
// Service that does not route yet) stays Running and says why and when it tries again; the
// count and the time of the next attempt are in its status, so that an operator started
// after a restart keeps them. Once the store is up, the next attempt stores the whole
// snapshot: Completed at attempt 2, one object, every key restored.
func TestBackupRetriesAStoreThatStartsLate(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	c := newClient(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	retries := withStoreRetries(8*time.Second, 8*time.Second, 8*time.Second)
	first := startOperator(t, ns, retries)
	runStandaloneWithKeys(ctx, t, c, ns, "plain")

	f := newReservedBackupFixture(t, c, ns)
	b := f.create("late-store", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	var nextAttempt time.Time
	waitUntil(t, 60*time.Second, "the first attempt's failure and the decision to retry", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if b.Finished() {
			t.Fatalf("the backup ended %s: %s", b.Status.Phase, describeConditions(b.Status.Conditions))
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
		if b.Status.Phase != v1alpha1.BackupRunning || attemptsOf(b) != 1 || b.Status.NextAttemptAt == nil ||
			cond == nil || cond.Reason != ReasonBackupRetrying {
			return fmt.Errorf("phase %q, attempts %d, conditions %s", b.Status.Phase, attemptsOf(b), describeConditions(b.Status.Conditions))
		}
		nextAttempt = b.Status.NextAttemptAt.Time
		return nil
	})
	cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	want := fmt.Sprintf("store %s refused the connection (attempt 1 of 4); retrying in 8s", f.s3.Endpoint)
	if cond.Message != want {
		t.Errorf("while retrying: %q, want %q", cond.Message, want)
	}
	waitForEvent(t, c, ns, b.Name, ReasonBackupRetrying)

	// The operator restarts while the backup waits; the store comes up meanwhile.
	first.stop()
	f.s3.Run(t)
	startOperator(t, ns, retries)
	f.waitPhase(b, v1alpha1.BackupCompleted)

	if attemptsOf(b) != 2 || b.Status.NextAttemptAt != nil {
		t.Errorf("attempts %d, next attempt %v; want 2 (the count kept across the restart) and none", attemptsOf(b), b.Status.NextAttemptAt)
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != string(v1alpha1.BackupCompleted) {
		t.Errorf("conditions %s, want Ready True Completed", describeConditions(b.Status.Conditions))
	}
	// The second attempt waited for its time, though a new operator took it.
	var second *eventsv1.Event
	for _, e := range backupEvents(t, c, ns, b.Name, ReasonBackupStarted) {
		if strings.Contains(e.Note, "(attempt 2 of 4)") {
			second = &e
		}
	}
	if second == nil {
		t.Fatalf("no BackupStarted event of attempt 2 among %+v", backupEvents(t, c, ns, b.Name, ReasonBackupStarted))
	}
	if second.EventTime.Time.Before(nextAttempt.Add(-time.Second)) {
		t.Errorf("attempt 2 started at %s, before its time %s", second.EventTime.Time, nextAttempt)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupRetrying); n != 1 {
		t.Errorf("%d Retrying events, want 1 (one failed attempt)", n)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupFailed); n != 0 {
		t.Errorf("%d BackupFailed events", n)
	}
	// The object is whole and the only one: nothing of the failed attempt is left.
	if objects := f.objects(); len(objects) != 1 || "s3://"+f.s3.Bucket+"/"+objects[0] != b.Status.Shards[0].Location {
		t.Errorf("objects %v, want only %s", objects, b.Status.Shards[0].Location)
	}
	checkBackupKeys(ctx, t, f.restore(b))
	if strings.Contains(fmt.Sprintf("%+v", b.Status), f.s3.SecretKey) {
		t.Error("the status shows the secret key")
	}
}

// A store that never comes is given up after the last attempt: Failed, with the cause and
// the number of attempts, and no object.
func TestBackupRetriesEndFailedAfterTheLastAttempt(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	c := newClient(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns, withStoreRetries(time.Second, time.Second))
	runStandaloneWithKeys(ctx, t, c, ns, "plain")
	f := newReservedBackupFixture(t, c, ns)
	b := f.create("never-there", v1alpha1.TargetRedis, "plain", "", "s3-credentials")
	waitUntil(t, 90*time.Second, "the backup Failed", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if b.Status.Phase != v1alpha1.BackupFailed {
			return fmt.Errorf("phase %q, attempts %d, conditions %s", b.Status.Phase, attemptsOf(b), describeConditions(b.Status.Conditions))
		}
		return nil
	})
	cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	wantCause := fmt.Sprintf("store %s refused the connection at each of 3 attempts: ", f.s3.Endpoint)
	if attemptsOf(b) != 3 || cond == nil || cond.Reason != ReasonBackupFailed || !strings.HasPrefix(cond.Message, wantCause) ||
		!strings.Contains(cond.Message, "connection refused") || b.Status.NextAttemptAt != nil || b.Status.CompletedAt == nil {
		t.Errorf("attempts %d, next %v, conditions %s; want Failed after 3 attempts, %q...", attemptsOf(b),
			b.Status.NextAttemptAt, describeConditions(b.Status.Conditions), wantCause)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupRetrying); n != 2 {
		t.Errorf("%d Retrying events, want 2", n)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupFailed); n != 1 {
		t.Errorf("%d BackupFailed events, want 1", n)
	}
	f.s3.Run(t)
	if objects := f.objects(); len(objects) != 0 {
		t.Errorf("objects %v after a failed backup", objects)
	}
}

// Wrong credentials are no passing trouble: the backup ends Failed at its first attempt, with
// the cause and without the secret, and is never retried.
func TestBackupWithWrongCredentialsFailsAtOnce(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t) // the default retries: the first would wait 15s
	ctx := context.Background()
	runStandaloneWithKeys(ctx, t, c, ns, "plain")
	f := newBackupFixture(t, c, ns)
	const wrongSecret = "not-the-secret-key"
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong-credentials", Namespace: ns},
		Data: map[string][]byte{S3AccessKeyIDKey: []byte(f.s3.AccessKey), S3SecretAccessKeyKey: []byte(wrongSecret)}}); err != nil {
		t.Fatal(err)
	}
	b := f.create("wrong-credentials", v1alpha1.TargetRedis, "plain", "", "wrong-credentials")
	f.waitPhase(b, v1alpha1.BackupFailed)
	cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	wantCause := fmt.Sprintf("store %s refused the credentials or their rights (", f.s3.Endpoint)
	if attemptsOf(b) != 1 || b.Status.NextAttemptAt != nil || cond == nil || cond.Reason != ReasonBackupFailed ||
		!strings.HasPrefix(cond.Message, wantCause) || strings.Contains(cond.Message, "attempts") {
		t.Errorf("attempts %d, conditions %s; want Failed at attempt 1, %q...", attemptsOf(b), describeConditions(b.Status.Conditions), wantCause)
	}
	if took := b.Status.CompletedAt.Sub(b.CreationTimestamp.Time); took >= DefaultStoreRetries[0] {
		t.Errorf("the backup took %s to fail, as long as a retry's wait", took)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupRetrying); n != 0 {
		t.Errorf("%d Retrying events, want none", n)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupStarted); n != 1 {
		t.Errorf("%d BackupStarted events, want 1", n)
	}
	for _, e := range backupEvents(t, c, ns, b.Name, ReasonBackupFailed) {
		if strings.Contains(e.Note, wrongSecret) {
			t.Errorf("the event %q shows the secret", e.Note)
		}
	}
	if strings.Contains(fmt.Sprintf("%+v", b.Status), wrongSecret) {
		t.Error("the status shows the secret")
	}
	if objects := f.objects(); len(objects) != 0 {
		t.Errorf("objects %v after a failed backup", objects)
	}
}
