package controller

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

func restorableBackup(kind string) *v1alpha1.RedisBackup {
	b := &v1alpha1.RedisBackup{}
	b.Name = "nightly"
	b.Spec.Target = v1alpha1.BackupTarget{Kind: kind, Name: "cache"}
	b.Spec.Storage.S3 = &v1alpha1.S3Storage{Endpoint: "http://s3:9000", Bucket: "backups", Region: "r1", ForcePathStyle: true,
		CredentialsSecret: v1alpha1.SecretReference{Name: "creds"}, CASecret: &v1alpha1.SecretReference{Name: "ca"}}
	b.Status.Phase = v1alpha1.BackupCompleted
	b.Status.Shards = []v1alpha1.ShardBackup{{Node: "cache-0", Location: "s3://backups/p/ns/nightly/cache-0.rdb",
		Bytes: 99, SHA256: strings.Repeat("ab", 32)}}
	return b
}

func TestDecideRestore(t *testing.T) {
	spec := &v1beta2.RestoreSpec{BackupName: "nightly"}
	withKind := func(kind string, change func(*v1alpha1.RedisBackup)) *v1alpha1.RedisBackup {
		b := restorableBackup(kind)
		change(b)
		return b
	}
	with := func(change func(*v1alpha1.RedisBackup)) *v1alpha1.RedisBackup { return withKind("Redis", change) }
	for _, tc := range []struct {
		name   string
		facts  restoreFacts
		action restoreAction
		reason string
	}{
		{"no restore", restoreFacts{kind: "Redis"}, restoreNone, ""},
		{"new resource", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1"}, restoreBuild, ""},
		{"created by this restore", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1",
			statefulSetExists: true, restoredFrom: "nightly"}, restoreBuild, ""},
		{"running, not restored", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1",
			statefulSetExists: true}, restoreRefuseRunning, status.ReasonRestoreRefused},
		{"running, restored from another backup", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1",
			statefulSetExists: true, restoredFrom: "weekly"}, restoreRefuseRunning, status.ReasonRestoreRefused},
		{"no backup", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1"}, restoreWait, status.ReasonRestoreBackupNotFound},
		{"backup pending", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Phase = "" })}, restoreWait, status.ReasonRestoreBackupNotReady},
		{"backup running", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupRunning })}, restoreWait, status.ReasonRestoreBackupNotReady},
		{"backup failed", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupFailed })}, restoreRefuse, status.ReasonRestoreBackupFailed},
		{"backup of a cluster", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: restorableBackup("RedisCluster")}, restoreRefuse, status.ReasonRestoreMismatch},
		{"two shards", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Shards = append(b.Status.Shards, b.Status.Shards[0]) })}, restoreRefuse, status.ReasonRestoreMismatch},
		{"object of another bucket", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Shards[0].Location = "s3://other/k.rdb" })}, restoreRefuse, status.ReasonRestoreMismatch},
		{"backup on a claim", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) {
				b.Spec.Storage.S3 = nil
				b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "c"}
				b.Status.Shards[0].Location = "pvc://c/backups/ns/nightly/cache-0.rdb"
			})}, restoreBuild, ""},
		{"backup on a claim, an object of another claim", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			backup: with(func(b *v1alpha1.RedisBackup) {
				b.Spec.Storage.S3 = nil
				b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "c"}
				b.Status.Shards[0].Location = "pvc://d/backups/ns/nightly/cache-0.rdb"
			})}, restoreRefuse, status.ReasonRestoreMismatch},
		{"no operator image", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis")}, restoreRefuse, status.ReasonRestoreUnsupported},
		{"a kind without restore, new", restoreFacts{kind: "RedisCluster", spec: spec, unsupported: true}, restoreRefuse, status.ReasonRestoreUnsupported},
		{"a kind without restore, running", restoreFacts{kind: "RedisCluster", spec: spec, unsupported: true, statefulSetExists: true},
			restoreRefuseRunning, status.ReasonRestoreUnsupported},
		// A RedisReplication restores a backup of a RedisReplication (one shard: its master's
		// or a replica's snapshot), with the same refusals as a Redis.
		{"replication, new", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("RedisReplication"), operatorImage: "op:1"},
			restoreBuild, ""},
		{"replication, created by this restore", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("RedisReplication"),
			operatorImage: "op:1", statefulSetExists: true, restoredFrom: "nightly"}, restoreBuild, ""},
		{"replication, running", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("RedisReplication"), operatorImage: "op:1",
			statefulSetExists: true}, restoreRefuseRunning, status.ReasonRestoreRefused},
		{"replication, backup of a Redis", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1"},
			restoreRefuse, status.ReasonRestoreMismatch},
		{"Redis, backup of a replication", restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("RedisReplication"), operatorImage: "op:1"},
			restoreRefuse, status.ReasonRestoreMismatch},
		{"replication, backup of a cluster", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("RedisCluster"), operatorImage: "op:1"},
			restoreRefuse, status.ReasonRestoreMismatch},
		{"replication, no backup", restoreFacts{kind: "RedisReplication", spec: spec, operatorImage: "op:1"}, restoreWait, status.ReasonRestoreBackupNotFound},
		{"replication, backup running", restoreFacts{kind: "RedisReplication", spec: spec, operatorImage: "op:1",
			backup: withKind("RedisReplication", func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupRunning })}, restoreWait, status.ReasonRestoreBackupNotReady},
		{"replication, backup failed", restoreFacts{kind: "RedisReplication", spec: spec, operatorImage: "op:1",
			backup: withKind("RedisReplication", func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupFailed })}, restoreRefuse, status.ReasonRestoreBackupFailed},
		{"replication, no operator image", restoreFacts{kind: "RedisReplication", spec: spec, backup: restorableBackup("RedisReplication")},
			restoreRefuse, status.ReasonRestoreUnsupported},
		{"replication, restored, backup gone since", restoreFacts{kind: "RedisReplication", spec: spec, operatorImage: "op:1",
			statefulSetExists: true, restoredFrom: "nightly", restored: true}, restoreDone, ""},
		{"cluster without restore", restoreFacts{kind: "RedisCluster", unsupported: true, statefulSetExists: true}, restoreNone, ""},
		{"restored, backup gone since", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			statefulSetExists: true, restoredFrom: "nightly", restored: true}, restoreDone, ""},
		{"restoring, backup gone before Ready", restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1",
			statefulSetExists: true, restoredFrom: "nightly"}, restoreWait, status.ReasonRestoreBackupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideRestore(tc.facts)
			if d.action != tc.action || d.reason != tc.reason {
				t.Fatalf("decision = %d %q (%s), want %d %q", d.action, d.reason, d.message, tc.action, tc.reason)
			}
			if (d.action == restoreBuild) != (d.input != nil) {
				t.Errorf("input = %+v with action %d", d.input, d.action)
			}
		})
	}
	d := decideRestore(restoreFacts{kind: "Redis", spec: spec, backup: restorableBackup("Redis"), operatorImage: "op:1"})
	in := d.input
	// Once the StatefulSet records the restore it was made with, that one is kept, whatever
	// became of the backup (here deleted) or of the operator's image: a pod template that
	// changed would restart a Redis whose data is its own by then.
	recorded := *in
	for name, facts := range map[string]restoreFacts{
		"backup gone":   {kind: "Redis", spec: spec, operatorImage: "op:2", statefulSetExists: true, restoredFrom: "nightly", restored: true, recorded: &recorded},
		"new image":     {kind: "Redis", spec: spec, operatorImage: "op:2", statefulSetExists: true, restoredFrom: "nightly", recorded: &recorded, backup: restorableBackup("Redis")},
		"backup failed": {kind: "Redis", spec: spec, operatorImage: "op:2", statefulSetExists: true, restoredFrom: "nightly", recorded: &recorded, backup: with(func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupFailed })},
	} {
		if kept := decideRestore(facts); kept.action != restoreBuild || kept.input == nil || !reflect.DeepEqual(*kept.input, recorded) {
			t.Errorf("%s: decision %d with input %+v, want the recorded restore %+v", name, kept.action, kept.input, recorded)
		}
	}
	other := recorded
	other.BackupName = "weekly"
	if d := decideRestore(restoreFacts{kind: "Redis", spec: spec, operatorImage: "op:1", statefulSetExists: true, restoredFrom: "weekly", recorded: &other}); d.action != restoreRefuseRunning {
		t.Errorf("a StatefulSet restored from another backup: decision %d, want refused", d.action)
	}
	if in.Key != "p/ns/nightly/cache-0.rdb" || in.Bucket != "backups" || in.Endpoint != "http://s3:9000" || in.Region != "r1" ||
		!in.ForcePathStyle || in.CredentialsSecret != "creds" || in.CASecret != "ca" || in.Bytes != 99 || in.Image != "op:1" ||
		d.restoredFrom != "nightly" {
		t.Errorf("input = %+v, restoredFrom %q", in, d.restoredFrom)
	}
}

