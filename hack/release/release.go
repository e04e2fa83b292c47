package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// DefaultRepository is the operator image's repository: the charts' default and the name
	// install.yaml pins by digest.
	DefaultRepository = "ghcr.io/rediskube/redis-operator"
	// DefaultSource is the project's source repository.
	DefaultSource = "https://github.com/rediskube/redis-operator"
	// versionPkg is the package whose variables -ldflags -X sets (internal/version).
	versionPkg = "github.com/rediskube/redis-operator/internal/version"
)

// Options say what to build and where.
type Options struct {
	Version, Commit string
	// Time is stamped on every file of the image and the archives, so that two builds of one
	// commit are byte for byte the same.
	Time               time.Time
	Root, Out          string
	Changelog          string // "": CHANGELOG.md at Root
	Repository, Source string
	Helm, Kustomize    string
	// CycloneDXGomod is the cyclonedx-gomod binary that writes the operator's SBOMs.
	CycloneDXGomod string
	// The platforms to build the image and the plugin for (-platforms, ParsePlatforms).
	operatorPlatforms []Platform // nil: ImagePlatforms
	pluginPlatforms   []Platform // nil: PluginPlatforms
	caCertificates    string     // "": the build machine's bundle
}

// Platform is one GOOS/GOARCH pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

var (
	// ImagePlatforms are the platforms of the operator image.
	ImagePlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	// PluginPlatforms are the platforms the kubectl plugin is archived for.
	PluginPlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
)

// The machine's CA bundle (Debian's ca-certificates), copied into the image so that the
// operator can verify TLS endpoints it may be pointed at.
const hostCACertificates = "/etc/ssl/certs/ca-certificates.crt"

var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// Build writes the whole release into o.Out.
func Build(ctx context.Context, o Options) error {
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("version %q: want x.y.z (semantic versioning, no leading v)", o.Version)
	}
	if !regexp.MustCompile(`^[0-9a-f]{7,64}$`).MatchString(o.Commit) {
		return fmt.Errorf("commit %q: want a git commit hash", o.Commit)
	}
	if o.Changelog == "" {
		o.Changelog = filepath.Join(o.Root, "CHANGELOG.md")
	}
	changelog, err := os.ReadFile(o.Changelog)
	if err != nil {
		return fmt.Errorf("read the changelog: %w", err)
	}
	// The notes first: a release without its changelog section fails before anything is built.
	notes, err := ReleaseNotes(string(changelog), o.Version)
	if err != nil {
		return err
	}
	if err := checkChartImage(o); err != nil {
		return err
	}
	if o.CycloneDXGomod == "" {
		return errors.New("no cyclonedx-gomod binary: pass -cyclonedx-gomod (make release installs it in bin/)")
	}
	if _, err := exec.LookPath(o.CycloneDXGomod); err != nil {
		return fmt.Errorf("cyclonedx-gomod: %w", err)
	}
	if err := emptyDir(o.Out); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "release-")
	if err != nil {
		return fmt.Errorf("make a work directory: %w", err)
	}
	defer os.RemoveAll(work) //nolint:errcheck // a temporary directory left behind harms nothing

	if err := os.WriteFile(filepath.Join(o.Out, "RELEASE_NOTES.md"), []byte(notes), 0o644); err != nil {
		return fmt.Errorf("write the release notes: %w", err)
	}

	binaries, err := operatorBinaries(ctx, o, work)
	if err != nil {
		return err
	}
	caFile := o.caCertificates
	if caFile == "" {
		caFile = hostCACertificates
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read the CA certificates (Debian's ca-certificates package): %w", err)
	}
	index, err := Image(ImageSpec{
		Binaries: binaries, CACertificates: ca, Time: o.Time,
		Labels: map[string]string{
			"org.opencontainers.image.version":  o.Version,
			"org.opencontainers.image.revision": o.Commit,
			"org.opencontainers.image.source":   o.Source,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.title":    "redis-operator",
			"org.opencontainers.image.created":  o.Time.Format(time.RFC3339),
		},
	})
	if err != nil {
		return err
	}
	digest, err := WriteLayout(filepath.Join(o.Out, "image"), index, o.Version)
	if err != nil {
		return err
	}
	pinned := o.Repository + "@" + digest

	if err := packageCharts(ctx, o); err != nil {
		return err
	}
	if err := installManifest(ctx, o, work, pinned); err != nil {
		return err
	}

	archives := map[Platform]string{}
	license, err := os.ReadFile(filepath.Join(o.Root, "LICENSE"))
	if err != nil {
		return fmt.Errorf("read the license: %w", err)
	}
	for _, p := range orDefault(o.pluginPlatforms, PluginPlatforms) {
		bin := filepath.Join(work, "kubectl-redis-"+p.OS+"-"+p.Arch)
		if err := goBuild(ctx, o, p, "./cmd/kubectl-redis", bin); err != nil {
			return err
		}
		name := fmt.Sprintf("kubectl-redis_%s_%s.tar.gz", p.OS, p.Arch)
		if err := pluginArchive(filepath.Join(o.Out, name), bin, license, o.Time); err != nil {
			return err
		}
		archives[p] = name
	}
	if err := writeKrewManifest(o, archives); err != nil {
		return err
	}
	return writeChecksums(o.Out)
}

