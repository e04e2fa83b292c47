// Package restore puts a backup's RDB snapshot into a Redis data directory before Redis first
// starts: the init container of a restored resource runs it (redis-operator restore). The
// object is streamed into a temporary file of the data directory, checked against the size
// and SHA-256 the backup recorded, synced and renamed into place, so that Redis finds either
// the whole snapshot or nothing. It never overwrites data: a data directory that holds data it
// did not write itself is refused, and a second run after a restore does nothing, so that a
// restarted pod keeps what Redis has written since.
package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The names Redis 7 uses unless its config says otherwise.
const (
	// DumpFile is dbfilename.
	DumpFile = "dump.rdb"
	// AppendDir is appenddirname.
	AppendDir = "appendonlydir"
	// AppendFile is appendfilename, the prefix of the multi-part AOF's files.
	AppendFile = "appendonly.aof"
)

// markerPrefix names the file a restore leaves in the data directory, followed by the
// snapshot's SHA-256: its presence says this snapshot was restored here already.
const markerPrefix = ".restored-"

// tempPrefix starts the names of the files and directories a restore writes before it
// renames them into place; one left by an interrupted run is removed by the next.
const tempPrefix = ".restore-tmp-"

// ErrDataPresent: the data directory holds data the restore did not write.
var ErrDataPresent = errors.New("the data directory already holds data")

// ErrMismatch: the object is not the snapshot the backup recorded.
var ErrMismatch = errors.New("the object does not match the backup")

// Source reads the backup's objects (store.S3 is one).
type Source interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// Options say what to restore and where.
type Options struct {
	// Key is the object's key in the bucket.
	Key string
	// SHA256 is the snapshot's SHA-256, in hex, as the backup's status records it.
	SHA256 string
	// Bytes is the snapshot's size.
	Bytes int64
	// DataDir is Redis's dir.
	DataDir string
	// AppendOnly: Redis runs with appendonly yes, and at its first start loads the AOF and
	// not dump.rdb; the snapshot then becomes the base of a new multi-part AOF.
	AppendOnly bool
}

// Outcome says what Run did.
type Outcome int

const (
	// Restored: the snapshot was written.
	Restored Outcome = iota
	// AlreadyRestored: the snapshot was restored here before; nothing was touched.
	AlreadyRestored
)

func (o Outcome) String() string {
	switch o {
	case AlreadyRestored:
		return "already restored"
	case Skipped:
		return "skipped"
	}
	return "restored"
}

func (o Options) validate() error {
	if o.Key == "" {
		return errors.New("no object key")
	}
	if len(o.SHA256) != sha256.Size*2 || strings.ToLower(o.SHA256) != o.SHA256 {
		return fmt.Errorf("sha256 %q: want %d lower-case hex digits", o.SHA256, sha256.Size*2)
	}
	if _, err := hex.DecodeString(o.SHA256); err != nil {
		return fmt.Errorf("sha256 %q: %w", o.SHA256, err)
	}
	if o.Bytes <= 0 {
		return fmt.Errorf("bytes %d: want the snapshot's size, more than 0", o.Bytes)
	}
	if !filepath.IsAbs(o.DataDir) {
		return fmt.Errorf("data dir %q: want an absolute path", o.DataDir)
	}
	return nil
}

// restoredBefore reports whether the snapshot of that SHA-256 was restored into dir before
// (its marker is there).
func restoredBefore(dir, sha256 string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, markerPrefix+sha256))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("restore: %w", err)
}

// Run restores the snapshot of opts into opts.DataDir, or does nothing when it was restored
// there before. It refuses (ErrDataPresent) a data directory with data of another origin, and
// an object that is not the recorded snapshot (ErrMismatch), leaving the directory as it was.
func Run(ctx context.Context, src Source, opts Options) (Outcome, error) {
	if err := opts.validate(); err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	dir := opts.DataDir
	if err := removeTemporaries(dir); err != nil {
		return 0, err
	}
	marker := filepath.Join(dir, markerPrefix+opts.SHA256)
	if done, err := restoredBefore(dir, opts.SHA256); err != nil || done {
		return AlreadyRestored, err
	}
	done, err := alreadyInPlace(dir, opts)
	if err != nil {
		return 0, err
	}
	if done {
		// Restored by a run that stopped before it wrote the marker.
		return AlreadyRestored, writeMarker(dir, marker)
	}
	if err := ensureEmpty(dir); err != nil {
		return 0, err
	}
	if opts.AppendOnly {
		err = restoreAOF(ctx, src, opts)
	} else {
		err = restoreRDB(ctx, src, opts)
	}
	if err != nil {
		return 0, err
	}
	return Restored, writeMarker(dir, marker)
}

