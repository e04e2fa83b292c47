package release

// No build tag: templateDiff, which says why the upgrade test finds a StatefulSet changed,
// has its own test without a sandbox.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// templateDiff lists what differs between two pod templates, one "path: before -> after" per
// field (a JSON path; "(none)" for a field one side lacks), sorted by path.
func templateDiff(before, after corev1.PodTemplateSpec) []string {
	a, b := flatten(before), flatten(after)
	var out []string
	for _, path := range slices.Sorted(maps.Keys(a)) {
		if bv, ok := b[path]; !ok {
			out = append(out, path+": "+a[path]+" -> (none)")
		} else if bv != a[path] {
			out = append(out, path+": "+a[path]+" -> "+bv)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[path]; !ok {
			out = append(out, path+": (none) -> "+b[path])
		}
	}
	slices.SortStableFunc(out, func(x, y string) int {
		px, _, _ := strings.Cut(x, ": ")
		py, _, _ := strings.Cut(y, ": ")
		return strings.Compare(px, py)
	})
	return out
}

// flatten maps each leaf of v's JSON form to its value, by path (.metadata.labels.app,
// .spec.containers[0].image).
func flatten(v any) map[string]string {
	raw, err := json.Marshal(v)
	if err != nil {
		return map[string]string{"": "unmarshalable: " + err.Error()}
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return map[string]string{"": "unmarshalable: " + err.Error()}
	}
	out := map[string]string{}
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, c := range n {
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range n {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		default:
			b, _ := json.Marshal(n)
			out[path] = string(b)
		}
	}
	walk("", tree)
	return out
}

func TestTemplateDiff(t *testing.T) {
	base := corev1.PodTemplateSpec{}
	base.Labels = map[string]string{"app": "redis"}
	base.Spec.Containers = []corev1.Container{{Name: "redis", Image: "redis:7.0.15"}}
	if d := templateDiff(base, *base.DeepCopy()); len(d) != 0 {
		t.Errorf("equal templates: %q", d)
	}
	changed := base.DeepCopy()
	changed.Annotations = map[string]string{"operator-version": "0.0.0-e2e.2"}
	changed.Spec.Containers[0].Image = "redis:8"
	delete(changed.Labels, "app")
	want := []string{
		`.metadata.annotations.operator-version: (none) -> "0.0.0-e2e.2"`,
		`.metadata.labels.app: "redis" -> (none)`,
		`.spec.containers[0].image: "redis:7.0.15" -> "redis:8"`,
	}
	if d := templateDiff(base, *changed); !slices.Equal(d, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
}