// operatorBinaries builds the operator for each image platform into work, and writes each
// binary's SBOM into the release.
func operatorBinaries(ctx context.Context, o Options, work string) (map[Platform]string, error) {
	binaries := map[Platform]string{}
	for _, p := range orDefault(o.operatorPlatforms, ImagePlatforms) {
		// Named as in the image: the SBOM records the binary's name.
		dir := filepath.Join(work, p.OS+"-"+p.Arch)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("make %s: %w", dir, err)
		}
		bin := filepath.Join(dir, "redis-operator")
		if err := goBuild(ctx, o, p, "./cmd/redis-operator", bin); err != nil {
			return nil, err
		}
		if err := writeSBOM(ctx, o, p, bin, filepath.Join(o.Out, SBOMName(p))); err != nil {
			return nil, err
		}
		binaries[p] = bin
	}
	return binaries, nil
}

// ParsePlatforms reads -platforms: "all" (or empty) is every platform, nil for both lists;
// otherwise comma-separated os/arch pairs, each an image or a plugin platform (or both), split
// into the image's and the plugin's, in the order of ImagePlatforms and PluginPlatforms. A
// release always has its image, so at least one image platform must be named.
func ParsePlatforms(s string) (image, plugin []Platform, err error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil, nil
	}
	named := map[Platform]bool{}
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		osName, arch, ok := strings.Cut(field, "/")
		p := Platform{osName, arch}
		switch {
		case !ok || osName == "" || arch == "" || strings.Contains(arch, "/"):
			return nil, nil, fmt.Errorf("-platforms: %q is not os/arch (such as linux/amd64)", field)
		case !slices.Contains(ImagePlatforms, p) && !slices.Contains(PluginPlatforms, p):
			return nil, nil, fmt.Errorf("-platforms: %s is none of the release's platforms (%s)", p, platformList(PluginPlatforms))
		case named[p]:
			return nil, nil, fmt.Errorf("-platforms: %s is named twice", p)
		}
		named[p] = true
	}
	for _, p := range ImagePlatforms {
		if named[p] {
			image = append(image, p)
		}
	}
	for _, p := range PluginPlatforms {
		if named[p] {
			plugin = append(plugin, p)
		}
	}
	if len(image) == 0 {
		return nil, nil, fmt.Errorf("-platforms %s names no platform of the operator image (%s): a release needs its image", s, platformList(ImagePlatforms))
	}
	return image, plugin, nil
}

func platformList(ps []Platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

func orDefault(a, b []Platform) []Platform {
	if a != nil {
		return a
	}
	return b
}

// emptyDir makes dir, or accepts it empty: a release never mixes with an older one's files.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: remove it first", dir)
	}
	return nil
}

// goBuild builds a static binary of pkg for p with the version and commit linked in;
// -trimpath keeps the build machine's paths out of it.
func goBuild(ctx context.Context, o Options, p Platform, pkg, out string) error {
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s", versionPkg, o.Version, versionPkg, o.Commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w: %s", pkg, p, err, msg)
	}
	return nil
}

// SBOMName is the file name of the SBOM of the operator binary for p, in the release's
// directory: named by platform as the plugin's archives are.
func SBOMName(p Platform) string {
	return fmt.Sprintf("redis-operator_%s_%s.cdx.json", p.OS, p.Arch)
}

