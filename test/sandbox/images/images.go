// Package images is the sandbox's stand-in for a container registry: it maps an image
// reference to what runs when a container uses it. Containers run on a file system seen
// through a private overlay: the host's own, or for servers newer than the host's Debian has
// a root file system of their Debian release (hack/build-server-roots.sh builds them under
// bin/roots), so that those servers run on their own libraries as in a real image. Each image
// is described by what makes it differ from that file system: the binaries it has (bound from
// the packages at the image's own paths) and those it lacks (hidden), its user, working
// directory, directories and files, and what its entrypoint does. The facts come from the
// images users run (shared/reference/images.md): a manifest that works here must work with
// those images on a real kubelet.
//
// The official redis and valkey/valkey images are resolved by tag, as a registry would:
//
//	redis:6.*, redis:7.*, redis:7       the host's Redis 7.0 (Debian 12); no 6.x or 7.2/7.4 server here
//	redis:8.*, redis:8, latest, no tag  Redis 8.0.2 from the trixie root (latest is an 8.x)
//	valkey/valkey:7.2.*, 8.0.*          the host's Valkey 8.0 (bookworm-backports)
//	valkey/valkey:8.1.*, 8, latest, no tag  Valkey 8.1.1 from the trixie root
//
// versity/versitygw (an S3 server, for backups) runs the versitygw the Makefile builds into
// bin/ (VersitygwVersion) for that release's tag, latest and no tag (versitygw.go).
//
// Each version may carry the variants the registries publish (-alpine, -alpine3.21,
// -bookworm, ...). A tag no release has (redis:6.9.9, valkey/valkey:9.9) is refused as
// "manifest unknown"; a release the sandbox has no server for (older than Redis 6, Valkey 9)
// is refused with that reason. Other owners' redis images (a mirror's custom tags) run the
// host's Redis as before.
//
// References on the sandbox's own registry (Table.Registry, e.g. 127.0.0.1:5000/redis-operator:1.2.3)
// are real images: pulled for this machine's platform, their layers unpacked as the
// container's root file system, run with their config's entrypoint, command, user and
// environment (pull.go). That is how a test runs the image a release ships.
package images

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
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
	// ObjectStore is an S3 server (versity/versitygw).
	ObjectStore Kind = "object-store"
)

// Entrypoint behaviours the sandbox emulates (containerinit runs them when a container's
// command resolves to the image's entrypoint).
const (
	// DockerLibrary is the official redis and valkey images' docker-entrypoint.sh.
	DockerLibrary = "docker-library"
	// OpstreeRedis is quay.io/opstree/redis's entrypoint.sh: it ignores its arguments.
	OpstreeRedis = "opstree-redis"
	// OpstreeSentinel is quay.io/opstree/redis-sentinel's entrypoint-sentinel.sh: it
	// ignores its arguments too.
	OpstreeSentinel = "opstree-sentinel"
	// Bitnami is bitnami/redis's entrypoint.sh and run.sh.
	Bitnami = "bitnami"
	// Versitygw is versity/versitygw's docker-entrypoint.sh: the gateway with the
	// container's arguments, or with arguments made of its VGW_* variables.
	Versitygw = "versitygw"
)

// Bind makes a host file appear at a path inside the container.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Dir and File are the image's own directories and files, as containerinit creates them.
type (
	Dir  = containerinit.Dir
	File = containerinit.File
)

