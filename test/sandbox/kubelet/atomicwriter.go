package kubelet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// fileProjection is one file of a configMap, secret, projected or downwardAPI volume.
type fileProjection struct {
	Data []byte
	Mode os.FileMode
}

// writeAtomic publishes payload (relative path -> file) into dir the way the kubelet's
// atomic writer does: files live in a timestamped directory that the "..data" symlink points
// to, and each top-level entry is a symlink through "..data". Switching the symlink updates
// every file at once, so a process never sees a mix of old and new files, and a volume
// updates in place while mounted. It returns false when the content did not change.
func writeAtomic(dir string, payload map[string]fileProjection) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	sum := payloadHash(payload)
	hashFile := filepath.Join(dir, "..hash")
	if old, err := os.ReadFile(hashFile); err == nil && string(old) == sum {
		return false, nil
	}
	tsDir := "..time_" + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	tsPath := filepath.Join(dir, tsDir)
	if err := os.Mkdir(tsPath, 0o755); err != nil {
		return false, err
	}
	for rel, f := range payload {
		p := filepath.Join(tsPath, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			return false, err
		}
		if err := os.Chmod(p, mode); err != nil {
			return false, err
		}
	}
	oldTarget, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(tsDir, tmpLink); err != nil {
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, "..data")); err != nil {
		return false, err
	}
	top := map[string]bool{}
	for rel := range payload {
		top[strings.SplitN(rel, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if t, err := os.Readlink(link); err == nil && t == filepath.Join("..data", name) {
			continue
		}
		_ = os.RemoveAll(link)
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return false, err
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "..") && !top[n] {
			_ = os.RemoveAll(filepath.Join(dir, n))
		}
	}
	if oldTarget != "" && oldTarget != tsDir {
		_ = os.RemoveAll(filepath.Join(dir, oldTarget))
	}
	if err := os.WriteFile(hashFile, []byte(sum), 0o600); err != nil {
		return false, err
	}
	return true, nil
}

func payloadHash(payload map[string]fileProjection) string {
	keys := make([]string, 0, len(payload))
	for k := range payload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s\x00%o\x00%d\x00", k, payload[k].Mode, len(payload[k].Data))
		h.Write(payload[k].Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
