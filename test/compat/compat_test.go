// Package compat proves that the CRDs generated from our Go types serve every field of the
// reference v1beta2 schemas unchanged, so that users can switch operators with their manifests
// as they are. Fields we add are allowed; anything missing or different fails, naming the path.
package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	referenceDir = "testdata/reference"
	generatedDir = "../../config/crd/bases"
)

// upstreamDefault is a default that a Kubernetes core type declares in the k8s.io/api version we
// build with but did not declare in the one the reference was generated from. The API server
// applies the same defaults to these types natively, so they change nothing a user sees.
type upstreamDefault struct {
	pathSuffix string
	value      string
}

var upstreamDefaults = []upstreamDefault{
	{"KeyRef.name", `""`},                  // configMapKeyRef, secretKeyRef
	{"secretRef.name", `""`},               // volume sources' LocalObjectReference
	{"nodePublishSecretRef.name", `""`},    // csi
	{"imagePullSecrets[].name", `""`},      // LocalObjectReference
	{"configMap.name", `""`},               // configMap volume and projection
	{"secret.name", `""`},                  // secret projection
	{"azureDisk.fsType", `"ext4"`},         //
	{"azureDisk.readOnly", `false`},        //
	{"iscsi.iscsiInterface", `"default"`},  //
	{"rbd.keyring", `"/etc/ceph/keyring"`}, //
	{"rbd.pool", `"rbd"`},                  //
	{"rbd.user", `"admin"`},                //
	{"scaleIO.fsType", `"xfs"`},            //
	{"scaleIO.storageMode", `"ThinProvisioned"`},
}

// upstreamListMaps are lists that newer k8s.io/api versions declare as maps inside the status of
// an embedded PersistentVolumeClaim template; a template's status is never set by users.
var upstreamListMaps = []string{"volumeClaimTemplate.status.conditions", "nodeConfVolumeClaimTemplate.status.conditions"}

func TestGeneratedCRDsServeTheReferenceSchemas(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(referenceDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("want 4 reference CRDs in %s, found %d", referenceDir, len(files))
	}
	for _, refFile := range files {
		name := filepath.Base(refFile)
		t.Run(name, func(t *testing.T) {
			ref := loadCRD(t, refFile)
			ours := loadCRD(t, filepath.Join(generatedDir, name))
			for _, problem := range compareCRDs(ref, ours) {
				t.Error(problem)
			}
		})
	}
}

// TestComparisonNamesTheMissingPath guards the comparison itself: a schema without one field
// must be reported, by path.
func TestComparisonNamesTheMissingPath(t *testing.T) {
	ref := loadCRD(t, filepath.Join(referenceDir, "redis.redis.opstreelabs.in_redisclusters.yaml"))
	ours := ref.DeepCopy()
	spec := ours.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	leader := spec.Properties["redisLeader"]
	delete(leader.Properties, "replicas")
	spec.Properties["redisLeader"] = leader
	port := spec.Properties["port"]
	port.Default = &apiextensionsv1.JSON{Raw: []byte("6380")}
	spec.Properties["port"] = port
	ours.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	ours.Spec.Versions[0].AdditionalPrinterColumns = ours.Spec.Versions[0].AdditionalPrinterColumns[1:]

	problems := strings.Join(compareCRDs(ref, ours), "\n")
	for _, want := range []string{
		"spec.redisLeader.replicas: missing",
		"spec.port: default differs: reference 6379, ours 6380",
		"printer columns differ",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("comparison did not report %q; it reported:\n%s", want, problems)
		}
	}
}

func loadCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (run `make manifests`)", path, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return &crd
}

