package network

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func testTable(t *testing.T, others *bool) neighTable {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]int{"gc_thresh1": 128, "gc_thresh2": 512, "gc_thresh3": 40000} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(v)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return neighTable{sysctlDir: dir, saved: filepath.Join(dir, "saved"), lock: filepath.Join(dir, "lock"),
		running: func(int) bool { return *others }}
}

func limits(t *testing.T, n neighTable) string {
	t.Helper()
	v, err := n.read()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(format(v))
}

func TestNeighLimitsRaisedByEachAndRestoredByTheLast(t *testing.T) {
	others := false
	n := testTable(t, &others)
	found := limits(t, n)

	// Two sandboxes start; a limit already higher than needed is kept.
	for range 2 {
		if err := n.raise(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := limits(t, n), "gc_thresh1 4096\ngc_thresh2 16384\ngc_thresh3 40000"; got != want {
		t.Fatalf("raised limits:\n%s\nwant\n%s", got, want)
	}
	// The first stops while the other runs: nothing changes.
	others = true
	if err := n.restore(1); err != nil {
		t.Fatal(err)
	}
	if got := limits(t, n); !strings.Contains(got, "gc_thresh1 4096") {
		t.Fatalf("limits put back while a sandbox runs: %s", got)
	}
	// The last stops: the values found come back, and a second stop changes nothing.
	others = false
	for range 2 {
		if err := n.restore(2); err != nil {
			t.Fatal(err)
		}
	}
	if got := limits(t, n); got != found {
		t.Errorf("limits after the last sandbox stopped:\n%s\nwant\n%s", got, found)
	}
	if _, err := os.Stat(n.saved); !os.IsNotExist(err) {
		t.Errorf("the kept values outlive the last sandbox: %v", err)
	}
}
