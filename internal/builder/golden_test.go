package builder

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// renderYAML is the golden form of a build: every object, in apply order, as YAML documents.
func renderYAML(t *testing.T, o *Objects) []byte {
	t.Helper()
	var b bytes.Buffer
	for i, obj := range o.All() {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(toYAML(t, obj))
	}
	return b.Bytes()
}

// toYAML marshals an object without its status: builders never set one, and the zero status
// structs would only add noise.
func toYAML(t *testing.T, obj Object) []byte {
	t.Helper()
	j, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal %s: %v", obj.GetName(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	y, err := yaml.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %s: %v", obj.GetName(), err)
	}
	return y
}

func TestGolden(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			objs, err := c.build()
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			got := renderYAML(t, objs)
			path := filepath.Join("testdata", c.name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/builder/... -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the build; review the change and run with -update.\n%s", path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// TestDeterministic builds every case twice: equal input must give byte-equal output, or a
// controller comparing desired and live objects would write forever.
func TestDeterministic(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				b, err := c.build()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(renderYAML(t, a), renderYAML(t, b)) {
					t.Fatal("two builds of the same input differ")
				}
			}
		})
	}
}

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	var out bytes.Buffer
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl []byte
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if !bytes.Equal(wl, gl) {
			out.WriteString("line " + itoa(int64(i+1)) + ":\n  want: " + string(wl) + "\n  got:  " + string(gl) + "\n")
			shown++
		}
	}
	return out.String()
}