func compareCRDs(ref, ours *apiextensionsv1.CustomResourceDefinition) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if ref.Spec.Group != ours.Spec.Group || ref.Spec.Scope != ours.Spec.Scope {
		add("group/scope differ: reference %s/%s, ours %s/%s", ref.Spec.Group, ref.Spec.Scope, ours.Spec.Group, ours.Spec.Scope)
	}
	if !reflect.DeepEqual(ref.Spec.Names, ours.Spec.Names) {
		add("names differ: reference %+v, ours %+v", ref.Spec.Names, ours.Spec.Names)
	}
	for _, refVersion := range ref.Spec.Versions {
		i := slices.IndexFunc(ours.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == refVersion.Name
		})
		if i < 0 {
			add("version %s: missing", refVersion.Name)
			continue
		}
		ourVersion := ours.Spec.Versions[i]
		if refVersion.Served != ourVersion.Served || refVersion.Storage != ourVersion.Storage {
			add("version %s: served/storage differ", refVersion.Name)
		}
		if !reflect.DeepEqual(refVersion.Subresources, ourVersion.Subresources) {
			add("version %s: subresources differ: reference %s, ours %s", refVersion.Name, toJSON(refVersion.Subresources), toJSON(ourVersion.Subresources))
		}
		// Ours may add columns after the reference's, never move or change theirs: scripts
		// read kubectl's output by column position.
		refColumns, ourColumns := refVersion.AdditionalPrinterColumns, ourVersion.AdditionalPrinterColumns
		if len(ourColumns) < len(refColumns) || (len(refColumns) > 0 && !reflect.DeepEqual(refColumns, ourColumns[:len(refColumns)])) {
			add("version %s: printer columns differ: reference %s, ours %s", refVersion.Name,
				toJSON(refVersion.AdditionalPrinterColumns), toJSON(ourVersion.AdditionalPrinterColumns))
		}
		if refVersion.Schema == nil || ourVersion.Schema == nil {
			add("version %s: schema missing", refVersion.Name)
			continue
		}
		compareSchemas("", refVersion.Schema.OpenAPIV3Schema, ourVersion.Schema.OpenAPIV3Schema, add)
	}
	return problems
}

func compareSchemas(path string, ref, ours *apiextensionsv1.JSONSchemaProps, add func(string, ...any)) {
	if ours == nil {
		add("%s: missing", display(path))
		return
	}
	same := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			add("%s: %s differs: reference %s, ours %s", display(path), what, toJSON(a), toJSON(b))
		}
	}
	same("type", ref.Type, ours.Type)
	same("format", ref.Format, ours.Format)
	same("enum", enumValues(ref.Enum), enumValues(ours.Enum))
	same("int-or-string", ref.XIntOrString, ours.XIntOrString)
	same("preserve-unknown-fields", ref.XPreserveUnknownFields, ours.XPreserveUnknownFields)
	same("embedded-resource", ref.XEmbeddedResource, ours.XEmbeddedResource)
	same("nullable", ref.Nullable, ours.Nullable)
	same("map type", ref.XMapType, ours.XMapType)
	same("required", sorted(ref.Required), sorted(ours.Required))
	if !isUpstreamListMap(path) {
		same("list type", listType(ref), listType(ours))
		same("list map keys", ref.XListMapKeys, ours.XListMapKeys)
	}
	if !isUpstreamDefault(path, ref.Default, ours.Default) {
		same("default", rawJSON(ref.Default), rawJSON(ours.Default))
	}

	for _, name := range sortedKeys(ref.Properties) {
		refProp := ref.Properties[name]
		ourProp, ok := ours.Properties[name]
		if !ok {
			add("%s: missing", display(join(path, name)))
			continue
		}
		compareSchemas(join(path, name), &refProp, &ourProp, add)
	}
	if ref.Items != nil && ref.Items.Schema != nil {
		var ourItems *apiextensionsv1.JSONSchemaProps
		if ours.Items != nil {
			ourItems = ours.Items.Schema
		}
		compareSchemas(path+"[]", ref.Items.Schema, ourItems, add)
	}
	if ref.AdditionalProperties != nil && ref.AdditionalProperties.Schema != nil {
		var ourValues *apiextensionsv1.JSONSchemaProps
		if ours.AdditionalProperties != nil {
			ourValues = ours.AdditionalProperties.Schema
		}
		compareSchemas(path+"{}", ref.AdditionalProperties.Schema, ourValues, add)
	}
}

// listType treats an unset list type as atomic, which is what the API server does.
func listType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.Type != "array" {
		return ""
	}
	if s.XListType == nil {
		return "atomic"
	}
	return *s.XListType
}

func isUpstreamDefault(path string, ref, ours *apiextensionsv1.JSON) bool {
	if ref != nil || ours == nil {
		return false
	}
	for _, d := range upstreamDefaults {
		if strings.HasSuffix(path, d.pathSuffix) && string(ours.Raw) == d.value {
			return true
		}
	}
	return false
}

func isUpstreamListMap(path string) bool {
	for _, suffix := range upstreamListMaps {
		if strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}

func enumValues(values []apiextensionsv1.JSON) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		out = append(out, string(v.Raw))
	}
	sort.Strings(out)
	return out
}

func rawJSON(v *apiextensionsv1.JSON) string {
	if v == nil {
		return "(none)"
	}
	return string(v.Raw)
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func display(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func toJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
