package kubectlredis

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

// backupClock is the plugin's clock in these tests: 2025-03-04 05:06:07 UTC.
var backupClock = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func s3Storage(bucket, prefix string) v1alpha1.BackupStorage {
	return v1alpha1.BackupStorage{S3: &v1alpha1.S3Storage{Endpoint: "http://s3:8333", Bucket: bucket, Prefix: prefix,
		ForcePathStyle: true, CredentialsSecret: v1alpha1.SecretReference{Name: "s3-credentials"}}}
}

func schedule(ns, name, target string, storage v1alpha1.BackupStorage) *v1alpha1.RedisBackupSchedule {
	return &v1alpha1.RedisBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.RedisBackupScheduleSpec{Schedule: "@daily",
			BackupTemplate: v1alpha1.RedisBackupSpec{Target: targetOf(target), Storage: storage, Source: v1alpha1.SourceMaster}}}
}

// backupOf is a backup of target created at backupClock minus ago; owner names its schedule.
func backupOf(ns, name, target string, storage v1alpha1.BackupStorage, ago time.Duration, owner string) *v1alpha1.RedisBackup {
	b := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		CreationTimestamp: metav1.NewTime(backupClock.Add(-ago))},
		Spec: v1alpha1.RedisBackupSpec{Target: targetOf(target), Storage: storage}}
	if owner != "" {
		b.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RedisBackupSchedule",
			Name: owner, UID: types.UID("uid-" + owner), Controller: ptr(true)}}
	}
	return b
}

// The targets of the fixtures' backups: a cluster, a replication, a replication that is gone.
const (
	cartTarget     = "cart"
	sessionsTarget = "sessions"
	goneTarget     = "old"
)

func targetOf(name string) v1alpha1.BackupTarget {
	if name == cartTarget {
		return v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedisCluster, Name: name}
	}
	return v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedisReplication, Name: name}
}

// backupFixtures: a cluster with a schedule and three backups (one Completed, one Running,
// one made by hand that Failed), a replication with one backup, a sentinel, a standalone
// Redis with none, a backup of a resource that is gone, and a backup in another namespace.
func backupFixtures() []client.Object {
	done := backupOf("shop", "cart-1741000000", cartTarget, s3Storage("backups", "team"), 3*time.Hour, "nightly")
	done.Status = v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupCompleted,
		StartedAt:   &metav1.Time{Time: backupClock.Add(-3 * time.Hour)},
		CompletedAt: &metav1.Time{Time: backupClock.Add(-3*time.Hour + 90*time.Second)},
		TotalBytes:  3 << 19, Size: "1.5 MiB", Location: "s3://backups/team/shop/cart-1741000000/"}
	running := backupOf("shop", "cart-1741010000", cartTarget, s3Storage("backups", "team"), time.Hour, "nightly")
	running.Status = v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupRunning,
		StartedAt: &metav1.Time{Time: backupClock.Add(-2 * time.Minute)}}
	failed := backupOf("shop", "cart-manual-20250304010000", cartTarget, s3Storage("backups", "team"), 2*time.Hour, "")
	failed.Status = v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupFailed,
		Conditions: []metav1.Condition{{Type: v1beta2.ConditionReady, Status: metav1.ConditionFalse, Reason: "BackupFailed",
			Message: "store unreachable"}}}
	sentinel := &v1beta2.RedisSentinel{ObjectMeta: objectMeta("shop", "watch", nil),
		Spec: v1beta2.RedisSentinelSpec{RedisSentinelConfig: &v1beta2.RedisSentinelConfig{RedisReplicationName: "sessions"}}}
	return []client.Object{
		&v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)},
		&v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)},
		&v1beta2.Redis{ObjectMeta: objectMeta("shop", "cache", nil)},
		sentinel,
		schedule("shop", "nightly", cartTarget, s3Storage("backups", "team")),
		done, running, failed,
		backupOf("shop", "sessions-manual-20250301000000", sessionsTarget, s3Storage("archive", ""), 72*time.Hour, ""),
		backupOf("shop", "old-1", goneTarget, s3Storage("archive", ""), 24*time.Hour, ""),
		backupOf("billing", "cart-1", cartTarget, s3Storage("backups", ""), time.Minute, ""),
	}
}