// User is the image's USER (uid and primary gid).
type User struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Image is what a container of that image runs, in OCI image-config terms, and how its file
// system differs from the host's.
type Image struct {
	Ref        string
	Kind       Kind
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Env        []string
	// User is the image's USER; nil is root.
	User *User
	// Groups maps a uid the image's /etc/passwd knows to its primary group: a pod that
	// sets runAsUser but no runAsGroup runs with that group (0 for an unknown uid).
	Groups map[int]int
	// Binds are host files the image contains, at the image's paths.
	Binds []Bind
	// Lacks are host paths (globs) the image does not contain: hidden in the container.
	Lacks []string
	// Scratch images contain nothing but their binds: no shell, no tools.
	Scratch bool
	Dirs    []Dir
	Files   []File
	// Behaviour is the emulated entrypoint (one of the constants above), run when the
	// container's command is Entrypoint[0].
	Behaviour string
	// RedisDefaults: the image's redis-server is built with protected-mode off by default,
	// as the official images patch it.
	RedisDefaults bool
	// ID stands in for the image digest in container statuses: a pullable reference pinned
	// to a digest, as real kubelets report it, which resolves to the same image.
	ID string
	// RootFS is the host directory that is the container's root file system (the overlay's
	// lower layer); empty is the host's /.
	RootFS string
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
	// HostBin is where the host's Debian packages put redis-server, valkey-server and the
	// exporter; empty means /usr/bin.
	HostBin string
	// Roots holds the root file systems hack/build-server-roots.sh builds (one folder per
	// Debian release); empty means BinDir/roots.
	Roots string
	// Registry is the host:port of the sandbox's own registry (test/sandbox/registry);
	// references on it are pulled from it and run from their layers, not from this table.
	Registry string
	// Pulled holds the unpacked file systems of pulled images, one folder per image digest;
	// empty means BinDir/pulled.
	Pulled string
}

func (t Table) roots() string {
	if t.Roots != "" {
		return t.Roots
	}
	return filepath.Join(t.BinDir, "roots")
}

// OperatorBinary is the file the operator image runs.
func (t Table) OperatorBinary() string { return filepath.Join(t.BinDir, "redis-operator") }

func (t Table) hostBin() string {
	if t.HostBin != "" {
		return t.HostBin
	}
	return "/usr/bin"
}

// ExporterBinary is the file the exporter image runs: a redis_exporter built into BinDir when
// there is one, else the host's Debian prometheus-redis-exporter (hack/install-packages.sh
// installs it), the same program under another name. Both read the flags and the environment
// (REDIS_ADDR, REDIS_PASSWORD, REDIS_EXPORTER_*) the exporter image's binary reads.
func (t Table) ExporterBinary() string {
	built := filepath.Join(t.BinDir, "redis_exporter")
	if _, err := os.Stat(built); err == nil {
		return built
	}
	return filepath.Join(t.hostBin(), "prometheus-redis-exporter")
}

// Path returns ref's repository path without registry, tag or digest, lower-cased:
// "quay.io/opstree/redis:v7.0.15" -> "opstree/redis", "redis:7" -> "redis".
func Path(ref string) string {
	r := ref
	if i := strings.Index(r, "@"); i >= 0 {
		r = r[:i]
	}
	if i := strings.LastIndex(r, ":"); i >= 0 && !strings.Contains(r[i:], "/") {
		r = r[:i]
	}
	if first, rest, ok := strings.Cut(r, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		r = rest
	}
	r = strings.TrimPrefix(r, "library/")
	return strings.ToLower(r)
}

