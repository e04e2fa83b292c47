package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// The media types of a Helm chart stored as an OCI artifact, as `helm push` writes it and
// `helm pull oci://...` reads it.
const (
	chartConfigType  types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	chartContentType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// chartMeta is the part of Chart.yaml a chart artifact's config carries.
type chartMeta struct {
	APIVersion  string `json:"apiVersion"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
}

// PushChart pushes a packaged chart (a .tgz of `helm package`, as a release's charts/ holds)
// to <addr>/<prefix>/<name>:<version>, where `helm push chart.tgz oci://<addr>/<prefix>` would
// put it, and returns the reference pinned to its digest.
func PushChart(ctx context.Context, archive, addr, prefix string) (string, error) {
	tgz, err := os.ReadFile(archive)
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	meta, err := chartMetadata(tgz)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", archive, err)
	}
	config, err := json.Marshal(meta)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", archive, err)
	}
	art, err := partial.CompressedToImage(&chartArtifact{config: config, content: static.NewLayer(tgz, chartContentType)})
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", archive, err)
	}
	repo := addr + "/" + strings.Trim(prefix, "/") + "/" + meta.Name
	// Helm turns the '+' of a SemVer build into '_' in tags, which may not hold a '+'.
	tag, err := name.NewTag(repo + ":" + strings.ReplaceAll(meta.Version, "+", "_"))
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", archive, err)
	}
	if err := remote.Write(tag, art, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", tag, err)
	}
	digest, err := art.Digest()
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", archive, err)
	}
	return tag.String() + "@" + digest.String(), nil
}

// PushCharts pushes every .tgz of dir (a release's charts/) with PushChart.
func PushCharts(ctx context.Context, dir, addr, prefix string) ([]string, error) {
	archives, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return nil, fmt.Errorf("charts in %s: %w", dir, err)
	}
	if len(archives) == 0 {
		return nil, fmt.Errorf("no packaged chart (*.tgz) in %s", dir)
	}
	var pushed []string
	for _, a := range archives {
		ref, err := PushChart(ctx, a, addr, prefix)
		if err != nil {
			return pushed, err
		}
		pushed = append(pushed, ref)
	}
	return pushed, nil
}

// chartMetadata reads <chart>/Chart.yaml from a packaged chart.
func chartMetadata(tgz []byte) (chartMeta, error) {
	var meta chartMeta
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return meta, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return meta, errors.New("no Chart.yaml at the top of the archive")
		}
		if err != nil {
			return meta, err
		}
		if parts := strings.Split(path.Clean(h.Name), "/"); len(parts) != 2 || parts[1] != "Chart.yaml" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return meta, err
		}
		if err := yaml.Unmarshal(b, &meta); err != nil {
			return meta, fmt.Errorf("parse Chart.yaml: %w", err)
		}
		if meta.Name == "" || meta.Version == "" {
			return meta, errors.New("the chart's Chart.yaml has no name or version")
		}
		return meta, nil
	}
}

// chartArtifact is a chart as an OCI artifact: Helm's config and the archive as its one
// layer. go-containerregistry's mutate writes image configs only, hence this small image.
type chartArtifact struct {
	config  []byte
	content v1.Layer
}

func (c *chartArtifact) RawConfigFile() ([]byte, error) { return c.config, nil }

func (c *chartArtifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func (c *chartArtifact) RawManifest() ([]byte, error) {
	digest, size, err := v1.SHA256(bytes.NewReader(c.config))
	if err != nil {
		return nil, err
	}
	layer, err := partial.Descriptor(c.content)
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: chartConfigType, Digest: digest, Size: size},
		Layers:        []v1.Descriptor{*layer},
	}
	return json.Marshal(m)
}

func (c *chartArtifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := c.content.Digest(); err == nil && d == h {
		return c.content, nil
	}
	if d, _, err := v1.SHA256(bytes.NewReader(c.config)); err == nil && d == h {
		return static.NewLayer(c.config, chartConfigType), nil
	}
	return nil, fmt.Errorf("chart artifact has no blob %s", h)
}
