package builder

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

func TestRestoreInitContainer(t *testing.T) {
	initNames := func(o *Objects) []string {
		var names []string
		for _, c := range o.StatefulSets[0].Spec.Template.Spec.InitContainers {
			names = append(names, c.Name)
		}
		return names
	}
	o, err := BuildRedis(RedisInput{CR: minimalRedis(), Restore: testRestore()})
	if err != nil {
		t.Fatal(err)
	}
	if got := initNames(o); !slices.Equal(got, []string{restoreInitName}) {
		t.Errorf("init containers = %v, want the restore", got)
	}
	if got := o.StatefulSets[0].Annotations[AnnotationRestoredFrom]; got != "nightly-1" {
		t.Errorf("annotation %s = %q, want nightly-1", AnnotationRestoredFrom, got)
	}
	// The StatefulSet records the restore, which builds the same pod template again.
	recorded, err := RecordedRestore(o.StatefulSets[0].Annotations)
	if err != nil || recorded == nil || !equality.Semantic.DeepEqual(recorded, testRestore()) {
		t.Fatalf("recorded restore %+v (%v), want %+v", recorded, err, testRestore())
	}
	again, err := BuildRedis(RedisInput{CR: minimalRedis(), Restore: recorded})
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(again.StatefulSets[0], o.StatefulSets[0]) {
		t.Error("the recorded restore builds another StatefulSet")
	}
	if got, err := RecordedRestore(map[string]string{AnnotationRestoreInput: "{"}); err == nil || got != nil {
		t.Errorf("a broken record: %+v, %v; want an error", got, err)
	}
	for _, c := range o.StatefulSets[0].Spec.Template.Spec.InitContainers {
		for _, arg := range c.Command {
			if arg == "--access-key-id" || arg == "--secret-access-key" {
				t.Errorf("a credential in the command: %v", c.Command)
			}
		}
	}

	// Once restored, the StatefulSet keeps naming its backup without the init container.
	o, err = BuildRedis(RedisInput{CR: minimalRedis(), RestoredFrom: "nightly-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := initNames(o); len(got) != 0 {
		t.Errorf("init containers = %v, want none", got)
	}
	if got := o.StatefulSets[0].Annotations[AnnotationRestoredFrom]; got != "nightly-1" {
		t.Errorf("annotation %s = %q, want nightly-1", AnnotationRestoredFrom, got)
	}

	for name, change := range map[string]func(*RestoreInput){
		"no image":       func(in *RestoreInput) { in.Image = "" },
		"no key":         func(in *RestoreInput) { in.Key = "" },
		"no checksum":    func(in *RestoreInput) { in.SHA256 = "" },
		"no credentials": func(in *RestoreInput) { in.CredentialsSecret = "" },
	} {
		in := testRestore()
		change(in)
		if _, err := BuildRedis(RedisInput{CR: minimalRedis(), Restore: in}); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

// A replication's pods share the restore init container, which restores in pod 0 only and
// skips once the state ConfigMap, which changes no pod template, says the restore is done.
func TestReplicationRestoreInitContainer(t *testing.T) {
	build := func(restored bool) *Objects {
		t.Helper()
		o, err := BuildRedisReplication(RedisReplicationInput{CR: minimalReplication(), Restore: testRestore(), Restored: restored})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := build(false)
	sts := o.StatefulSets[0]
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != restoreInitName {
		t.Fatalf("init containers %+v, want the restore", inits)
	}
	cmd := strings.Join(inits[0].Command, " ")
	if !strings.Contains(cmd, "--only-ordinal 0") || !strings.Contains(cmd, "--skip-file "+restoreStateDir+"/"+RestoreDoneKey) {
		t.Errorf("command %q, want the ordinal rule and the skip file", cmd)
	}
	var podName bool
	for _, e := range inits[0].Env {
		podName = podName || e.Name == envPodName && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}
	if !podName {
		t.Errorf("env %+v, want %s from metadata.name", inits[0].Env, envPodName)
	}
	var stateVolume bool
	for _, v := range sts.Spec.Template.Spec.Volumes {
		stateVolume = stateVolume || v.ConfigMap != nil && v.ConfigMap.Name == RestoreStateConfigMapName(sts.Name) && *v.ConfigMap.Optional
	}
	if !stateVolume {
		t.Errorf("volumes %+v, want the optional restore state ConfigMap", sts.Spec.Template.Spec.Volumes)
	}
	if sts.Annotations[AnnotationRestoredFrom] != "nightly-1" || sts.Annotations[AnnotationRestoreInput] == "" {
		t.Errorf("annotations %v, want the restore recorded", sts.Annotations)
	}
	state := o.ConfigMap(RestoreStateConfigMapName(sts.Name))
	if state == nil || len(state.Data) != 0 {
		t.Fatalf("restore state %+v, want an empty ConfigMap while restoring", state)
	}
	done := build(true)
	if got := done.ConfigMap(RestoreStateConfigMapName(sts.Name)).Data[RestoreDoneKey]; got != "nightly-1" {
		t.Errorf("restore state once restored: %q, want the backup's name", got)
	}
	if !equality.Semantic.DeepEqual(done.StatefulSets[0], sts) {
		t.Error("the restore being done changed the StatefulSet: its pods would restart")
	}
	// Without a restore: no init container, no state.
	plain, err := BuildRedisReplication(RedisReplicationInput{CR: minimalReplication(), RestoredFrom: "nightly-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.StatefulSets[0].Spec.Template.Spec.InitContainers) != 0 || plain.ConfigMap(RestoreStateConfigMapName(sts.Name)) != nil ||
		plain.StatefulSets[0].Annotations[AnnotationRestoredFrom] != "nightly-1" {
		t.Errorf("restored-from only: init %+v, annotations %v", plain.StatefulSets[0].Spec.Template.Spec.InitContainers, plain.StatefulSets[0].Annotations)
	}
	// The standalone kind restores in its one pod, without the replication's rule.
	standalone, err := BuildRedis(RedisInput{CR: minimalRedis(), Restore: testRestore()})
	if err != nil {
		t.Fatal(err)
	}
	if cmd := strings.Join(standalone.StatefulSets[0].Spec.Template.Spec.InitContainers[0].Command, " "); strings.Contains(cmd, "--only-ordinal") {
		t.Errorf("standalone command %q has the replication's rule", cmd)
	}
}

func testClusterRestore() *RestoreInput {
	in := testRestore()
	in.Key, in.SHA256, in.Bytes = "", "", 0
	for i := range 3 {
		in.Shards = append(in.Shards, RestoreObject{Key: fmt.Sprintf("cluster/default/nightly-1/shards-follower-%d.rdb", i),
			SHA256: strings.Repeat(fmt.Sprintf("%x", 10+i), 64), Bytes: int64(4096 + i)})
	}
	return in
}

// A cluster restores through its leaders only, each the shard of its ordinal, and skips
// once the state ConfigMap says the cluster was restored; the followers restore nothing and
// sync from their masters.
func TestClusterRestoreInitContainer(t *testing.T) {
	build := func(restored bool) *Objects {
		t.Helper()
		o, err := BuildRedisCluster(RedisClusterInput{CR: minimalCluster(), Restore: testClusterRestore(), Restored: restored})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := build(false)
	leader, follower := o.StatefulSet("shards-leader"), o.StatefulSet("shards-follower")
	if leader == nil || follower == nil {
		t.Fatal("no leader or follower StatefulSet")
	}
	inits := leader.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != restoreInitName {
		t.Fatalf("leader init containers %+v, want the restore", inits)
	}
	cmd := strings.Join(inits[0].Command, " ")
	for i, shard := range testClusterRestore().Shards {
		want := fmt.Sprintf("--ordinal-object %d:%s:%d:%s", i, shard.SHA256, shard.Bytes, shard.Key)
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	for _, unwanted := range []string{"--only-ordinal", "--key ", "--sha256 ", "--bytes "} {
		if strings.Contains(cmd, unwanted) {
			t.Errorf("command %q has %q: the pod picks its shard by its ordinal", cmd, unwanted)
		}
	}
	if !strings.Contains(cmd, "--skip-file "+restoreStateDir+"/"+RestoreDoneKey) || !strings.Contains(cmd, "--appendonly") {
		t.Errorf("command %q, want the skip file and the AOF (persistence is on by default)", cmd)
	}
	var podName bool
	for _, e := range inits[0].Env {
		podName = podName || e.Name == envPodName && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil
	}
	if !podName {
		t.Errorf("env %+v, want %s", inits[0].Env, envPodName)
	}
	if got := follower.Spec.Template.Spec.InitContainers; len(got) != 0 {
		t.Errorf("follower init containers %+v, want none: followers sync from their masters", got)
	}
	if follower.Annotations[AnnotationRestoredFrom] != "" || follower.Annotations[AnnotationRestoreInput] != "" {
		t.Errorf("follower annotations %v, want no restore", follower.Annotations)
	}
	recorded, err := RecordedRestore(leader.Annotations)
	if err != nil || !equality.Semantic.DeepEqual(recorded, testClusterRestore()) || leader.Annotations[AnnotationRestoredFrom] != "nightly-1" {
		t.Fatalf("recorded %+v (%v), annotations %v; want the cluster's restore", recorded, err, leader.Annotations)
	}
	state := o.ConfigMap(RestoreStateConfigMapName(leader.Name))
	if state == nil || len(state.Data) != 0 {
		t.Fatalf("restore state %+v, want an empty ConfigMap while restoring", state)
	}
	done := build(true)
	if got := done.ConfigMap(RestoreStateConfigMapName(leader.Name)).Data[RestoreDoneKey]; got != "nightly-1" {
		t.Errorf("restore state once restored: %q, want the backup's name", got)
	}
	if !equality.Semantic.DeepEqual(done.StatefulSet("shards-leader"), leader) {
		t.Error("the restore being done changed the leader StatefulSet: its pods would restart")
	}

	// A single object, or a shard without its checksum, is no cluster restore.
	single := testRestore()
	if _, err := BuildRedisCluster(RedisClusterInput{CR: minimalCluster(), Restore: single}); err == nil {
		t.Error("a cluster restore of one object: built")
	}
	broken := testClusterRestore()
	broken.Shards[1].SHA256 = ""
	if _, err := BuildRedisCluster(RedisClusterInput{CR: minimalCluster(), Restore: broken}); err == nil {
		t.Error("a shard without checksum: built")
	}
	// The record of a Redis keeps its form: no Shards field.
	if raw := testRestore().record(); strings.Contains(raw, "Shards") {
		t.Errorf("a Redis's record %s names shards", raw)
	}
}
