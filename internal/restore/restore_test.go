package restore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// memSource serves one object from memory and counts the reads.
type memSource struct {
	data  []byte
	reads int
}

func (m *memSource) Get(context.Context, string) (io.ReadCloser, error) {
	m.reads++
	return io.NopCloser(bytes.NewReader(m.data)), nil
}

func optionsFor(t *testing.T, data []byte, appendOnly bool) Options {
	t.Helper()
	sum := sha256.Sum256(data)
	return Options{Key: "k.rdb", SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)), DataDir: t.TempDir(), AppendOnly: appendOnly}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestRunWritesOnceAndNeverAgain(t *testing.T) {
	data := []byte("REDIS0010 a snapshot")
	for _, appendOnly := range []bool{false, true} {
		src := &memSource{data: data}
		opts := optionsFor(t, data, appendOnly)
		if out, err := Run(context.Background(), src, opts); err != nil || out != Restored {
			t.Fatalf("appendonly=%v: %v, %v", appendOnly, out, err)
		}
		want := []string{markerPrefix + opts.SHA256, DumpFile}
		if appendOnly {
			want = []string{markerPrefix + opts.SHA256, AppendDir, DumpFile}
			manifest, err := os.ReadFile(filepath.Join(opts.DataDir, AppendDir, AppendFile+".manifest"))
			if err != nil || string(manifest) != "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n" {
				t.Errorf("manifest %q, %v", manifest, err)
			}
		}
		if got := names(t, opts.DataDir); !slices.Equal(got, want) {
			t.Errorf("appendonly=%v: data dir %v, want %v", appendOnly, got, want)
		}
		// Redis writes its own data since; a restarted pod leaves it alone.
		if err := os.WriteFile(filepath.Join(opts.DataDir, DumpFile), []byte("REDIS0010 newer"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := Run(context.Background(), src, opts); err != nil || out != AlreadyRestored || src.reads != 1 {
			t.Errorf("appendonly=%v: second run %v, %v after %d reads", appendOnly, out, err, src.reads)
		}
	}
}

// A run that stopped after the rename, before the marker, is finished by the next one
// without reading the object again; what an interrupted run left under a temporary name goes.
func TestRunFinishesAnInterruptedRun(t *testing.T) {
	data := []byte("REDIS0010 a snapshot")
	for _, appendOnly := range []bool{false, true} {
		src := &memSource{data: data}
		opts := optionsFor(t, data, appendOnly)
		if _, err := Run(context.Background(), src, opts); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(opts.DataDir, markerPrefix+opts.SHA256)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(opts.DataDir, tempPrefix+"123.rdb"), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := Run(context.Background(), src, opts); err != nil || out != AlreadyRestored || src.reads != 1 {
			t.Errorf("appendonly=%v: %v, %v after %d reads", appendOnly, out, err, src.reads)
		}
		if got := names(t, opts.DataDir); slices.Contains(got, tempPrefix+"123.rdb") || !slices.Contains(got, markerPrefix+opts.SHA256) {
			t.Errorf("appendonly=%v: data dir %v", appendOnly, got)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	data := []byte("REDIS0010 a snapshot")
	for name, tc := range map[string]struct {
		serve   []byte
		prepare func(dir string) error
		want    error
	}{
		"another object": {serve: []byte("REDIS0010 a snapshoT"), want: ErrMismatch},
		"a longer one":   {serve: append(slices.Clone(data), 'x'), want: ErrMismatch},
		"a shorter one":  {serve: data[:len(data)-1], want: ErrMismatch},
		"another dump.rdb": {serve: data, want: ErrDataPresent, prepare: func(dir string) error {
			return os.WriteFile(filepath.Join(dir, DumpFile), []byte("REDIS0010 other"), 0o600)
		}},
		"an AOF": {serve: data, want: ErrDataPresent, prepare: func(dir string) error {
			return os.Mkdir(filepath.Join(dir, AppendDir), 0o700)
		}},
	} {
		for _, appendOnly := range []bool{false, true} {
			opts := optionsFor(t, data, appendOnly)
			if tc.prepare != nil {
				if err := tc.prepare(opts.DataDir); err != nil {
					t.Fatal(err)
				}
			}
			before := names(t, opts.DataDir)
			_, err := Run(context.Background(), &memSource{data: tc.serve}, opts)
			if !errors.Is(err, tc.want) {
				t.Errorf("%s, appendonly=%v: %v, want %v", name, appendOnly, err, tc.want)
			}
			if after := names(t, opts.DataDir); !slices.Equal(before, after) {
				t.Errorf("%s, appendonly=%v: data dir %v, then %v", name, appendOnly, before, after)
			}
		}
	}
}
