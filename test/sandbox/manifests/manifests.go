// Package manifests loads Kubernetes YAML (files, directories, kustomizations) and applies it
// with server-side apply, waiting for CRDs to be established before objects that need them.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager owns the fields the sandbox applies.
const FieldManager = "rediskube-sandbox"

// Parse splits multi-document YAML (or JSON) into objects, skipping empty documents.
func Parse(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			if err := u.EachListItem(func(o runtime.Object) error {
				item := o.(*unstructured.Unstructured)
				out = append(out, item)
				return nil
			}); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, u)
	}
}

// Load reads the YAML files at path: a file, or every *.yaml/*.yml/*.json file of a
// directory (not recursing; a kustomization.yaml in the directory is ignored: use Kustomize).
func Load(path string) ([]*unstructured.Unstructured, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if fi.IsDir() {
		files = nil
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || n == "kustomization.yaml" || n == "kustomization.yml" {
				continue
			}
			if ext := filepath.Ext(n); ext == ".yaml" || ext == ".yml" || ext == ".json" {
				files = append(files, filepath.Join(path, n))
			}
		}
		sort.Strings(files)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Kustomize renders a kustomization directory with `kubectl kustomize`.
func Kustomize(kubectl, dir string) ([]*unstructured.Unstructured, error) {
	cmd := exec.Command(kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return Parse(out)
}

// HasKustomization reports whether dir is a kustomization.
func HasKustomization(dir string) bool {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// Applier applies objects with server-side apply.
type Applier struct {
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier returns an Applier for cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Apply applies objs in order: namespaces and CRDs first (waiting until the CRDs are
// served), then everything else. Objects without a namespace in a namespaced kind go to
// defaultNamespace.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string) error {
	first, rest := split(objs)
	for _, o := range first {
		if err := a.apply(ctx, o, defaultNamespace); err != nil {
			return err
		}
	}
	if err := a.waitCRDs(ctx, first); err != nil {
		return err
	}
	for _, o := range rest {
		if err := a.apply(ctx, o, defaultNamespace); err != nil {
			return err
		}
	}
	return nil
}

func split(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	return first, rest
}

// Mapping returns the REST mapping of gvk, refreshing discovery once when unknown.
func (a *Applier) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// Resource returns the dynamic client of obj's kind and namespace.
func (a *Applier) Resource(obj *unstructured.Unstructured, defaultNamespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.Mapping(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
			obj.SetNamespace(ns)
		}
		return a.dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return a.dynamic.Resource(m.Resource), nil
}

func (a *Applier) apply(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string) error {
	var lastErr error
	// Discovery lags behind new CRDs, and a just-started API server may answer 5xx: retry
	// those for a few seconds, fail at once on anything else.
	for attempt := 0; attempt < 50; attempt++ {
		res, err := a.Resource(obj, defaultNamespace)
		if err == nil {
			b, merr := obj.MarshalJSON()
			if merr != nil {
				return merr
			}
			force := true
			_, err = res.Patch(ctx, obj.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
			if err == nil {
				return nil
			}
			if !transient(err) {
				return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		} else if !meta.IsNoMatchError(err) && !transient(err) {
			return err
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), lastErr)
}

func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || meta.IsNoMatchError(err)
}

// EnsureNamespaces creates the namespaces objs live in that objs do not create themselves.
func (a *Applier) EnsureNamespaces(ctx context.Context, objs []*unstructured.Unstructured) error {
	created := map[string]bool{"default": true}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			created[o.GetName()] = true
		}
	}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || created[ns] {
			continue
		}
		created[ns] = true
		n := &unstructured.Unstructured{}
		n.SetAPIVersion("v1")
		n.SetKind("Namespace")
		n.SetName(ns)
		if err := a.apply(ctx, n, ""); err != nil {
			return err
		}
	}
	return nil
}

func (a *Applier) waitCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := a.dynamic.Resource(crd).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after 30s (%w)", o.GetName(), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if len(objs) > 0 {
		a.mapper.Reset()
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