// A restored replication's first master is pod 0, which alone restores, until it is Restored;
// a replication not created by a restore has none.
func TestRestoreFirstMaster(t *testing.T) {
	scope := func(action restoreAction, restored bool) *replicationScope {
		cr := &v1beta2.RedisReplication{}
		cr.Name = "shop"
		if restored {
			cr.Status.Conditions = []metav1.Condition{{Type: ConditionRestored, Status: metav1.ConditionTrue, Reason: status.ReasonRestored}}
		}
		s := &replicationScope{cr: cr, restore: restoreState{decision: restoreDecision{action: action}}}
		s.Conditions = status.NewConditions(&cr.Status.Conditions, cr.Generation)
		return s
	}
	for _, tc := range []struct {
		name     string
		action   restoreAction
		restored bool
		want     string
	}{
		{"restoring", restoreBuild, false, "shop-0"},
		{"restored", restoreBuild, true, ""},
		{"no restore", restoreNone, false, ""},
		{"refused on a running replication", restoreRefuseRunning, false, ""},
		{"restored, backup gone", restoreDone, true, ""},
	} {
		if got := restoreFirstMaster(scope(tc.action, tc.restored)); got != tc.want {
			t.Errorf("%s: first master %q, want %q", tc.name, got, tc.want)
		}
	}
}