// alreadyInPlace: the data directory holds exactly what a restore of opts writes, as after a
// run that stopped between the rename and the marker.
func alreadyInPlace(dir string, opts Options) (bool, error) {
	path := filepath.Join(dir, DumpFile)
	if opts.AppendOnly {
		path = filepath.Join(dir, AppendDir, baseName())
		manifest, err := os.ReadFile(filepath.Join(dir, AppendDir, AppendFile+".manifest")) //nolint:gosec // the data dir is the operator's own setting
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("restore: %w", err)
		}
		if string(manifest) != manifestText() {
			return false, nil
		}
	}
	sum, err := fileSHA256(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sum == opts.SHA256, nil
}

// ensureEmpty refuses a data directory that holds a snapshot or an AOF.
func ensureEmpty(dir string) error {
	for _, name := range []string{DumpFile, AppendDir, AppendFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("restore into %s: %w (%s) that this restore did not write; "+
				"a restore never overwrites data: restore into a new resource, or empty its volume", dir, ErrDataPresent, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore: %w", err)
		}
	}
	return nil
}

// restoreRDB writes the snapshot as dump.rdb.
func restoreRDB(ctx context.Context, src Source, opts Options) error {
	tmp, err := download(ctx, src, opts)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(opts.DataDir, DumpFile)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	return syncDir(opts.DataDir)
}

// baseName is the file of the restored AOF's base.
func baseName() string { return AppendFile + ".1.base.rdb" }

// incrName is the restored AOF's first, empty, increment.
func incrName() string { return AppendFile + ".1.incr.aof" }

// manifestText is the manifest Redis 7 writes for a base and one increment.
func manifestText() string {
	return "file " + baseName() + " seq 1 type b\n" + "file " + incrName() + " seq 1 type i\n"
}

// restoreAOF writes the snapshot as the base of a new multi-part AOF (Redis 7): the
// appendonlydir, with the base, an empty increment and the manifest, is built under a
// temporary name and renamed into place whole.
func restoreAOF(ctx context.Context, src Source, opts Options) error {
	tmpDir, err := os.MkdirTemp(opts.DataDir, tempPrefix)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(tmpDir) }
	tmp, err := download(ctx, src, opts)
	if err != nil {
		cleanup()
		return err
	}
	if err := os.Rename(tmp, filepath.Join(tmpDir, baseName())); err != nil {
		_ = os.Remove(tmp)
		cleanup()
		return fmt.Errorf("restore: %w", err)
	}
	for name, content := range map[string]string{incrName(): "", AppendFile + ".manifest": manifestText()} {
		if err := writeSynced(filepath.Join(tmpDir, name), []byte(content)); err != nil {
			cleanup()
			return err
		}
	}
	if err := syncDir(tmpDir); err != nil {
		cleanup()
		return err
	}
	if err := os.Rename(tmpDir, filepath.Join(opts.DataDir, AppendDir)); err != nil {
		cleanup()
		return fmt.Errorf("restore: %w", err)
	}
	// The same snapshot as dump.rdb too, a link that takes no space: a Redis whose own
	// additional config turns appendonly off loads that instead. Redis replaces either file
	// by a rename, never writes into it, so the two never share a change.
	if err := os.Link(filepath.Join(opts.DataDir, AppendDir, baseName()), filepath.Join(opts.DataDir, DumpFile)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return syncDir(opts.DataDir)
}

// download streams the object into a temporary file of the data directory, synced, and
// returns its path once its size and SHA-256 are the recorded ones; otherwise it removes it.
func download(ctx context.Context, src Source, opts Options) (path string, err error) {
	body, err := src.Get(ctx, opts.Key)
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer func() { _ = body.Close() }()
	f, err := os.CreateTemp(opts.DataDir, tempPrefix+"*.rdb")
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	hash := sha256.New()
	// One byte more than recorded tells a longer object from the recorded one.
	n, err := io.Copy(io.MultiWriter(f, hash), io.LimitReader(body, opts.Bytes+1))
	if err != nil {
		return "", fmt.Errorf("restore: read %s: %w", opts.Key, err)
	}
	if n != opts.Bytes {
		return "", fmt.Errorf("restore %s: %w: %d bytes or more, the backup recorded %d", opts.Key, ErrMismatch, n, opts.Bytes)
	}
	if sum := hex.EncodeToString(hash.Sum(nil)); sum != opts.SHA256 {
		return "", fmt.Errorf("restore %s: %w: SHA-256 %s, the backup recorded %s", opts.Key, ErrMismatch, sum, opts.SHA256)
	}
	if err = f.Sync(); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	return f.Name(), nil
}

// removeTemporaries removes what an interrupted run left.
func removeTemporaries(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("restore: %w", err)
			}
		}
	}
	return nil
}

func writeMarker(dir, marker string) error {
	if err := writeSynced(marker, nil); err != nil {
		return err
	}
	return syncDir(dir)
}

func writeSynced(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // a path of the data dir
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close()
		return fmt.Errorf("restore: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("restore: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // the data dir
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("restore: sync %s: %w", dir, err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // a path of the data dir
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer func() { _ = f.Close() }()
	hash := sha256.New()
	if _, err := io.Copy(hash, f); err != nil {
		return "", fmt.Errorf("restore: read %s: %w", path, err)
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}
