package images

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pulled is an image pulled from the sandbox's registry: what runs is its layers, as a
// container runtime would unpack them, with its config's entrypoint, command, user and
// environment.
const Pulled Kind = "pulled"

// pullTimeout bounds one pull: the registry is on loopback, so a pull that takes longer is
// stuck, and the container retries with back-off as after any failed pull.
const pullTimeout = 2 * time.Minute

// Pulls reports whether ref names an image of the sandbox's registry, which Resolve pulls.
func (t Table) Pulls(ref string) bool {
	if t.Registry == "" {
		return false
	}
	r, err := name.ParseReference(ref)
	return err == nil && r.Context().RegistryStr() == t.Registry
}

func (t Table) pulledDir() string {
	if t.Pulled != "" {
		return t.Pulled
	}
	return filepath.Join(t.BinDir, "pulled")
}

// pull resolves ref on the sandbox's registry: the image for this machine's platform, its
// layers unpacked once per image digest under Table.Pulled, run as its config says. The
// registry's own answer (manifest unknown, no such platform) is the reason of a failure.
func (t Table) pull(ref string) (Image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pullTimeout)
	defer cancel()
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	desc, err := remote.Get(r, remote.WithContext(ctx), remote.WithPlatform(platform))
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	img, err := desc.Image()
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: fmt.Sprintf("no image for %s/%s: %v", platform.OS, platform.Architecture, err)}
	}
	digest, err := img.Digest()
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: fmt.Sprintf("image config: %v", err)}
	}
	root, err := t.unpacked(img, digest)
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	out := Image{
		Ref:        ref,
		Kind:       Pulled,
		Entrypoint: cfg.Config.Entrypoint,
		Cmd:        cfg.Config.Cmd,
		WorkingDir: cfg.Config.WorkingDir,
		Env:        withPath(cfg.Config.Env),
		// The digest of what the reference names (the index, for a multi-arch tag), as a
		// real kubelet reports it: pulling it again picks this platform's image.
		ID:     r.Context().Name() + "@" + desc.Digest.String(),
		RootFS: root,
	}
	if strings.Contains(Repository(ref), "redis-operator") {
		out.Kind = Operator
	}
	users, err := passwd(root)
	if err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	out.Groups = users.primary
	if out.User, err = users.parse(cfg.Config.User, root); err != nil {
		return Image{}, &NotFoundError{Ref: ref, Reason: err.Error()}
	}
	return out, nil
}

// withPath adds the PATH container runtimes give an image that sets none.
func withPath(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append(append([]string(nil), env...), defaultPath)
}

// unpacked returns the directory holding img's file system, unpacking it the first time.
// Each image is unpacked into a folder of its own and renamed into place, so that a
// container never sees a half-unpacked root and two pulls of one image need no lock.
func (t Table) unpacked(img v1.Image, digest v1.Hash) (string, error) {
	dir := filepath.Join(t.pulledDir(), digest.Algorithm+"-"+digest.Hex)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(t.pulledDir(), 0o755); err != nil {
		return "", fmt.Errorf("image cache: %w", err)
	}
	tmp, err := os.MkdirTemp(t.pulledDir(), ".unpack-")
	if err != nil {
		return "", fmt.Errorf("image cache: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// MkdirTemp makes it 0700; the root of an image is world-readable.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("image cache: %w", err)
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	if err := untar(rc, tmp); err != nil {
		return "", fmt.Errorf("unpack %s: %w", digest, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			// Another pull of the same image got there first.
			return dir, nil
		}
		return "", fmt.Errorf("image cache: %w", err)
	}
	return dir, nil
}

// untar writes the flattened file system of an image into dir. Every path is resolved
// inside dir (os.Root), so a link in the image cannot lead a later entry out of it. Files
// keep their owners when this process may set them (the daemon runs as root); device nodes
// and FIFOs are skipped: a container gets its own /dev.
func untar(r io.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	chown := os.Geteuid() == 0
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if p == "." {
			continue
		}
		if !fs.ValidPath(p) {
			return fmt.Errorf("entry %q leaves the image's root", h.Name)
		}
		if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeEntry(root, tr, h, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink || !known(h.Typeflag) {
			continue
		}
		if chown {
			if err := root.Lchown(p, h.Uid, h.Gid); err != nil {
				return err
			}
		}
		// After the owner: chown clears the set-id bits.
		if err := root.Chmod(p, h.FileInfo().Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
		if err := root.Chtimes(p, h.ModTime, h.ModTime); err != nil {
			return err
		}
	}
}

func known(t byte) bool { return t == tar.TypeDir || t == tar.TypeReg }

func writeEntry(root *os.Root, tr *tar.Reader, h *tar.Header, p string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case tar.TypeReg:
		f, err := root.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, p)
	case tar.TypeLink:
		target := path.Clean(strings.TrimPrefix(h.Linkname, "/"))
		if !fs.ValidPath(target) {
			return fmt.Errorf("hard link to %q leaves the image's root", h.Linkname)
		}
		return root.Link(target, p)
	}
	return nil
}

// users are the accounts of an image's /etc/passwd and /etc/group.
type users struct {
	byName  map[string][2]int
	primary map[int]int
	groups  map[string]int
}

// passwd reads the image's accounts; an image without /etc/passwd (a binary alone) has none.
func passwd(dir string) (users, error) {
	u := users{byName: map[string][2]int{}, primary: map[int]int{}, groups: map[string]int{}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return u, err
	}
	defer func() { _ = root.Close() }()
	err = eachLine(root, "etc/passwd", func(f []string) {
		if len(f) < 4 {
			return
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil {
			u.byName[f[0]] = [2]int{uid, gid}
			u.primary[uid] = gid
		}
	})
	if err != nil {
		return u, err
	}
	err = eachLine(root, "etc/group", func(f []string) {
		if len(f) < 3 {
			return
		}
		if gid, err := strconv.Atoi(f[2]); err == nil {
			u.groups[f[0]] = gid
		}
	})
	return u, err
}

// eachLine calls fn with the ':'-separated fields of each line of the file at p in root.
func eachLine(root *os.Root, p string, fn func([]string)) error {
	f, err := root.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fn(strings.Split(sc.Text(), ":"))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}

// parse reads an image config's USER ("uid", "uid:gid", "name", "name:group"), as container
// runtimes do: names from the image's own /etc/passwd and /etc/group, a uid alone in the
// primary group its passwd entry gives (0 when it has none). Empty is root.
func (u users) parse(spec, dir string) (*User, error) {
	if spec == "" {
		return nil, nil
	}
	user, group, hasGroup := strings.Cut(spec, ":")
	var out User
	if uid, err := strconv.Atoi(user); err == nil {
		out = User{UID: uid, GID: u.primary[uid]}
	} else if ids, ok := u.byName[user]; ok {
		out = User{UID: ids[0], GID: ids[1]}
	} else {
		return nil, fmt.Errorf("unable to find user %s: no matching entries in passwd file of %s", user, dir)
	}
	if hasGroup {
		if gid, err := strconv.Atoi(group); err == nil {
			out.GID = gid
		} else if gid, ok := u.groups[group]; ok {
			out.GID = gid
		} else {
			return nil, fmt.Errorf("unable to find group %s: no matching entries in group file of %s", group, dir)
		}
	}
	return &out, nil
}