// Repository returns the last path element of ref's repository, without registry, tag or
// digest: "quay.io/opstree/redis:v7.0.15" -> "redis".
func Repository(ref string) string {
	p := Path(ref)
	return p[strings.LastIndex(p, "/")+1:]
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// hostServerBinaries are the host's Redis, Valkey and exporter programs: an image has only
// those it binds at its own paths.
var hostServerBinaries = []string{"redis-*", "valkey-*", "prometheus-redis-exporter"}

// Resolve maps ref to an image or a *NotFoundError.
func (t Table) Resolve(ref string) (Image, error) {
	if t.Pulls(ref) {
		return t.pull(ref)
	}
	path := Path(ref)
	repo := Repository(ref)
	owner := ""
	if i := strings.LastIndex(path, "/"); i >= 0 {
		owner = path[:i]
	}
	img := Image{Ref: ref, Env: []string{defaultPath}, ID: imageID(path)}
	var err error
	switch {
	case repo == "":
		return Image{}, &NotFoundError{Ref: ref, Reason: "empty image reference"}
	case strings.Contains(repo, "redis_exporter") || strings.Contains(repo, "redis-exporter"):
		err = t.exporter(&img, owner == "opstree")
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
	case owner == "opstree" && repo == "redis":
		err = t.opstreeRedis(&img)
	case repo == "redis-sentinel":
		err = t.opstreeSentinel(&img)
	case strings.HasPrefix(owner, "bitnami") && repo == "redis":
		err = t.bitnami(&img)
	case repo == "valkey" && path == "valkey/valkey":
		err = t.official(&img, ref, valkeyReleases)
	case repo == "redis" && path == "redis":
		err = t.official(&img, ref, redisReleases)
	case repo == "valkey":
		err = t.dockerLibrary(&img, "valkey", hostServer)
	case repo == "redis" || repo == "redis-stack-server":
		err = t.dockerLibrary(&img, "redis", hostServer)
	case repo == "busybox" || repo == "alpine" || repo == "debian" || repo == "ubuntu" || repo == "bash":
		// Client pods of the tests: the host's shell and tools, redis-cli included.
		img.Kind = Tools
		img.Cmd = []string{"sh"}
	case path == versitygwPath:
		err = t.versitygw(&img, ref)
	case repo == "pause":
		img.Kind = Pause
		img.Entrypoint = []string{"sleep", "infinity"}
	default:
		return Image{}, &NotFoundError{Ref: ref, Reason: "not in the sandbox's image table (known: redis, valkey/valkey, " +
			"bitnami/redis, quay.io/opstree/redis, quay.io/opstree/redis-sentinel, *redis_exporter*, *redis-exporter*, " +
			"redis-operator, versity/versitygw, busybox, alpine, debian, ubuntu, pause)"}
	}
	if err != nil {
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return Image{}, nf
		}
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	return img, nil
}

// binaries binds host programs at dir/name: names maps each name to the host program.
func (t Table) binaries(dir string, names map[string]string) ([]Bind, error) {
	return bindPrograms("", t.hostBin(), dir, names, "hack/install-packages.sh")
}

// bindPrograms binds the programs of srcDir (a directory of root, "" for the host) at
// dir/name; names maps each name to the program. fix names what installs them.
func bindPrograms(root, srcDir, dir string, names map[string]string, fix string) ([]Bind, error) {
	var out []Bind
	for name, prog := range names {
		src := filepath.Join(root, srcDir, prog)
		// A program that is a link (redis-server -> redis-check-rdb) is bound as the file
		// it names: the bind must not depend on the image having the link's target.
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return nil, fmt.Errorf("%s is not installed on this machine (run %s)", src, fix)
		}
		if root != "" && !strings.HasPrefix(real, filepath.Clean(root)+"/") {
			return nil, fmt.Errorf("%s leads out of its root %s", src, root)
		}
		out = append(out, Bind{Source: real, Target: filepath.Join(dir, name)})
	}
	sortBinds(out)
	return out, nil
}

func sortBinds(b []Bind) {
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b[j].Target < b[j-1].Target; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
}

// placeholder is the file an emulated entrypoint stands at, so that the image's file system
// shows it where the image has it.
func placeholder(path string) File {
	return File{Path: path, Content: "#!/bin/sh\n# The sandbox emulates this image's entrypoint (test/sandbox/images).\nexit 127\n", Mode: 0o755}
}