// clusterBackup is a Completed backup of a cluster of three shards on the even split, its shards
// listed in the order given (a backup lists them as it read them).
func clusterBackup(order ...int) *v1alpha1.RedisBackup {
	const n = 3
	b := restorableBackup("RedisCluster")
	b.Status.Shards = nil
	ranges := redis.SplitSlots(n)
	if len(order) == 0 {
		for i := range n {
			order = append(order, i)
		}
	}
	for _, i := range order {
		b.Status.Shards = append(b.Status.Shards, v1alpha1.ShardBackup{Node: fmt.Sprintf("shards-follower-%d", i),
			SlotRanges: []string{ranges[i].String()}, Location: fmt.Sprintf("s3://backups/p/ns/nightly/shards-follower-%d.rdb", i),
			Bytes: int64(100 + i), SHA256: strings.Repeat(fmt.Sprintf("%x", 10+i), 64)})
	}
	return b
}

func TestShardOrdinals(t *testing.T) {
	shard := func(node string, ranges ...string) v1alpha1.ShardBackup {
		return v1alpha1.ShardBackup{Node: node, SlotRanges: ranges}
	}
	for _, tc := range []struct {
		name    string
		shards  []v1alpha1.ShardBackup
		leaders int
		want    []int // nil: refused
	}{
		{"even split, in order", []v1alpha1.ShardBackup{shard("a", "0-5460"), shard("b", "5461-10922"), shard("c", "10923-16383")}, 3, []int{0, 1, 2}},
		{"even split, listed out of order", []v1alpha1.ShardBackup{shard("c", "10923-16383"), shard("a", "0-5460"), shard("b", "5461-10922")}, 3, []int{1, 2, 0}},
		{"uneven, most overlap wins", []v1alpha1.ShardBackup{shard("a", "0-6000"), shard("b", "6001-9000"), shard("c", "9001-16383")}, 3, []int{0, 1, 2}},
		{"several ranges, both mostly leader 0's", []v1alpha1.ShardBackup{shard("b", "5461-10000", "10001-10922", "5"), shard("a", "0-4", "6-5460")}, 2, nil},
		{"two shards, two ranges each", []v1alpha1.ShardBackup{shard("b", "8192-12000", "12001-16383"), shard("a", "0-100", "101-8191")}, 2, []int{1, 0}},
		{"one shard", []v1alpha1.ShardBackup{shard("a", "0-16383")}, 1, []int{0}},
		{"two on one range", []v1alpha1.ShardBackup{shard("a", "0-3000"), shard("b", "3001-5460"), shard("c", "5461-16383")}, 3, nil},
		{"a shard without slots", []v1alpha1.ShardBackup{shard("a", "0-8191"), shard("b")}, 2, nil},
		{"a broken range", []v1alpha1.ShardBackup{shard("a", "0-8191"), shard("b", "8192-99999")}, 2, nil},
	} {
		got, err := shardOrdinals(tc.shards, tc.leaders)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: %v, want refused", tc.name, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
}

// A RedisCluster restores a backup of a RedisCluster of as many shards as it has leaders,
// each leader the shard of its slots; anything else is refused, and a running cluster is
// never restored into.
func TestDecideRestoreForClusters(t *testing.T) {
	spec := &v1beta2.RestoreSpec{BackupName: "nightly"}
	facts := func(b *v1alpha1.RedisBackup, change func(*restoreFacts)) restoreFacts {
		f := restoreFacts{kind: "RedisCluster", spec: spec, backup: b, operatorImage: "op:1", leaders: 3}
		if change != nil {
			change(&f)
		}
		return f
	}
	changed := func(change func(*v1alpha1.RedisBackup)) *v1alpha1.RedisBackup {
		b := clusterBackup()
		change(b)
		return b
	}
	for _, tc := range []struct {
		name   string
		facts  restoreFacts
		action restoreAction
		reason string
	}{
		{"new cluster", facts(clusterBackup(), nil), restoreBuild, ""},
		{"created by this restore", facts(clusterBackup(), func(f *restoreFacts) { f.statefulSetExists, f.restoredFrom = true, "nightly" }), restoreBuild, ""},
		{"running cluster", facts(clusterBackup(), func(f *restoreFacts) { f.statefulSetExists = true }), restoreRefuseRunning, status.ReasonRestoreRefused},
		{"running, restored from another", facts(clusterBackup(), func(f *restoreFacts) { f.statefulSetExists, f.restoredFrom = true, "weekly" }),
			restoreRefuseRunning, status.ReasonRestoreRefused},
		{"fewer leaders than shards", facts(clusterBackup(), func(f *restoreFacts) { f.leaders = 2 }), restoreRefuse, status.ReasonRestoreMismatch},
		{"more leaders than shards", facts(clusterBackup(), func(f *restoreFacts) { f.leaders = 4 }), restoreRefuse, status.ReasonRestoreMismatch},
		{"backup of a Redis", facts(restorableBackup("Redis"), func(f *restoreFacts) { f.leaders = 1 }), restoreRefuse, status.ReasonRestoreMismatch},
		{"backup of a replication", facts(restorableBackup("RedisReplication"), nil), restoreRefuse, status.ReasonRestoreMismatch},
		{"no backup", facts(nil, nil), restoreWait, status.ReasonRestoreBackupNotFound},
		{"backup running", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupRunning }), nil), restoreWait, status.ReasonRestoreBackupNotReady},
		{"backup pending", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Phase = "" }), nil), restoreWait, status.ReasonRestoreBackupNotReady},
		{"backup failed", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Phase = v1alpha1.BackupFailed }), nil), restoreRefuse, status.ReasonRestoreBackupFailed},
		{"a shard without checksum", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[1].SHA256 = "" }), nil), restoreRefuse, status.ReasonRestoreMismatch},
		{"a shard without size", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[2].Bytes = 0 }), nil), restoreRefuse, status.ReasonRestoreMismatch},
		{"a shard without location", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[0].Location = "" }), nil), restoreRefuse, status.ReasonRestoreMismatch},
		{"a shard of another bucket", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[0].Location = "s3://other/k.rdb" }), nil),
			restoreRefuse, status.ReasonRestoreMismatch},
		{"a shard without slots", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[0].SlotRanges = nil }), nil), restoreRefuse, status.ReasonRestoreMismatch},
		{"two shards on one range", facts(changed(func(b *v1alpha1.RedisBackup) { b.Status.Shards[1].SlotRanges = []string{"0-100"} }), nil),
			restoreRefuse, status.ReasonRestoreMismatch},
		{"no operator image", facts(clusterBackup(), func(f *restoreFacts) { f.operatorImage = "" }), restoreRefuse, status.ReasonRestoreUnsupported},
		{"restored, backup gone since", facts(nil, func(f *restoreFacts) { f.statefulSetExists, f.restoredFrom, f.restored = true, "nightly", true }), restoreDone, ""},
		{"restoring, backup gone before Ready", facts(nil, func(f *restoreFacts) { f.statefulSetExists, f.restoredFrom = true, "nightly" }),
			restoreWait, status.ReasonRestoreBackupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideRestore(tc.facts)
			if d.action != tc.action || d.reason != tc.reason {
				t.Fatalf("decision = %d %q (%s), want %d %q", d.action, d.reason, d.message, tc.action, tc.reason)
			}
			if (d.action == restoreBuild) != (d.input != nil) {
				t.Errorf("input = %+v with action %d", d.input, d.action)
			}
		})
	}
	// Shards listed out of order: each leader gets the shard of its designed range.
	d := decideRestore(facts(clusterBackup(2, 0, 1), nil))
	if d.action != restoreBuild || len(d.input.Shards) != 3 || d.input.Key != "" || d.input.SHA256 != "" || d.input.Bytes != 0 {
		t.Fatalf("decision %d, input %+v; want one object per leader", d.action, d.input)
	}
	for i, o := range d.input.Shards {
		if want := fmt.Sprintf("p/ns/nightly/shards-follower-%d.rdb", i); o.Key != want || o.Bytes != int64(100+i) ||
			o.SHA256 != strings.Repeat(fmt.Sprintf("%x", 10+i), 64) {
			t.Errorf("leader %d restores %+v, want %s", i, o, want)
		}
	}
	// The recorded restore is kept, the backup gone.
	recorded := *d.input
	kept := decideRestore(facts(nil, func(f *restoreFacts) { f.statefulSetExists, f.restoredFrom, f.recorded = true, "nightly", &recorded }))
	if kept.action != restoreBuild || !reflect.DeepEqual(kept.input, &recorded) {
		t.Errorf("recorded cluster restore: decision %d, input %+v", kept.action, kept.input)
	}
}

