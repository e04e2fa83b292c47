package registry

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func start(t *testing.T, dir string) *Registry {
	t.Helper()
	r, err := Start(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An image pushed by tag comes back by tag and by digest, byte for byte.
func TestPushAndPull(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		r := start(t, dir)
		img, err := random.Image(1024, 2)
		if err != nil {
			t.Fatal(err)
		}
		tag := ref(t, r.Addr+"/sandbox/tiny:1.0")
		if err := remote.Write(tag, img, remote.WithContext(t.Context())); err != nil {
			t.Fatalf("push to %s (dir %q): %v", tag, dir, err)
		}
		want, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{tag.String(), r.Addr + "/sandbox/tiny@" + want.String()} {
			got, err := remote.Image(ref(t, s), remote.WithContext(t.Context()))
			if err != nil {
				t.Fatalf("pull %s: %v", s, err)
			}
			d, err := got.Digest()
			if err != nil || d != want {
				t.Errorf("pull %s: digest %s %v, want %s", s, d, err, want)
			}
			layers, err := got.Layers()
			if err != nil || len(layers) != 2 {
				t.Errorf("pull %s: %d layers %v, want 2", s, len(layers), err)
			}
		}
	}
}

// A multi-arch index, as a release pushes it, is stored whole.
func TestPushIndex(t *testing.T) {
	r := start(t, "")
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag := ref(t, r.Addr+"/redis-operator:0.0.1")
	if err := remote.WriteIndex(tag, idx, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := got.IndexManifest()
	if err != nil || len(m.Manifests) != 2 {
		t.Fatalf("index manifest: %+v %v", m, err)
	}
	if _, err := remote.Image(ref(t, r.Addr+"/redis-operator@"+m.Manifests[1].Digest.String()), remote.WithContext(t.Context())); err != nil {
		t.Errorf("pull the index's second image: %v", err)
	}
}

// A tag nobody pushed is the registry's MANIFEST_UNKNOWN, as a kubelet would report it.
func TestUnknownTag(t *testing.T) {
	r := start(t, "")
	_, err := remote.Image(ref(t, r.Addr+"/redis-operator:9.9.9"), remote.WithContext(t.Context()))
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusNotFound || len(te.Errors) == 0 || te.Errors[0].Code != transport.ManifestUnknownErrorCode {
		t.Fatalf("pull of an unknown tag: %v, want 404 MANIFEST_UNKNOWN", err)
	}
}

// The registry serves loopback only: it has no authentication.
func TestRefusesOtherAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:5000"} {
		if r, err := Start(t.Context(), Options{Addr: addr}); err == nil {
			_ = r.Stop(context.Background())
			t.Errorf("Start on %s: no error", addr)
		}
	}
}

// A release's image layout (one multi-arch index tagged with the version) is pushed under
// its tag and comes back with the digest the layout has.
func TestPushLayout(t *testing.T) {
	r := start(t, "")
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: "1.2.3"})); err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := PushLayout(t.Context(), dir, r.Addr, "redis-operator")
	if err != nil {
		t.Fatal(err)
	}
	if wantRef := r.Addr + "/redis-operator:1.2.3@" + want.String(); len(pushed) != 1 || pushed[0] != wantRef {
		t.Errorf("pushed %q, want [%s]", pushed, wantRef)
	}
	got, err := remote.Index(ref(t, r.Addr+"/redis-operator:1.2.3"), remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := got.Digest(); err != nil || d != want {
		t.Errorf("pulled digest %s %v, want %s", d, err, want)
	}
	if _, err := PushLayout(t.Context(), t.TempDir(), r.Addr, "redis-operator"); err == nil {
		t.Error("push of a folder that is no image layout: no error")
	}
}