// dockerLibrary is the official redis or valkey image (server "redis" or "valkey"): root at
// start, docker-entrypoint.sh that prepends the server to flags or a .conf and drops to uid
// 999 for the server, the programs in /usr/local/bin, /data owned by 999. from says whose
// programs and file system it has: the host's, or a root's from bin/roots.
func (t Table) dockerLibrary(img *Image, server string, from serverSource) error {
	img.Kind = Redis
	names := map[string]string{
		"redis-server": "redis-server", "redis-sentinel": "redis-sentinel", "redis-cli": "redis-cli",
		"redis-check-aof": "redis-check-aof", "redis-check-rdb": "redis-check-rdb", "redis-benchmark": "redis-benchmark",
	}
	if server == "valkey" {
		// valkey-server and valkey-sentinel are one program that picks its mode by name; the
		// image links the redis-* names to the valkey-* programs.
		names = map[string]string{
			"valkey-server": "valkey-server", "valkey-sentinel": "valkey-server", "valkey-cli": "valkey-cli",
			"valkey-check-aof": "valkey-check-aof", "valkey-check-rdb": "valkey-check-rdb", "valkey-benchmark": "valkey-benchmark",
			"redis-server": "valkey-server", "redis-sentinel": "valkey-server", "redis-cli": "valkey-cli",
		}
	}
	var binds []Bind
	var err error
	if from.root == "" {
		binds, err = t.binaries("/usr/local/bin", names)
	} else {
		root := filepath.Join(t.roots(), from.root)
		if _, statErr := os.Stat(filepath.Join(root, rootStamp)); statErr != nil {
			return fmt.Errorf("the %s root %s that runs %s %s is not built (run hack/build-server-roots.sh)",
				from.root, root, server, from.version)
		}
		binds, err = bindPrograms(root, "/usr/bin", "/usr/local/bin", names, "hack/build-server-roots.sh")
		img.RootFS = root
	}
	if err != nil {
		return err
	}
	img.Binds = binds
	// The packages' own /usr/bin programs are not where the image has them.
	img.Lacks = hostServerBinaries
	img.Entrypoint = []string{"docker-entrypoint.sh"}
	img.Cmd = []string{server + "-server"}
	img.WorkingDir = "/data"
	img.Groups = map[int]int{999: 999}
	img.Dirs = []Dir{{Path: "/data", UID: 999, GID: 999, Mode: 0o755}}
	img.Files = []File{placeholder("/usr/local/bin/docker-entrypoint.sh")}
	img.Behaviour = DockerLibrary
	img.RedisDefaults = true
	return nil
}

// opstreeOwned are the directories the opstree images give to group 0, writable by it.
func opstreeDirs(paths ...string) []Dir {
	var out []Dir
	for _, p := range paths {
		out = append(out, Dir{Path: p, UID: 1000, GID: 0, Mode: 0o775})
	}
	return out
}

// opstreeRedisConf stands for the image's own /etc/redis/redis.conf: what Redis runs when
// nothing is mounted there (its entrypoint appends to it from the environment).
const opstreeRedisConf = "bind 0.0.0.0\nport 6379\ndir /data\n"

// opstreeRedis is quay.io/opstree/redis: user 1000 in group 0, an entrypoint that ignores its
// arguments, appends to /etc/redis/redis.conf from the environment and runs redis-server on
// that file; redis-server and redis-cli only.
func (t Table) opstreeRedis(img *Image) error {
	img.Kind = Redis
	binds, err := t.binaries("/usr/local/bin", map[string]string{"redis-server": "redis-server", "redis-cli": "redis-cli"})
	if err != nil {
		return err
	}
	img.Binds = binds
	img.Lacks = hostServerBinaries
	img.Entrypoint = []string{"/usr/bin/entrypoint.sh"}
	img.User = &User{UID: 1000, GID: 0}
	img.Groups = map[int]int{1000: 0}
	img.Dirs = opstreeDirs("/data", "/node-conf", "/etc/redis")
	img.Files = []File{
		placeholder("/usr/bin/entrypoint.sh"),
		{Path: "/etc/redis/redis.conf", Content: opstreeRedisConf, UID: 1000, GID: 0, Mode: 0o664},
	}
	img.Behaviour = OpstreeRedis
	return nil
}