// TestRestoreFromAClaim: a backup on a claim is restored from the claim's store, as a backup in
// S3 is from its bucket: the store's Service (a bare name: the init container runs in the
// backup's namespace), its bucket, path-style, its credentials Secret, and the key under the
// claim's location.
func TestRestoreFromAClaim(t *testing.T) {
	b := restorableBackup("Redis")
	b.Spec.Storage.S3 = nil
	b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "redis/"}
	b.Status.Shards[0].Location = "pvc://backups/redis/backups/ns/nightly/cache-0.rdb"
	if got := locationPrefix(b); got != "pvc://backups/redis/backups/" {
		t.Fatalf("the claim's location prefix is %q", got)
	}
	d := decideRestore(restoreFacts{kind: "Redis", spec: &v1beta2.RestoreSpec{BackupName: "nightly"}, backup: b, operatorImage: "op:1"})
	if d.action != restoreBuild {
		t.Fatalf("decision %+v, want a restore", d)
	}
	in := d.input
	if in.Endpoint != "http://backups-backup-store:8333" || in.Bucket != "backups" || !in.ForcePathStyle ||
		in.CredentialsSecret != "backups-backup-store" || in.CASecret != "" || in.Region != "" {
		t.Errorf("the store restored from: %+v, want the claim store's", in)
	}
	if in.Key != "ns/nightly/cache-0.rdb" || in.Bytes != 99 || in.SHA256 != strings.Repeat("ab", 32) {
		t.Errorf("the object restored: key %q, %d bytes, SHA-256 %s", in.Key, in.Bytes, in.SHA256)
	}
}

