// Command chartschema writes the values.schema.json of the redis, redis-cluster,
// redis-replication and redis-sentinel charts from one source of the properties they share.
//
// The source directory holds shared.json, an object of property name to schema, and one
// <chart>.json per chart: its schema, in which a property written as the string "$shared" takes
// the definition of the same name from shared.json (shared definitions may use "$shared" too).
// Every shared definition must be used, and key order is kept, so that the generated files read
// like hand-written ones. `make chart-schemas` runs it; `make verify` checks the output is current.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sharedMarker is the value of a property that takes its schema from shared.json.
const sharedMarker = "$shared"

const sharedFile = "shared.json"

func main() {
	src := flag.String("src", "hack/chartschema", "the directory of shared.json and the <chart>.json sources")
	charts := flag.String("charts", "charts", "the directory of the charts, each schema written to <charts>/<chart>/values.schema.json")
	flag.Parse()
	if err := run(*src, *charts); err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}

func run(src, charts string) error {
	out, err := generate(src)
	if err != nil {
		return err
	}
	for _, chart := range slices.Sorted(maps.Keys(out)) {
		if err := os.WriteFile(filepath.Join(charts, chart, "values.schema.json"), out[chart], 0o600); err != nil {
			return fmt.Errorf("writing the schema of %s: %w", chart, err)
		}
	}
	return nil
}

// generate returns each chart's schema file, by chart name, from the sources in dir.
func generate(dir string) (map[string][]byte, error) {
	shared, err := readObject(filepath.Join(dir, sharedFile))
	if err != nil {
		return nil, err
	}
	sources, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("listing the sources: %w", err)
	}
	r := &resolver{shared: shared, used: map[string]bool{}}
	out := map[string][]byte{}
	for _, path := range sources {
		if filepath.Base(path) == sharedFile {
			continue
		}
		chart := strings.TrimSuffix(filepath.Base(path), ".json")
		schema, err := readObject(path)
		if err != nil {
			return nil, err
		}
		resolved, err := r.resolve(schema, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", chart, err)
		}
		doc, err := render(withComment(resolved.(*object), chart))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", chart, err)
		}
		out[chart] = doc
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no chart sources beside %s in %s", sharedFile, dir)
	}
	// An unused definition is a property no chart has any more: it goes, or a chart lost it.
	for _, name := range shared.keys {
		if !r.used[name] {
			return nil, fmt.Errorf("%s: %q is used by no chart", sharedFile, name)
		}
	}
	return out, nil
}

// withComment puts a $comment after $schema, telling readers of the chart where to edit.
func withComment(schema *object, chart string) *object {
	comment := fmt.Sprintf("Written by make chart-schemas from hack/chartschema/%s.json and %s: edit those.", chart, sharedFile)
	out := &object{vals: map[string]any{}}
	for _, k := range schema.keys {
		out.set(k, schema.vals[k])
		if k == "$schema" {
			out.set("$comment", comment)
		}
	}
	if _, ok := out.vals["$comment"]; !ok {
		out.keys = slices.Insert(out.keys, 0, "$comment")
		out.vals["$comment"] = comment
	}
	return out
}

type resolver struct {
	shared *object
	used   map[string]bool
}

// resolve returns v with every "$shared" property replaced by its definition; stack holds the
// definitions being resolved, to refuse one that contains itself.
func (r *resolver) resolve(v any, stack []string) (any, error) {
	switch v := v.(type) {
	case *object:
		out := &object{vals: map[string]any{}}
		for _, k := range v.keys {
			val, err := r.resolveMember(k, v.vals[k], stack)
			if err != nil {
				return nil, err
			}
			out.set(k, val)
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			val, err := r.resolve(e, stack)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	case string:
		if v == sharedMarker {
			return nil, errors.New(`"$shared" stands only as a property's schema, under "properties"`)
		}
	}
	return v, nil
}

// resolveMember resolves the member k of an object; under "properties" a "$shared" value takes
// the definition named k.
func (r *resolver) resolveMember(k string, v any, stack []string) (any, error) {
	props, ok := v.(*object)
	if k != "properties" || !ok {
		return r.resolve(v, stack)
	}
	out := &object{vals: map[string]any{}}
	for _, name := range props.keys {
		val := props.vals[name]
		if val != sharedMarker {
			resolved, err := r.resolve(val, stack)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out.set(name, resolved)
			continue
		}
		def, ok := r.shared.vals[name]
		if !ok {
			return nil, fmt.Errorf("%s: no shared definition of that name in %s", name, sharedFile)
		}
		if slices.Contains(stack, name) {
			return nil, fmt.Errorf("%s: the shared definition contains itself (%s)", name, strings.Join(append(stack, name), " > "))
		}
		r.used[name] = true
		resolved, err := r.resolve(def, append(slices.Clone(stack), name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out.set(name, resolved)
	}
	return out, nil
}

// object is a JSON object that keeps its keys' order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func readObject(path string) (*object, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the sources are the repository's own files, named by the caller
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decode(dec)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parsing %s: data after the top-level value", path)
	}
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%s: the top-level value is not an object", path)
	}
	return o, nil
}

// decode reads one JSON value, objects as *object so that their key order survives.
func decode(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string) // the decoder returns only strings as keys
			if _, dup := o.vals[k]; dup {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
		}
		_, err := dec.Token() // the closing brace
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// render writes v as JSON indented by two spaces, with a final newline, characters such as
// < and & left as they are.
func render(v any) ([]byte, error) {
	var compact bytes.Buffer
	if err := encode(&compact, v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indenting: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func encode(w *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case *object:
		w.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := encode(w, k); err != nil {
				return err
			}
			w.WriteByte(':')
			if err := encode(w, v.vals[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := encode(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case json.Number:
		w.WriteString(v.String())
	default:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encoding %v: %w", v, err)
		}
		w.Truncate(w.Len() - 1) // Encode ends the value with a newline
	}
	return nil
}
