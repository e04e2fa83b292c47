package compat

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestGeneratedCRDsPassAPIServerValidation runs the API server's own CRD validation, CEL cost
// estimates included, without starting an API server: a rule too costly to install fails here
// with the API server's message.
func TestGeneratedCRDsPassAPIServerValidation(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensions.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(generatedDir, "*.yaml"))
	// The four kinds the replaced operator served, RedisBackup and RedisBackupSchedule.
	if err != nil || len(files) != 6 {
		t.Fatalf("want 6 generated CRDs in %s (run `make manifests`): %v %v", generatedDir, files, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				crd.Status.StoredVersions = []string{v.Name} // set by the API server on create
			}
		}
		var internal apiextensions.CustomResourceDefinition
		if err := scheme.Convert(&crd, &internal, nil); err != nil {
			t.Fatal(err)
		}
		for _, problem := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
			t.Errorf("%s: %v", filepath.Base(file), problem)
		}
	}
}
