package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user and group the operator runs as, by number: a kubelet checks
// runAsNonRoot against the image's numeric user, never a name.
const nonRoot = 65532

// ImageSpec is what goes into the operator image: one binary per platform, on an empty base.
type ImageSpec struct {
	Binaries       map[Platform]string // platform -> path of the operator binary
	CACertificates []byte
	Labels         map[string]string
	Time           time.Time
}

// Image builds the multi-arch OCI index: one image per platform, each a single layer with the
// binary at /redis-operator, /etc/passwd and /etc/group naming the non-root user, and the CA
// certificates. Every time stamp is spec.Time, so the index's digest depends only on the inputs.
func Image(spec ImageSpec) (v1.ImageIndex, error) {
	platforms := slices.SortedFunc(maps.Keys(spec.Binaries), func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		img, err := platformImage(spec, p)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

func platformImage(spec ImageSpec, p Platform) (v1.Image, error) {
	bin, err := os.ReadFile(spec.Binaries[p])
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w", err)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot)
	layerTar, err := targz([]file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: spec.CACertificates},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonRoot, gid: nonRoot},
		{name: "redis-operator", mode: 0o755, data: bin},
	}, spec.Time)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg = cfg.DeepCopy()
	created := v1.Time{Time: spec.Time}
	cfg.OS, cfg.Architecture, cfg.Created = p.OS, p.Arch, created
	cfg.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Entrypoint: []string{"/redis-operator"},
		WorkingDir: "/",
		Labels:     spec.Labels,
	}
	cfg.History = []v1.History{{Created: created, CreatedBy: "hack/release", Comment: "the redis-operator binary, the non-root user and the CA certificates"}}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set the config: %w", err)
	}
	return img, nil
}

// WriteLayout writes the index as an OCI image layout at dir: index.json names the multi-arch
// index by its tag (org.opencontainers.image.ref.name), as skopeo and crane read it. It
// returns the index's digest, the one a registry serves after a push of the layout.
func WriteLayout(dir string, index v1.ImageIndex, tag string) (string, error) {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("write the image layout: %w", err)
	}
	if err := p.AppendIndex(index, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return "", fmt.Errorf("write the image index: %w", err)
	}
	digest, err := index.Digest()
	if err != nil {
		return "", fmt.Errorf("image index digest: %w", err)
	}
	return digest.String(), nil
}