// TestRestoreFromAClaimWaitsForItsStore: while the claim store serves no pod nothing is
// created (the init container could only fail), and the wait comes back by itself; a
// StatefulSet created by the restore keeps its recorded restore whatever the store does.
func TestRestoreFromAClaimWaitsForItsStore(t *testing.T) {
	b := restorableBackup("Redis")
	b.Spec.Storage.S3 = nil
	b.Spec.Storage.PersistentVolumeClaim = &v1alpha1.PVCStorage{ClaimName: "backups"}
	b.Status.Shards[0].Location = "pvc://backups/backups/ns/nightly/cache-0.rdb"
	spec := &v1beta2.RestoreSpec{BackupName: "nightly"}
	d := decideRestore(restoreFacts{kind: "Redis", spec: spec, backup: b, operatorImage: "op:1",
		claimStoreDown: "Deployment backups-backup-store is not available: no pod available"})
	if d.action != restoreWait || d.reason != status.ReasonRestoreBackupNotReady || !d.requeue ||
		!strings.Contains(d.message, "waiting for the store of PersistentVolumeClaim backups that RedisBackup nightly is read from") {
		t.Errorf("decision %+v, want a wait for the store that comes back by itself", d)
	}
	first := decideRestore(restoreFacts{kind: "Redis", spec: spec, backup: b, operatorImage: "op:1"})
	kept := decideRestore(restoreFacts{kind: "Redis", spec: spec, backup: b, operatorImage: "op:1", statefulSetExists: true,
		restoredFrom: "nightly", recorded: first.input, claimStoreDown: "Deployment backups-backup-store does not exist"})
	if kept.action != restoreBuild || kept.input != first.input {
		t.Errorf("a StatefulSet made by the restore: %+v, want its recorded restore kept", kept)
	}
}
