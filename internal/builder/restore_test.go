package builder

import (
	"slices"
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
	if err != nil || recorded == nil || *recorded != *testRestore() {
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
