// Package images is the sandbox's stand-in for a container registry: it maps an image
// reference to what runs when a container uses it. Containers run on the host's file system
// (seen through a private overlay), so a Redis image runs the host's redis-server, a tools
// image the host's shell, and the operator image the binary `make build` produced.
package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kind names a family of images.
type Kind string

// The image families the sandbox knows.
const (
	Redis    Kind = "redis"
	Operator Kind = "operator"
	Exporter Kind = "exporter"
	Tools    Kind = "tools"
	Pause    Kind = "pause"
)

// Bind makes a host file appear at a path inside the container.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Image is what a container of that image runs, in OCI image-config terms.
type Image struct {
	Ref        string
	Kind       Kind
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Env        []string
	// Binds are host files the image "contains" that the host file system lacks.
	Binds []Bind
	// RedisDefaults applies what the official Redis image changes: its entrypoint accepts a
	// bare config file or flags, and its redis-server defaults to protected-mode no.
	RedisDefaults bool
	// ID stands in for the image digest in container statuses: a pullable reference pinned
	// to a digest, as real kubelets report it, which resolves to the same image.
	ID string
}

// NotFoundError is an image the sandbox cannot run: the container stays Waiting as after a
// failed pull.
type NotFoundError struct {
	Ref    string
	Reason string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("image %q: %s", e.Ref, e.Reason) }

// Table resolves image references.
type Table struct {
	// BinDir holds the operator binary (redis-operator) and optionally redis_exporter.
	BinDir string
}

// OperatorBinary is the file the operator image runs.
func (t Table) OperatorBinary() string { return filepath.Join(t.BinDir, "redis-operator") }

// ExporterBinary is the file the exporter image runs: a redis_exporter built into BinDir when
// there is one, else the host's Debian prometheus-redis-exporter (hack/install-packages.sh
// installs it), the same program under another name. Both read the flags and the environment
// (REDIS_ADDR, REDIS_PASSWORD, REDIS_EXPORTER_*) the exporter image's /redis_exporter reads.
func (t Table) ExporterBinary() string {
	built := filepath.Join(t.BinDir, "redis_exporter")
	if _, err := os.Stat(built); err == nil {
		return built
	}
	return debianExporter
}

// debianExporter is where Debian's prometheus-redis-exporter package puts the exporter.
var debianExporter = "/usr/bin/prometheus-redis-exporter"

// Repository returns the last path element of ref's repository, without registry, tag or
// digest: "quay.io/opstree/redis:v7.0.15" -> "redis".
func Repository(ref string) string {
	r := ref
	if i := strings.Index(r, "@"); i >= 0 {
		r = r[:i]
	}
	if i := strings.LastIndex(r, "/"); i >= 0 {
		r = r[i+1:]
	}
	if i := strings.Index(r, ":"); i >= 0 {
		r = r[:i]
	}
	return strings.ToLower(r)
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Resolve maps ref to an image or a *NotFoundError.
func (t Table) Resolve(ref string) (Image, error) {
	repo := Repository(ref)
	img := Image{Ref: ref, Env: []string{defaultPath}, ID: imageID(repo)}
	switch {
	case repo == "":
		return Image{}, &NotFoundError{Ref: ref, Reason: "empty image reference"}
	case strings.Contains(repo, "redis_exporter") || strings.Contains(repo, "redis-exporter"):
		img.Kind = Exporter
		if _, err := os.Stat(t.ExporterBinary()); err != nil {
			return Image{}, &NotFoundError{Ref: ref, Reason: "the Redis exporter is not installed (run hack/install-packages.sh, " +
				"which installs Debian's prometheus-redis-exporter, or put a redis_exporter binary in " + t.BinDir + ")"}
		}
		// The exporter image's entrypoint, with no arguments: it is configured by environment.
		img.Entrypoint = []string{"/redis_exporter"}
		img.Binds = []Bind{{Source: t.ExporterBinary(), Target: "/redis_exporter"}}
	case strings.Contains(repo, "redis-operator"):
		img.Kind = Operator
		if _, err := os.Stat(t.OperatorBinary()); err != nil {
			return Image{}, &NotFoundError{Ref: ref, Reason: "the operator binary " + t.OperatorBinary() +
				" is not built (run `make build`)"}
		}
		// Kubebuilder-style manifests run /manager; others may run /redis-operator.
		img.Entrypoint = []string{"/manager"}
		img.Binds = []Bind{
			{Source: t.OperatorBinary(), Target: "/manager"},
			{Source: t.OperatorBinary(), Target: "/redis-operator"},
		}
	case repo == "redis" || repo == "redis-sentinel" || repo == "redis-stack-server" || repo == "valkey":
		img.Kind = Redis
		img.Cmd = []string{"redis-server"}
		if repo == "redis-sentinel" {
			img.Cmd = []string{"redis-sentinel"}
		}
		img.WorkingDir = "/data"
		img.RedisDefaults = true
	case repo == "busybox" || repo == "alpine" || repo == "debian" || repo == "ubuntu" || repo == "bash":
		img.Kind = Tools
		img.Cmd = []string{"sh"}
	case repo == "pause":
		img.Kind = Pause
		img.Entrypoint = []string{"sleep", "infinity"}
	default:
		return Image{}, &NotFoundError{Ref: ref, Reason: "not in the sandbox's image table (known: redis, */redis, " +
			"redis-operator, *redis_exporter*, busybox, alpine, debian, ubuntu, pause)"}
	}
	return img, nil
}

// imageID is the digest-pinned reference a container status reports for an image of the
// repository: one fixed digest per repository, since the sandbox's images have no content.
func imageID(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return "sandbox.invalid/" + repo + "@sha256:" + hex.EncodeToString(sum[:])
}