// opstreeSentinel is quay.io/opstree/redis-sentinel: user 1000 in group 0, an entrypoint
// that ignores its arguments, writes /etc/redis/sentinel.conf from the environment and runs
// redis-sentinel on it; redis-sentinel and redis-cli, no redis-server.
func (t Table) opstreeSentinel(img *Image) error {
	img.Kind = Redis
	binds, err := t.binaries("/usr/local/bin", map[string]string{"redis-sentinel": "redis-sentinel", "redis-cli": "redis-cli"})
	if err != nil {
		return err
	}
	img.Binds = binds
	img.Lacks = hostServerBinaries
	img.Entrypoint = []string{"/usr/bin/entrypoint-sentinel.sh"}
	img.User = &User{UID: 1000, GID: 0}
	img.Groups = map[int]int{1000: 0}
	img.Dirs = opstreeDirs("/data", "/etc/redis")
	img.Files = []File{placeholder("/usr/bin/entrypoint-sentinel.sh")}
	img.Behaviour = OpstreeSentinel
	return nil
}

// bitnamiRedisConf stands for bitnami/redis's own configuration file.
const bitnamiRedisConf = "bind 0.0.0.0\nport 6379\ndir /bitnami/redis/data\nprotected-mode no\n"

// bitnami is bitnami/redis: user 1001, its programs in /opt/bitnami/redis/bin (on the PATH),
// an entrypoint that runs its arguments after its setup, and run.sh as the default command.
func (t Table) bitnami(img *Image) error {
	img.Kind = Redis
	binds, err := t.binaries("/opt/bitnami/redis/bin", map[string]string{
		"redis-server": "redis-server", "redis-sentinel": "redis-sentinel", "redis-cli": "redis-cli",
	})
	if err != nil {
		return err
	}
	img.Binds = binds
	img.Lacks = hostServerBinaries
	img.Env = []string{"PATH=/opt/bitnami/redis/bin:/opt/bitnami/common/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	img.Entrypoint = []string{"/opt/bitnami/scripts/redis/entrypoint.sh"}
	img.Cmd = []string{"/opt/bitnami/scripts/redis/run.sh"}
	img.User = &User{UID: 1001, GID: 0}
	img.Groups = map[int]int{1001: 0}
	img.Dirs = []Dir{
		{Path: "/bitnami/redis/data", UID: 1001, GID: 0, Mode: 0o775},
		{Path: "/opt/bitnami/redis/etc", UID: 1001, GID: 0, Mode: 0o775},
	}
	img.Files = []File{
		placeholder("/opt/bitnami/scripts/redis/entrypoint.sh"),
		placeholder("/opt/bitnami/scripts/redis/run.sh"),
		{Path: "/opt/bitnami/redis/etc/redis.conf", Content: bitnamiRedisConf, UID: 1001, GID: 0, Mode: 0o664},
	}
	img.Behaviour = Bitnami
	return nil
}

// exporter is a redis_exporter image: built from scratch, the binary alone (no shell),
// configured by its environment. The opstree image has it in /usr/local/bin, the upstream
// one at /redis_exporter.
func (t Table) exporter(img *Image, opstree bool) error {
	img.Kind = Exporter
	bin := t.ExporterBinary()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the Redis exporter is not installed (run hack/install-packages.sh, "+
			"which installs Debian's prometheus-redis-exporter, or put a redis_exporter binary in %s)", t.BinDir)
	}
	target := "/redis_exporter"
	if opstree {
		target = "/usr/local/bin/redis_exporter"
	}
	img.Entrypoint = []string{target}
	img.Binds = []Bind{{Source: bin, Target: target}}
	img.Scratch = true
	return nil
}

// imageID is the digest-pinned reference a container status reports for an image of the
// repository path: one fixed digest per path, since the sandbox's images have no content.
func imageID(path string) string {
	sum := sha256.Sum256([]byte(path))
	return "sandbox.invalid/" + path + "@sha256:" + hex.EncodeToString(sum[:])
}