func backupConnector(c client.Client) Connector {
	return func(_ invocation, out io.Writer) (Plugin, error) {
		return Plugin{Client: c, Namespace: "shop", Out: out, Now: func() time.Time { return backupClock },
			PollInterval: time.Millisecond}, nil
	}
}

func runBackup(t *testing.T, c client.Client, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := RunWith(t.Context(), args, &out, backupConnector(c))
	return out.String(), err
}

// tableRows are the rows of a table output, each split in its columns (empty trailing
// columns dropped).
func tableRows(out string) [][]string {
	var rows [][]string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// TestBackups: the backups of one resource newest first, their size for people, the
// duration so far of the running one, and the schedule that owns them; without NAME every
// backup of the namespace with its target; -A every namespace's.
func TestBackups(t *testing.T) {
	c := fakeClient(t, backupFixtures()...)
	for _, tc := range []struct {
		name string
		args []string
		want [][]string
	}{
		{"of a resource", []string{"backups", "cart"}, [][]string{
			{"NAME", "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE"},
			{"cart-1741010000", "Running", "-", "2025-03-04T05:04:07Z", "2m0s", "nightly"},
			{"cart-manual-20250304010000", "Failed", "-", "-", "-"},
			{"cart-1741000000", "Completed", "1.5", "MiB", "2025-03-04T02:06:07Z", "1m30s", "nightly"},
		}},
		{"of a kind", []string{"backups", "--kind", "redisreplications", "sessions"}, [][]string{
			{"NAME", "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE"},
			{"sessions-manual-20250301000000", "-", "-", "-", "-"},
		}},
		{"of the namespace", []string{"backups"}, [][]string{
			{"NAME", "TARGET", "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE"},
			{"cart-1741010000", "RedisCluster/cart", "Running", "-", "2025-03-04T05:04:07Z", "2m0s", "nightly"},
			{"cart-manual-20250304010000", "RedisCluster/cart", "Failed", "-", "-", "-"},
			{"cart-1741000000", "RedisCluster/cart", "Completed", "1.5", "MiB", "2025-03-04T02:06:07Z", "1m30s", "nightly"},
			{"old-1", "RedisReplication/old", "-", "-", "-", "-"},
			{"sessions-manual-20250301000000", "RedisReplication/sessions", "-", "-", "-", "-"},
		}},
		{"of every namespace, of a kind", []string{"backups", "-A", "--kind", "rediscluster"}, [][]string{
			{"NAMESPACE", "NAME", "TARGET", "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE"},
			{"billing", "cart-1", "RedisCluster/cart", "-", "-", "-", "-"},
			{"shop", "cart-1741010000", "RedisCluster/cart", "Running", "-", "2025-03-04T05:04:07Z", "2m0s", "nightly"},
			{"shop", "cart-manual-20250304010000", "RedisCluster/cart", "Failed", "-", "-", "-"},
			{"shop", "cart-1741000000", "RedisCluster/cart", "Completed", "1.5", "MiB", "2025-03-04T02:06:07Z", "1m30s", "nightly"},
		}},
		{"of a resource that is gone", []string{"backups", "old"}, [][]string{
			strings.Fields(`no RedisCluster, RedisReplication, Redis named "old" in namespace "shop" (deleted?); its backups:`),
			{"NAME", "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE"},
			{"old-1", "-", "-", "-", "-"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runBackup(t, c, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			got := tableRows(out)
			if len(got) != len(tc.want) {
				t.Fatalf("%d rows, want %d:\n%s", len(got), len(tc.want), out)
			}
			for i := range got {
				if strings.Join(got[i], " ") != strings.Join(tc.want[i], " ") {
					t.Errorf("row %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestBackupsDocument: -o json holds the fields of the table and the location and condition.
func TestBackupsDocument(t *testing.T) {
	out, err := runBackup(t, fakeClient(t, backupFixtures()...), "backups", "cart", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Items []BackupItem }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Items) != 3 {
		t.Fatalf("items: %+v", doc.Items)
	}
	done, failed := doc.Items[2], doc.Items[1]
	if done.Name != "cart-1741000000" || done.Bytes != 3<<19 || done.Size != "1.5 MiB" || done.Duration != "1m30s" ||
		done.Schedule != "nightly" || done.Location != "s3://backups/team/shop/cart-1741000000/" || done.TargetKind != "RedisCluster" ||
		done.StartedAt == nil || !done.StartedAt.Equal(backupClock.Add(-3*time.Hour)) {
		t.Errorf("completed: %+v", done)
	}
	if failed.Phase != "Failed" || failed.Message != "store unreachable" || failed.Schedule != "" {
		t.Errorf("failed: %+v", failed)
	}
	if out, err := runBackup(t, fakeClient(t), "backups", "-o", "yaml"); err != nil || strings.TrimSpace(out) != "items: []" {
		t.Errorf("no backups, yaml: %q, %v", out, err)
	}
	if out, err := runBackup(t, fakeClient(t), "backups"); err != nil || out != "No RedisBackups found.\n" {
		t.Errorf("no backups, table: %q, %v", out, err)
	}
}

// TestBackupArgumentErrors: flags that contradict each other, a bad timeout and a sentinel
// kind are refused before any API call.
func TestBackupArgumentErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backup"}, "backup needs NAME"},
		{[]string{"backup", "a", "b"}, "at most 1 argument"},
		{[]string{"backup", "a", "--from-schedule", "s", "--like", "b"}, "--from-schedule or --like, not both"},
		{[]string{"backup", "a", "--timeout", "0s"}, `--timeout "0s"`},
		{[]string{"backup", "a", "--timeout=soon"}, `--timeout "soon"`},
		{[]string{"backup", "a", "--wait=false", "--timeout", "1m"}, "it goes without --wait=false"},
		{[]string{"backup", "a", "--wait=maybe"}, `flag --wait takes true or false, not "maybe"`},
		{[]string{"backup", "a", "--kind", "redissentinel"}, "RedisSentinel a holds no data"},
		{[]string{"backup", "a", "-o", "json"}, "backup takes no --output flag"},
		{[]string{"backups", "a", "-A"}, "-A goes without NAME"},
		{[]string{"backups", "--kind", "RedisSentinel"}, "a RedisSentinel holds no data"},
		{[]string{"backups", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"backups", "--wait"}, "backups takes no --wait flag"},
		{[]string{"list", "--master=false"}, "flag --master takes no value"},
	} {
		var out strings.Builder
		if err := RunWith(t.Context(), tc.args, &out, noCluster(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
	for args, want := range map[string]BackupOptions{
		"backup a":                                {Wait: true, Timeout: 30 * time.Minute},
		"backup a --wait --timeout 90s":           {Wait: true, Timeout: 90 * time.Second},
		"backup a --wait=true --like b":           {Wait: true, Timeout: 30 * time.Minute, Like: "b"},
		"backup a --wait=false --from-schedule s": {Timeout: 30 * time.Minute, FromSchedule: "s"},
	} {
		inv, _, err := parseArgs(strings.Fields(args))
		if err != nil {
			t.Errorf("%s: %v", args, err)
			continue
		}
		if got := backupOptions(inv); got != want {
			t.Errorf("%s: %+v, want %+v", args, got, want)
		}
	}
}

// TestBackupsAndBackupRefuse: a name nothing has, a sentinel's name (told what to back up
// instead), and a cluster without the v1alpha1 CRDs each give an error that says so.
func TestBackupsAndBackupRefuse(t *testing.T) {
	c := fakeClient(t, backupFixtures()...)
	noCRDs := interceptor.NewClient(fake.NewClientBuilder().WithScheme(c.Scheme()).WithObjects(backupFixtures()...).Build(),
		interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := noBackupKinds(obj); err != nil {
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := noBackupKinds(list); err != nil {
					return err
				}
				return c.List(ctx, list, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := noBackupKinds(obj); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
		})
	const missingCRDs = "the operator's v1alpha1 CRDs (redisbackups, redisbackupschedules) are missing"
	for _, tc := range []struct {
		c    client.Client
		args []string
		want string
	}{
		{c, []string{"backups", "nothing"}, `no RedisCluster, RedisReplication, Redis named "nothing" in namespace "shop", and no RedisBackup targets it`},
		{c, []string{"backup", "nothing"}, `no RedisCluster, RedisReplication, Redis named "nothing" in namespace "shop"`},
		{c, []string{"backups", "watch"}, "RedisSentinel watch holds no data and cannot be backed up: back up the RedisReplication its sentinels watch (kubectl redis backup sessions)"},
		{c, []string{"backup", "watch"}, "RedisSentinel watch holds no data"},
		{c, []string{"backup", "cart", "--kind", "redis"}, `no Redis named "cart"`},
		{noCRDs, []string{"backups", "cart"}, missingCRDs},
		{noCRDs, []string{"backups"}, missingCRDs},
		{noCRDs, []string{"backup", "cart"}, missingCRDs},
		{noCRDs, []string{"backup", "cart", "--like", "cart-1"}, missingCRDs},
		{noCRDs, []string{"backup", "cart", "--from-schedule", "nightly"}, missingCRDs},
	} {
		out, err := runBackup(t, tc.c, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q (output %q)", tc.args, err, tc.want, out)
		}
	}
}

// noBackupKinds is the RESTMapper's error for the v1alpha1 kinds of a cluster without their
// CRDs.
func noBackupKinds(obj any) error {
	var kind string
	switch obj.(type) {
	case *v1alpha1.RedisBackup, *v1alpha1.RedisBackupList:
		kind = "RedisBackup"
	case *v1alpha1.RedisBackupSchedule, *v1alpha1.RedisBackupScheduleList:
		kind = "RedisBackupSchedule"
	default:
		return nil
	}
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: kind},
		SearchedVersions: []string{v1alpha1.GroupVersion.Version}}
}

// TestBackupStorage: the storage (and source) comes from the schedule or backup named, else
// from the only schedule of the resource, else from its earlier backups when they agree;
// otherwise the error lists what there is to choose from.
func TestBackupStorage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		extra    []client.Object
		args     []string
		bucket   string
		source   v1alpha1.BackupSource
		saying   string
		wantErr  string
		wantKind string
	}{
		{name: "the only schedule", args: []string{"backup", "cart"}, bucket: "backups", source: v1alpha1.SourceMaster,
			saying: "with the storage of RedisBackupSchedule nightly, the only schedule of cart", wantKind: "RedisCluster"},
		{name: "the only earlier backup", args: []string{"backup", "sessions"}, bucket: "archive",
			saying: "RedisBackup sessions-manual-20250301000000, the only earlier backup of sessions", wantKind: "RedisReplication"},
		{name: "earlier backups that agree", args: []string{"backup", "sessions"}, bucket: "archive",
			extra:  []client.Object{backupOf("shop", "sessions-2", sessionsTarget, s3Storage("archive", ""), time.Hour, "")},
			saying: "RedisBackup sessions-2, the newest of the 2 earlier backups of sessions (all with that storage)"},
		{name: "--from-schedule", args: []string{"backup", "cache", "--from-schedule", "nightly"}, bucket: "backups",
			source: v1alpha1.SourceMaster, saying: "with the storage of RedisBackupSchedule nightly.", wantKind: "Redis"},
		{name: "--like", args: []string{"backup", "cart", "--like", "sessions-manual-20250301000000"}, bucket: "archive",
			saying: "with the storage of RedisBackup sessions-manual-20250301000000."},
		{name: "nothing to copy", args: []string{"backup", "cache"},
			wantErr: "no RedisBackupSchedule or RedisBackup targets Redis cache, so there is no storage to copy: give --from-schedule SCHEDULE or --like BACKUP " +
				"(in namespace shop, schedules: nightly; backups: cart-1741000000, cart-1741010000, cart-manual-20250304010000, old-1, sessions-manual-20250301000000)"},
		{name: "two schedules", args: []string{"backup", "cart"},
			extra:   []client.Object{schedule("shop", "hourly", cartTarget, s3Storage("fast", ""))},
			wantErr: "2 RedisBackupSchedules back up RedisCluster cart (hourly, nightly): say whose storage to use with --from-schedule SCHEDULE, or --like BACKUP"},
		{name: "earlier backups that differ", args: []string{"backup", "sessions"},
			extra: []client.Object{backupOf("shop", "sessions-2", sessionsTarget, s3Storage("other", ""), time.Hour, "")},
			wantErr: "the earlier backups of RedisReplication sessions use different storage: say which to copy with --like BACKUP " +
				"(sessions-2 (s3://other (http://s3:8333)), sessions-manual-20250301000000 (s3://archive (http://s3:8333))), or --from-schedule SCHEDULE"},
		{name: "a schedule that is not there", args: []string{"backup", "cart", "--from-schedule", "weekly"},
			wantErr: `no RedisBackupSchedule "weekly" in namespace "shop"`},
		{name: "a backup that is not there", args: []string{"backup", "cart", "--like", "cart-1"},
			wantErr: `no RedisBackup "cart-1" in namespace "shop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClient(t, append(backupFixtures(), tc.extra...)...)
			out, err := runBackup(t, c, append(tc.args, "--wait=false")...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := tc.args[1] + "-manual-20250304050607"
			if !strings.HasPrefix(out, "RedisBackup "+name+" created: ") || !strings.Contains(out, tc.saying) ||
				!strings.Contains(out, "kubectl redis backups "+tc.args[1]+" -n shop follows it") {
				t.Errorf("output:\n%s", out)
			}
			var b v1alpha1.RedisBackup
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: name}, &b); err != nil {
				t.Fatal(err)
			}
			if b.Spec.Target.Name != tc.args[1] || (tc.wantKind != "" && b.Spec.Target.Kind != tc.wantKind) ||
				b.Spec.Storage.S3 == nil || b.Spec.Storage.S3.Bucket != tc.bucket || b.Spec.Source != tc.source ||
				b.Spec.Storage.S3.CredentialsSecret.Name != "s3-credentials" {
				t.Errorf("spec %+v", b.Spec)
			}
			// A schedule's retention must never prune a backup made by hand.
			if len(b.OwnerReferences) != 0 || b.Labels[v1alpha1.LabelBackupSchedule] != "" {
				t.Errorf("owners %v, labels %v", b.OwnerReferences, b.Labels)
			}
		})
	}
}

// TestManualBackupName: NAME-manual-<UTC time>, NAME shortened to keep 63 characters and a
// name that does not end in a dash.
func TestManualBackupName(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for name, want := range map[string]string{
		"cart":                           "cart-manual-20250304050607",
		strings.Repeat("a", 41):          strings.Repeat("a", 41) + "-manual-20250304050607",
		strings.Repeat("a", 60):          strings.Repeat("a", 41) + "-manual-20250304050607",
		strings.Repeat("a", 40) + "-bcd": strings.Repeat("a", 40) + "-manual-20250304050607",
	} {
		got := manualBackupName(name, backupClock.In(paris))
		if got != want || len(got) > 63 {
			t.Errorf("%s: %s (%d), want %s", name, got, len(got), want)
		}
	}
}

// advancingClient plays the operator: each read of a RedisBackup returns the next status of
// script, the last one from then on.
func advancingClient(t *testing.T, script []v1alpha1.RedisBackupStatus, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads := 0
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if b, ok := obj.(*v1alpha1.RedisBackup); ok && len(script) > 0 {
				mu.Lock()
				defer mu.Unlock()
				b.Status = *script[min(reads, len(script)-1)].DeepCopy()
				reads++
			}
			return nil
		},
	})
}

func readyMessage(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: v1beta2.ConditionReady, Status: status, Reason: reason, Message: message}}
}

// TestBackupWaits: the wait prints a line each time the backup's progress changes (never the
// same twice), then its size, duration and location; Failed and a timeout are errors.
func TestBackupWaits(t *testing.T) {
	started := &metav1.Time{Time: backupClock.Add(time.Second)}
	pending := v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupPending,
		Conditions: readyMessage(metav1.ConditionFalse, "Waiting", "no ready pod of RedisCluster cart")}
	running := v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupRunning, StartedAt: started,
		Conditions: readyMessage(metav1.ConditionFalse, "Running", "reading a snapshot of cart-leader-0, cart-leader-1")}
	runningBytes := *running.DeepCopy()
	runningBytes.TotalBytes = 5 << 20
	completed := v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupCompleted, StartedAt: started,
		CompletedAt: &metav1.Time{Time: started.Add(75 * time.Second)}, TotalBytes: 12 << 20, Size: "12.0 MiB",
		Location:   "s3://backups/team/shop/cart-manual-20250304050607/",
		Shards:     []v1alpha1.ShardBackup{{Node: "cart-leader-0"}, {Node: "cart-leader-1"}},
		Conditions: readyMessage(metav1.ConditionTrue, "Completed", "stored 2 snapshots")}
	failed := v1alpha1.RedisBackupStatus{Phase: v1alpha1.BackupFailed, StartedAt: started,
		CompletedAt: &metav1.Time{Time: started.Add(time.Second)},
		Conditions:  readyMessage(metav1.ConditionFalse, "BackupFailed", "upload to s3://backups: connection refused")}

	for _, tc := range []struct {
		name    string
		script  []v1alpha1.RedisBackupStatus
		args    []string
		lines   []string
		wantErr string
	}{
		{name: "completed", script: []v1alpha1.RedisBackupStatus{{}, {}, pending, pending, running, running, runningBytes, runningBytes, completed},
			lines: []string{
				"0s  waiting for the operator to pick the backup up",
				"0s  Pending: no ready pod of RedisCluster cart",
				"0s  Running: reading a snapshot of cart-leader-0, cart-leader-1",
				"0s  Running: reading a snapshot of cart-leader-0, cart-leader-1 (5.0 MiB so far)",
				"0s  Completed (2 shards done)",
				"RedisBackup cart-manual-20250304050607 Completed: 12.0 MiB in 2 shards, took 1m15s, at s3://backups/team/shop/cart-manual-20250304050607/.",
			}},
		{name: "failed", script: []v1alpha1.RedisBackupStatus{pending, running, failed},
			lines: []string{
				"0s  Pending: no ready pod of RedisCluster cart",
				"0s  Running: reading a snapshot of cart-leader-0, cart-leader-1",
				"0s  Failed",
			},
			wantErr: "RedisBackup cart-manual-20250304050607 Failed: upload to s3://backups: connection refused"},
		{name: "timeout", script: []v1alpha1.RedisBackupStatus{pending, running}, args: []string{"--timeout", "1s"},
			lines: []string{
				"0s  Pending: no ready pod of RedisCluster cart",
				"0s  Running: reading a snapshot of cart-leader-0, cart-leader-1",
			},
			wantErr: "RedisBackup cart-manual-20250304050607 is still Running after 1s: it goes on in the cluster (kubectl redis backups cart -n shop follows it): context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := advancingClient(t, tc.script, backupFixtures()...)
			out, err := runBackup(t, c, append([]string{"backup", "cart"}, tc.args...)...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("error %v\nwant %s", err, tc.wantErr)
			}
			var got []string
			for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
				got = append(got, strings.TrimSpace(line))
			}
			want := append([]string{"RedisBackup cart-manual-20250304050607 created: RedisCluster cart to s3://backups/team (http://s3:8333), " +
				"with the storage of RedisBackupSchedule nightly, the only schedule of cart."}, tc.lines...)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestBackupDeletedWhileWaiting: a backup deleted under the wait ends it with an error.
func TestBackupDeletedWhileWaiting(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(backupFixtures()...).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1alpha1.RedisBackup); ok {
				return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "redisbackups"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	_, err = runBackup(t, c, "backup", "cart")
	if err == nil || !strings.Contains(err.Error(), "RedisBackup cart-manual-20250304050607 was deleted before it ended") {
		t.Errorf("error %v", err)
	}
}

// TestBackupWaitInterrupted: an interrupt (the context cancelled) stops the wait, not the
// backup, and says so.
func TestBackupWaitInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out strings.Builder
	err := RunWith(ctx, []string{"backup", "cart"}, &out, backupConnector(fakeClient(t, backupFixtures()...)))
	want := "stopped waiting for RedisBackup cart-manual-20250304050607 (not picked up by the operator): it goes on in the cluster"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want %q", err, want)
	}
}