// writeSBOM writes the CycloneDX SBOM (JSON) of one operator binary, read from the binary
// itself by `cyclonedx-gomod bin`: the modules linked into it at the versions it was built
// with, the Go standard library among them, and the binary's hashes. The `app` mode would read
// the source tree instead, but it takes the version from git (a tag on HEAD, failing in a git
// worktree) and cannot be told the release's. The main component gets the release's version
// with Go's leading v, as in its purl (pkg:golang/...@vX.Y.Z). No serial number and no time
// stamp: two builds of one commit give the same SBOM, as they give the same image.
func writeSBOM(ctx context.Context, o Options, p Platform, bin, out string) error {
	cmd := exec.CommandContext(ctx, o.CycloneDXGomod, "bin", "-json", "-std", "-noserial", "-notimestamp",
		"-version", "v"+o.Version, "-output", out, bin)
	// The purls' goos and goarch qualifiers come from `go env`, not from the binary.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cyclonedx-gomod bin %s: %w: %s", bin, err, msg)
	}
	return nil
}

// ReleaseNotes is the body of CHANGELOG.md's section "## [version]" (a date or anything else
// may follow the brackets), up to the next section of that level.
func ReleaseNotes(changelog, version string) (string, error) {
	if strings.EqualFold(version, "unreleased") {
		return "", errors.New("the Unreleased section is not a release: name a version")
	}
	var body []string
	in := false
	for line := range strings.SplitSeq(changelog, "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = strings.HasPrefix(line, "## ["+version+"]")
			continue
		}
		if in {
			body = append(body, line)
		}
	}
	notes := strings.TrimSpace(strings.Join(body, "\n"))
	if !in && notes == "" {
		return "", fmt.Errorf("CHANGELOG.md has no section \"## [%s]\": move the items of \"## [Unreleased]\" under a new heading \"## [%s] - YYYY-MM-DD\" and commit it first", version, version)
	}
	if notes == "" {
		return "", fmt.Errorf("CHANGELOG.md's section \"## [%s]\" is empty", version)
	}
	return "# redis-operator " + version + "\n\n" + notes + "\n", nil
}

