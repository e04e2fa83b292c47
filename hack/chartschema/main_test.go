package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedSchemasAreCurrent: the charts' schemas are what the sources generate (make
// chart-schemas), so that an edit of a schema by hand cannot go unnoticed.
func TestCommittedSchemasAreCurrent(t *testing.T) {
	out, err := generate(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, chart := range []string{"redis", "redis-cluster", "redis-replication", "redis-sentinel"} {
		want, ok := out[chart]
		if !ok {
			t.Errorf("no schema generated for %s", chart)
			continue
		}
		got, err := os.ReadFile(filepath.Join("..", "..", "charts", chart, "values.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("charts/%s/values.schema.json is not what hack/chartschema generates: run make chart-schemas", chart)
		}
	}
}

func writeSources(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGenerate(t *testing.T) {
	dir := writeSources(t, map[string]string{
		sharedFile: `{"size": {"type": "integer", "minimum": 1}, "spec": {"type": "object", "properties": {"size": "$shared"}}}`,
		"c.json":   `{"$schema": "s", "title": "c & <d>", "properties": {"z": {"type": "string"}, "spec": "$shared", "a": {"enum": [1, 2.5]}}}`,
	})
	out, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "$schema": "s",
  "$comment": "Written by make chart-schemas from hack/chartschema/c.json and shared.json: edit those.",
  "title": "c & <d>",
  "properties": {
    "z": {
      "type": "string"
    },
    "spec": {
      "type": "object",
      "properties": {
        "size": {
          "type": "integer",
          "minimum": 1
        }
      }
    },
    "a": {
      "enum": [
        1,
        2.5
      ]
    }
  }
}
`
	if got := string(out["c"]); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestGenerateRefuses(t *testing.T) {
	for _, c := range []struct{ name, shared, chart, err string }{
		{"unknown name", `{}`, `{"properties": {"x": "$shared"}}`, `x: no shared definition`},
		{"unused definition", `{"x": {}, "y": {}}`, `{"properties": {"x": "$shared"}}`, `"y" is used by no chart`},
		{"cycle", `{"x": {"properties": {"x": "$shared"}}}`, `{"properties": {"x": "$shared"}}`, `contains itself (x > x)`},
		{"marker outside properties", `{}`, `{"items": "$shared"}`, `stands only as a property's schema`},
		{"duplicate key", `{}`, `{"a": 1, "a": 2}`, `duplicate key "a"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := generate(writeSources(t, map[string]string{sharedFile: c.shared, "c.json": c.chart}))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}
