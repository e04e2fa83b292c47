package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// chartArchive writes a packaged chart as `helm package` lays it out: <name>/Chart.yaml and
// the rest under <name>/.
func chartArchive(t *testing.T, dir, chartName, version string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := map[string]string{
		chartName + "/Chart.yaml":  "apiVersion: v2\nname: " + chartName + "\nversion: " + version + "\nappVersion: " + version + "\ndescription: a test chart\n",
		chartName + "/values.yaml": "replicas: 1\n",
		chartName + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"data:\n  replicas: \"{{ .Values.replicas }}\"\n",
	}
	for _, n := range []string{chartName + "/Chart.yaml", chartName + "/values.yaml", chartName + "/templates/cm.yaml"} {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, chartName+"-"+version+".tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A packaged chart becomes the artifact `helm push` makes: Helm's config media type, the
// archive unchanged as its one layer, under <prefix>/<name>:<version>.
func TestPushChart(t *testing.T) {
	r := start(t, "")
	dir := t.TempDir()
	archive := chartArchive(t, dir, "tiny", "1.2.3")
	chartArchive(t, dir, "other", "0.1.0+build.1")
	pushed, err := PushCharts(t.Context(), dir, r.Addr, "charts")
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 2 {
		t.Fatalf("pushed %q, want two charts", pushed)
	}
	desc, err := remote.Get(ref(t, r.Addr+"/charts/tiny:1.2.3"), remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != chartConfigType || len(m.Layers) != 1 || m.Layers[0].MediaType != chartContentType {
		t.Fatalf("manifest %+v, want Helm's config and one chart layer", m)
	}
	cfg, err := img.RawConfigFile()
	if err != nil || !bytes.Contains(cfg, []byte(`"name":"tiny"`)) || !bytes.Contains(cfg, []byte(`"version":"1.2.3"`)) {
		t.Errorf("config %s %v, want the chart's name and version", cfg, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	want, _ := os.ReadFile(archive)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the chart layer differs from the archive (%d bytes, want %d): %v", len(got), len(want), err)
	}
	if _, err := remote.Get(ref(t, r.Addr+"/charts/other:0.1.0_build.1"), remote.WithContext(t.Context())); err != nil {
		t.Errorf("a version with build metadata is tagged with '_' as Helm tags it: %v", err)
	}
}