// checkChartImage: the operator chart installs, by default, the image this release publishes.
func checkChartImage(o Options) error {
	raw, err := os.ReadFile(filepath.Join(o.Root, "charts", "redis-operator", "values.yaml"))
	if err != nil {
		return fmt.Errorf("read the operator chart's values: %w", err)
	}
	var values struct {
		RedisOperator struct {
			ImageName string `json:"imageName"`
			ImageTag  string `json:"imageTag"`
		} `json:"redisOperator"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return fmt.Errorf("parse the operator chart's values: %w", err)
	}
	if values.RedisOperator.ImageName != o.Repository {
		return fmt.Errorf("charts/redis-operator/values.yaml: redisOperator.imageName is %q, the release publishes %q", values.RedisOperator.ImageName, o.Repository)
	}
	if values.RedisOperator.ImageTag != "" {
		return fmt.Errorf("charts/redis-operator/values.yaml: redisOperator.imageTag is %q: leave it empty so that the tag is the chart's appVersion", values.RedisOperator.ImageTag)
	}
	return nil
}

// packageCharts packages every application chart with version and appVersion set to the
// release's (the operator chart's image tag defaults to its appVersion). The library chart
// ships inside the charts that use it (make chart-deps).
func packageCharts(ctx context.Context, o Options) error {
	dirs, err := filepath.Glob(filepath.Join(o.Root, "charts", "*", "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("list the charts: %w", err)
	}
	out, err := filepath.Abs(filepath.Join(o.Out, "charts"))
	if err != nil {
		return fmt.Errorf("charts directory: %w", err)
	}
	for _, chartYAML := range dirs {
		raw, err := os.ReadFile(chartYAML)
		if err != nil {
			return fmt.Errorf("read %s: %w", chartYAML, err)
		}
		var chart struct {
			Type         string `json:"type"`
			Dependencies []struct {
				Name string `json:"name"`
			} `json:"dependencies"`
		}
		if err := yaml.Unmarshal(raw, &chart); err != nil {
			return fmt.Errorf("parse %s: %w", chartYAML, err)
		}
		if chart.Type == "library" {
			continue
		}
		dir := filepath.Dir(chartYAML)
		for _, dep := range chart.Dependencies {
			if m, _ := filepath.Glob(filepath.Join(dir, "charts", dep.Name+"-*.tgz")); len(m) == 0 {
				return fmt.Errorf("%s: dependency %s is not in its charts/ directory: run make chart-deps", dir, dep.Name)
			}
		}
		cmd := exec.CommandContext(ctx, o.Helm, "package", dir, "--version", o.Version, "--app-version", o.Version, "--destination", out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("helm package %s: %w: %s", dir, err, msg)
		}
	}
	return nil
}

// installManifest renders config/default through an overlay that only pins the image, so that
// install.yaml is exactly what `kubectl apply -k config/default` installs, with this release's
// image.
func installManifest(ctx context.Context, o Options, work, image string) error {
	base, err := filepath.Abs(filepath.Join(o.Root, "config", "default"))
	if err != nil {
		return fmt.Errorf("config/default: %w", err)
	}
	overlay := filepath.Join(work, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return fmt.Errorf("make the overlay: %w", err)
	}
	// kustomize takes no absolute path of a base: name it from the overlay.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		return fmt.Errorf("config/default from the overlay: %w", err)
	}
	name, digest, _ := strings.Cut(image, "@")
	kustomization := fmt.Sprintf("resources:\n  - %s\nimages:\n  - name: redis-operator\n    newName: %s\n    digest: %s\n", filepath.ToSlash(rel), name, digest)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return fmt.Errorf("write the overlay: %w", err)
	}
	cmd := exec.CommandContext(ctx, o.Kustomize, "build", "--load-restrictor", "LoadRestrictionsNone", overlay)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kustomize build: %w: %s", err, stderr.String())
	}
	if !bytes.Contains(rendered, []byte("image: "+image+"\n")) {
		return fmt.Errorf("install.yaml does not pin the operator image %s", image)
	}
	header := fmt.Sprintf("# redis-operator %s (commit %s): the CRDs, RBAC, namespace, Deployment and\n"+
		"# webhook Service of config/default. The CRDs are too large for client-side apply:\n"+
		"#   kubectl apply --server-side -f install.yaml\n", o.Version, o.Commit)
	if err := os.WriteFile(filepath.Join(o.Out, "install.yaml"), append([]byte(header), rendered...), 0o644); err != nil {
		return fmt.Errorf("write install.yaml: %w", err)
	}
	return nil
}

// pluginArchive writes a tar.gz with the plugin and the license, every entry stamped with t.
func pluginArchive(path, bin string, license []byte, t time.Time) error {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("read %s: %w", bin, err)
	}
	data, err := targz([]file{{name: "kubectl-redis", mode: 0o755, data: exe}, {name: "LICENSE", mode: 0o644, data: license}}, t)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// file is one entry of an archive or image layer; a name ending in / is a directory.
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

func tarStream(files []file, t time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: t, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close the tar stream: %w", err)
	}
	return buf.Bytes(), nil
}

func targz(files []file, t time.Time) ([]byte, error) {
	raw, err := tarStream(files, t)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	// The gzip header's time and name stay empty: both would make the archive depend on the
	// build.
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// writeKrewManifest fills plugins/redis.yaml (the plugin's description, kept in the tree) with
// this release's version and one platform per archive, each with the archive's URL and sha256.
func writeKrewManifest(o Options, archives map[Platform]string) error {
	raw, err := os.ReadFile(filepath.Join(o.Root, "plugins", "redis.yaml"))
	if err != nil {
		return fmt.Errorf("read the krew manifest: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("parse plugins/redis.yaml: %w", err)
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return errors.New("plugins/redis.yaml has no spec")
	}
	platforms := slices.SortedFunc(maps.Keys(archives), func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	var entries []any
	for _, p := range platforms {
		sum, err := fileSHA256(filepath.Join(o.Out, archives[p]))
		if err != nil {
			return err
		}
		entries = append(entries, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"os": p.OS, "arch": p.Arch}},
			"uri":      fmt.Sprintf("%s/releases/download/v%s/%s", o.Source, o.Version, archives[p]),
			"sha256":   sum,
			"bin":      "kubectl-redis",
			"files":    []any{map[string]any{"from": "kubectl-redis", "to": "."}, map[string]any{"from": "LICENSE", "to": "."}},
		})
	}
	spec["version"], spec["homepage"], spec["platforms"] = "v"+o.Version, o.Source, entries
	out, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Errorf("krew manifest: %w", err)
	}
	dir := filepath.Join(o.Out, "krew")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "redis.yaml"), out, 0o644); err != nil {
		return fmt.Errorf("write the krew manifest: %w", err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	defer f.Close() //nolint:errcheck // read only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes SHA256SUMS (sha256sum -c format) over every other file of dir.
func writeChecksums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
		if rel == "SHA256SUMS" {
			return nil
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644); err != nil {
		return fmt.Errorf("write SHA256SUMS: %w", err)
	}
	return nil
}
