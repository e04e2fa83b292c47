package kubelet

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomicUpdatesInPlace(t *testing.T) {
	dir := t.TempDir()
	changed, err := writeAtomic(dir, map[string]fileProjection{
		"a":     {Data: []byte("1")},
		"sub/b": {Data: []byte("2"), Mode: 0o600},
	})
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if read("a") != "1" || read("sub/b") != "2" {
		t.Fatalf("content: a=%q sub/b=%q", read("a"), read("sub/b"))
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub/b")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of sub/b: %v %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "a")); err != nil || target != "..data/a" {
		t.Errorf("a should link through ..data, got %q %v", target, err)
	}
	oldData, _ := os.Readlink(filepath.Join(dir, "..data"))

	changed, err = writeAtomic(dir, map[string]fileProjection{"a": {Data: []byte("1")}, "sub/b": {Data: []byte("2"), Mode: 0o600}})
	if err != nil || changed {
		t.Fatalf("same payload: changed=%v err=%v", changed, err)
	}

	changed, err = writeAtomic(dir, map[string]fileProjection{"a": {Data: []byte("new")}, "c": {Data: []byte("3")}})
	if err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	if read("a") != "new" || read("c") != "3" {
		t.Errorf("after update: a=%q c=%q", read("a"), read("c"))
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("removed key sub/b still visible: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, oldData)); !os.IsNotExist(err) {
		t.Errorf("old data directory %s not removed", oldData)
	}
}
