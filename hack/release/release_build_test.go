//go:build release

package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/yaml"
)

const (
	testVersion = "0.0.0-test.1"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

// TestRelease builds a whole release (bin/helm, bin/kustomize and make chart-deps first) and
// checks what a user gets: the image index, each image's user and labels, the binaries'
// versions, each image's SBOM, the charts, install.yaml's pinned image, the krew manifest and
// SHA256SUMS.
func TestRelease(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cl := filepath.Join(tmp, "CHANGELOG.md")
	if err := os.WriteFile(cl, []byte("# Changelog\n\n## [Unreleased]\n\n## ["+testVersion+"] - 2026-12-03\n\n- A test release.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "dist")
	start := time.Now()
	err = Build(t.Context(), Options{
		Version: testVersion, Commit: testCommit, Time: time.Unix(1_780_000_000, 0).UTC(),
		Root: root, Out: out, Changelog: cl, Repository: DefaultRepository, Source: DefaultSource,
		Helm: filepath.Join(root, "bin", "helm"), Kustomize: filepath.Join(root, "bin", "kustomize"), CycloneDXGomod: cyclonedxGomod(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release built in %v", time.Since(start).Round(time.Second))
	wantLine := func(program string) string {
		return fmt.Sprintf("%s %s (commit %s)", program, testVersion, testCommit)
	}

	// The image: index.json names one multi-arch index, with both platforms.
	index, digest, manifest := releaseIndex(t, out)
	if manifest.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index media type %s", manifest.MediaType)
	}
	var platforms []string
	hostCA, err := os.ReadFile(hostCACertificates)
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.OS+"/"+desc.Platform.Architecture)
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", desc.Platform, cfg.Config.User)
		}
		if cfg.Architecture != desc.Platform.Architecture || cfg.OS != "linux" {
			t.Errorf("%s: config says %s/%s", desc.Platform, cfg.OS, cfg.Architecture)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.version":  testVersion,
			"org.opencontainers.image.revision": testCommit,
			"org.opencontainers.image.source":   DefaultSource,
			"org.opencontainers.image.licenses": "Apache-2.0",
		} {
			if cfg.Config.Labels[k] != v {
				t.Errorf("%s: label %s=%q, want %q", desc.Platform, k, cfg.Config.Labels[k], v)
			}
		}
		files := layerFiles(t, img)
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no user 65532:\n%s", desc.Platform, files["etc/passwd"])
		}
		if string(files["etc/ssl/certs/ca-certificates.crt"]) != string(hostCA) {
			t.Errorf("%s: the CA certificates are not the build machine's", desc.Platform)
		}
		checkSBOM(t, root, out, Platform{desc.Platform.OS, desc.Platform.Architecture}, files["redis-operator"])
		if desc.Platform.Architecture == runtime.GOARCH {
			if got := run(t, files["redis-operator"], "--version"); got != wantLine("redis-operator") {
				t.Errorf("redis-operator --version: %q, want %q", got, wantLine("redis-operator"))
			}
		}
	}
	slices.Sort(platforms)
	if fmt.Sprint(platforms) != "[linux/amd64 linux/arm64]" {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	// install.yaml pins the image by the index's digest.
	install, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image: " + DefaultRepository + "@" + digest.String() + "\n", "kind: CustomResourceDefinition\n", "kind: Namespace\n", "kind: Deployment\n", "kind: ClusterRole\n"} {
		if !strings.Contains(string(install), want) {
			t.Errorf("install.yaml lacks %q", want)
		}
	}

	// The operator chart: version and appVersion are the release's, and so is the image tag.
	chart := filepath.Join(out, "charts", "redis-operator-"+testVersion+".tgz")
	shown := helmOut(t, root, "show", "chart", chart)
	if !strings.Contains(shown, "\nversion: "+testVersion+"\n") || !strings.Contains(shown, "appVersion: "+testVersion+"\n") {
		t.Errorf("helm show chart:\n%s", shown)
	}
	if rendered := helmOut(t, root, "template", "r", chart); !strings.Contains(rendered, "image: "+DefaultRepository+":"+testVersion+"\n") {
		t.Errorf("the chart's operator image is not %s:%s", DefaultRepository, testVersion)
	}
	for _, c := range []string{"redis", "redis-cluster", "redis-replication", "redis-sentinel"} {
		if _, err := os.Stat(filepath.Join(out, "charts", c+"-"+testVersion+".tgz")); err != nil {
			t.Error(err)
		}
	}

	// The plugin's archives and the krew manifest's checksums.
	raw, err := os.ReadFile(filepath.Join(out, "krew", "redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var krew struct {
		Spec struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string
				SHA256   string `json:"sha256"`
			}
		}
	}
	if err := yaml.Unmarshal(raw, &krew); err != nil {
		t.Fatal(err)
	}
	if krew.Spec.Version != "v"+testVersion || len(krew.Spec.Platforms) != 4 {
		t.Errorf("krew manifest: version %s, %d platforms, want v%s and 4", krew.Spec.Version, len(krew.Spec.Platforms), testVersion)
	}
	for _, kp := range krew.Spec.Platforms {
		name := "kubectl-redis_" + kp.Selector.MatchLabels["os"] + "_" + kp.Selector.MatchLabels["arch"] + ".tar.gz"
		if !strings.HasSuffix(kp.URI, "/v"+testVersion+"/"+name) {
			t.Errorf("krew uri %s does not name %s", kp.URI, name)
		}
		sum, err := fileSHA256(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if kp.SHA256 != sum {
			t.Errorf("krew sha256 of %s is %s, the archive's is %s", name, kp.SHA256, sum)
		}
	}
	plugin := archiveFile(t, filepath.Join(out, "kubectl-redis_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz"), "kubectl-redis")
	if got := run(t, plugin, "version", "--client"); got != wantLine("kubectl-redis") {
		t.Errorf("kubectl redis version: %q, want %q", got, wantLine("kubectl-redis"))
	}

	notes, err := os.ReadFile(filepath.Join(out, "RELEASE_NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(notes), "- A test release.") {
		t.Errorf("RELEASE_NOTES.md:\n%s", notes)
	}

	// SHA256SUMS covers every other file, with the right sums.
	sums, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close() //nolint:errcheck // read only
	listed := map[string]bool{}
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		got, err := fileSHA256(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if got != sum {
			t.Errorf("SHA256SUMS: %s is %s, the file's is %s", name, sum, got)
		}
		listed[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		if rel != "SHA256SUMS" && !listed[filepath.ToSlash(rel)] {
			t.Errorf("SHA256SUMS lacks %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// layerFiles reads the regular files of the image's layers.
func layerFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		readTar(t, rc, files)
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func readTar(t *testing.T, r io.Reader, files map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
}

func archiveFile(t *testing.T, path, name string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	readTar(t, zr, files)
	if files[name] == nil {
		t.Fatalf("%s has no %s", path, name)
	}
	return files[name]
}

// run writes the executable to a file, runs it with args and returns its output, trimmed.
func run(t *testing.T, exe []byte, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "exe")
	if err := os.WriteFile(path, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func helmOut(t *testing.T, root string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "helm"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// releaseIndex opens the image layout a release wrote in out, whose index.json must name one
// index, tagged testVersion, and returns that multi-arch index, its digest and its manifest.
func releaseIndex(t *testing.T, out string) (index v1.ImageIndex, digest v1.Hash, manifest *v1.IndexManifest) {
	t.Helper()
	p, err := layout.FromPath(filepath.Join(out, "image"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("index.json: %+v, want one index named %s", topManifest.Manifests, testVersion)
	}
	digest = topManifest.Manifests[0].Digest
	index, err = top.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err = index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return index, digest, manifest
}

// TestReleaseOnePlatform: -platforms with this machine's platform gives an index of that one
// image and that one plugin archive, listed alone in the krew manifest (the release e2e test's
// build).
func TestReleaseOnePlatform(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	image, plugin, err := ParsePlatforms(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Skip(err) // a machine whose platform the release has no image for
	}
	tmp := t.TempDir()
	cl := filepath.Join(tmp, "CHANGELOG.md")
	if err := os.WriteFile(cl, []byte("# Changelog\n\n## ["+testVersion+"] - 2026-12-03\n\n- A test release.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "dist")
	err = Build(t.Context(), Options{
		Version: testVersion, Commit: testCommit, Time: time.Unix(1_780_000_000, 0).UTC(),
		Root: root, Out: out, Changelog: cl, Repository: DefaultRepository, Source: DefaultSource,
		Helm: filepath.Join(root, "bin", "helm"), Kustomize: filepath.Join(root, "bin", "kustomize"), CycloneDXGomod: cyclonedxGomod(t),
		operatorPlatforms: image, pluginPlatforms: plugin,
	})
	if err != nil {
		t.Fatal(err)
	}
	index, _, manifest := releaseIndex(t, out)
	if len(manifest.Manifests) != 1 || manifest.Manifests[0].Platform.OS != runtime.GOOS || manifest.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Errorf("index: %+v, want one image for %s/%s", manifest.Manifests, runtime.GOOS, runtime.GOARCH)
	}
	archives, err := filepath.Glob(filepath.Join(out, "kubectl-redis_*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "kubectl-redis_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz"); len(archives) != 1 || archives[0] != want {
		t.Errorf("plugin archives %q, want %s alone", archives, want)
	}
	raw, err := os.ReadFile(filepath.Join(out, "krew", "redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "uri: "); n != 1 {
		t.Errorf("the krew manifest lists %d platforms, want 1:\n%s", n, raw)
	}

	// One SBOM, of the one image's binary, listed in SHA256SUMS with its sum.
	host := Platform{runtime.GOOS, runtime.GOARCH}
	sboms, err := filepath.Glob(filepath.Join(out, "*.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, SBOMName(host)); len(sboms) != 1 || sboms[0] != want {
		t.Errorf("SBOMs %q, want %s alone", sboms, want)
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkSBOM(t, root, out, host, layerFiles(t, img)["redis-operator"])
	sum, err := fileSHA256(filepath.Join(out, SBOMName(host)))
	if err != nil {
		t.Fatal(err)
	}
	if listed := readSHA256SUMS(t, out)[SBOMName(host)]; listed != sum {
		t.Errorf("SHA256SUMS gives %s the sum %q, the file's is %s", SBOMName(host), listed, sum)
	}
}

// cyclonedxGomod is the cyclonedx-gomod binary, named by CYCLONEDX_GOMOD: make release-test
// installs it and sets it (the file name carries the pinned version).
func cyclonedxGomod(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CYCLONEDX_GOMOD")
	if path == "" {
		t.Fatal("CYCLONEDX_GOMOD is not set: run make release-test, or set it to the bin/cyclonedx-gomod-<version> that make release installs")
	}
	return path
}

// checkSBOM reads the release's SBOM for p: a CycloneDX document whose main component is the
// operator's module (go.mod's module path) at the release's version, built for p, with the
// SHA-256 of the binary the image holds, and whose components list controller-runtime at the
// version go.mod requires, for p too (cyclonedx-gomod takes the purls' platform from `go env`,
// not from the binary).
func checkSBOM(t *testing.T, root, out string, p Platform, binary []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, SBOMName(p)))
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct {
				Type    string `json:"type"`
				Name    string `json:"name"`
				Version string `json:"version"`
				PURL    string `json:"purl"`
			} `json:"component"`
			Properties []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"properties"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			PURL    string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatalf("%s: %v", SBOMName(p), err)
	}
	if bom.BOMFormat != "CycloneDX" {
		t.Errorf("%s: bomFormat %q, want CycloneDX", SBOMName(p), bom.BOMFormat)
	}
	module, crVersion := goMod(t, root, "sigs.k8s.io/controller-runtime")
	app := bom.Metadata.Component
	if app.Type != "application" || app.Name != module || app.Version != "v"+testVersion {
		t.Errorf("%s: main component %s %s %s, want the application %s v%s", SBOMName(p), app.Type, app.Name, app.Version, module, testVersion)
	}
	if pkg, qualifiers, _ := strings.Cut(app.PURL, "?"); pkg != "pkg:golang/"+module+"@v"+testVersion ||
		!strings.Contains(qualifiers, "goos="+p.OS) || !strings.Contains(qualifiers, "goarch="+p.Arch) {
		t.Errorf("%s: main component's purl %s, want %s@v%s for %s", SBOMName(p), app.PURL, module, testVersion, p)
	}
	binarySum := sha256.Sum256(binary)
	var hashed bool
	for _, prop := range bom.Metadata.Properties {
		if prop.Name == "cdx:gomod:binary:hash:SHA-256" {
			hashed = prop.Value == hex.EncodeToString(binarySum[:])
		}
	}
	if !hashed {
		t.Errorf("%s: no SHA-256 of the image's binary (%x) in %+v", SBOMName(p), binarySum, bom.Metadata.Properties)
	}
	var versions []string
	for _, c := range bom.Components {
		if c.Name == "sigs.k8s.io/controller-runtime" {
			versions = append(versions, c.Version)
			if want := "pkg:golang/sigs.k8s.io/controller-runtime@" + crVersion + "?goarch=" + p.Arch + "&goos=" + p.OS + "&"; !strings.HasPrefix(c.PURL, want) {
				t.Errorf("%s: controller-runtime's purl %s, want %s...", SBOMName(p), c.PURL, want)
			}
		}
	}
	if len(versions) != 1 || versions[0] != crVersion {
		t.Errorf("%s: sigs.k8s.io/controller-runtime at %q, want %s (go.mod) once", SBOMName(p), versions, crVersion)
	}
}

// goMod reads root's go.mod: the module path, and the version it requires of dep.
func goMod(t *testing.T, root, dep string) (module, version string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		switch {
		case len(fields) == 2 && fields[0] == "module":
			module = fields[1]
		case len(fields) >= 2 && fields[0] == dep:
			version = fields[1]
		case len(fields) > 0 && fields[0] == "replace" && slices.Contains(fields, dep):
			t.Fatalf("go.mod replaces %s: the test reads its required version", dep)
		}
	}
	if module == "" || version == "" {
		t.Fatalf("go.mod: module %q, %s %q", module, dep, version)
	}
	return module, version
}

// readSHA256SUMS reads out/SHA256SUMS: file name to sum.
func readSHA256SUMS(t *testing.T, out string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(raw), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		sums[name] = sum
	}
	return sums
}
