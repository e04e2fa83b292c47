package compat

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The older API version v1beta1 comes in two published shapes: the first (v0.13, Redis and
// RedisCluster) and the last (v0.19, all four kinds). Manifests written for either must be
// accepted as they are, so every property path of both must be in our v1beta1 schema with the
// same type, no field ours requires may be optional there, and an enum of ours must admit
// every value of theirs.
const referenceV1beta1Dir = "testdata/reference-v1beta1"

// v1beta1Unservable are reference paths that the k8s.io/api version we build with no longer
// has: the status of a claim template, which users never set (the API server prunes it).
var v1beta1Unservable = []string{"spec.storage.volumeClaimTemplate.status.resizeStatus"}

func TestGeneratedCRDsServeBothV1beta1Shapes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(referenceV1beta1Dir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("want 6 reference v1beta1 CRDs in %s, found %d", referenceV1beta1Dir, len(files))
	}
	for _, refFile := range files {
		name := filepath.Base(refFile)
		t.Run(filepath.Base(filepath.Dir(refFile))+"/"+name, func(t *testing.T) {
			ref := v1beta1Schema(t, loadCRD(t, refFile))
			ours := loadCRD(t, filepath.Join(generatedDir, name))
			for _, problem := range compareAccepts("", ref, v1beta1Schema(t, ours)) {
				t.Error(problem)
			}
			for _, v := range ours.Spec.Versions {
				if v.Name == "v1beta1" && (!v.Served || v.Storage) {
					t.Errorf("v1beta1 must be served and not stored: served %v, storage %v", v.Served, v.Storage)
				}
				if v.Name == "v1beta2" && !v.Storage {
					t.Error("v1beta2 must stay the storage version")
				}
			}
		})
	}
}

// TestV1beta1ComparisonNamesTheMissingPath guards the comparison: the first shape's top-level
// nodeSelector of a RedisCluster, removed from ours, must be reported.
func TestV1beta1ComparisonNamesTheMissingPath(t *testing.T) {
	ref := v1beta1Schema(t, loadCRD(t, filepath.Join(referenceV1beta1Dir, "v0.13", "redis.redis.opstreelabs.in_redisclusters.yaml")))
	ours := v1beta1Schema(t, loadCRD(t, filepath.Join(generatedDir, "redis.redis.opstreelabs.in_redisclusters.yaml"))).DeepCopy()
	spec := ours.Properties["spec"]
	delete(spec.Properties, "nodeSelector")
	spec.Required = append(spec.Required, "redisLeader")
	ours.Properties["spec"] = spec
	problems := strings.Join(compareAccepts("", ref, ours), "\n")
	for _, want := range []string{"spec.nodeSelector: missing", "spec: ours requires redisLeader"} {
		if !strings.Contains(problems, want) {
			t.Errorf("comparison did not report %q; it reported:\n%s", want, problems)
		}
	}
}

func v1beta1Schema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1beta1" && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s: no v1beta1 schema", crd.Name)
	return nil
}

// compareAccepts reports what a manifest valid for ref could carry that ours would refuse or drop.
func compareAccepts(path string, ref, ours *apiextensionsv1.JSONSchemaProps) []string {
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, display(path)+": "+fmt.Sprintf(format, args...))
	}
	if ours == nil {
		if slices.Contains(v1beta1Unservable, path) {
			return nil
		}
		return []string{display(path) + ": missing"}
	}
	if ref.Type != ours.Type {
		add("type differs: reference %q, ours %q", ref.Type, ours.Type)
	}
	if ref.Format != ours.Format {
		add("format differs: reference %q, ours %q", ref.Format, ours.Format)
	}
	if ref.XIntOrString != ours.XIntOrString {
		add("int-or-string differs")
	}
	for _, req := range ours.Required {
		if !slices.Contains(ref.Required, req) {
			add("ours requires %s, the reference does not", req)
		}
	}
	if len(ours.Enum) > 0 {
		theirs, mine := enumValues(ref.Enum), enumValues(ours.Enum)
		for _, v := range theirs {
			if !slices.Contains(mine, v) {
				add("enum value %s not admitted", v)
			}
		}
		if len(theirs) == 0 {
			add("ours restricts to %v, the reference admits any value", mine)
		}
	}
	for _, name := range sortedKeys(ref.Properties) {
		refProp := ref.Properties[name]
		var ourProp *apiextensionsv1.JSONSchemaProps
		if p, ok := ours.Properties[name]; ok {
			ourProp = &p
		} else if ours.XPreserveUnknownFields != nil && *ours.XPreserveUnknownFields {
			continue
		}
		problems = append(problems, compareAccepts(join(path, name), &refProp, ourProp)...)
	}
	if ref.Items != nil && ref.Items.Schema != nil {
		var ourItems *apiextensionsv1.JSONSchemaProps
		if ours.Items != nil {
			ourItems = ours.Items.Schema
		}
		problems = append(problems, compareAccepts(path+"[]", ref.Items.Schema, ourItems)...)
	}
	if ref.AdditionalProperties != nil && ref.AdditionalProperties.Schema != nil {
		var ourValues *apiextensionsv1.JSONSchemaProps
		if ours.AdditionalProperties != nil {
			ourValues = ours.AdditionalProperties.Schema
		}
		problems = append(problems, compareAccepts(path+"{}", ref.AdditionalProperties.Schema, ourValues)...)
	}
	return problems
}
