package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const changelog = `# Changelog

Intro.

## [Unreleased]

- Not yet.

## [1.2.3] - 2026-12-01

### Added

- One thing.

## [1.2.30] - 2026-11-01

- Another.

## [1.2.0]

`

func TestReleaseNotes(t *testing.T) {
	notes, err := ReleaseNotes(changelog, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# redis-operator 1.2.3\n\n### Added\n\n- One thing.\n"; notes != want {
		t.Errorf("notes = %q, want %q", notes, want)
	}
	for _, tc := range []struct{ version, errWant string }{
		{"1.2.4", `no section "## [1.2.4]"`},
		{"1.2", `no section "## [1.2]"`},
		{"1.2.0", "is empty"},
		{"Unreleased", "not a release"},
	} {
		if _, err := ReleaseNotes(changelog, tc.version); err == nil || !strings.Contains(err.Error(), tc.errWant) {
			t.Errorf("%s: error %v, want one with %q", tc.version, err, tc.errWant)
		}
	}
}

// TestImageIsReproducible: the same inputs give the same index digest, whatever the clock or
// the files' times on disk; another time stamp gives another digest.
func TestImageIsReproducible(t *testing.T) {
	dir := t.TempDir()
	spec := func(tm time.Time) ImageSpec {
		bins := map[Platform]string{}
		for _, p := range ImagePlatforms {
			path := filepath.Join(dir, p.Arch)
			if err := os.WriteFile(path, []byte("binary for "+p.Arch), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, time.Now(), time.Now()); err != nil {
				t.Fatal(err)
			}
			bins[p] = path
		}
		return ImageSpec{Binaries: bins, CACertificates: []byte("ca"), Labels: map[string]string{"a": "b"}, Time: tm}
	}
	digest := func(s ImageSpec) string {
		idx, err := Image(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	at := time.Unix(1_700_000_000, 0).UTC()
	first := digest(spec(at))
	if second := digest(spec(at)); second != first {
		t.Errorf("two builds differ: %s, %s", first, second)
	}
	if later := digest(spec(at.Add(time.Second))); later == first {
		t.Errorf("another time stamp gave the same digest %s", first)
	}
}

func TestBuildRefusesBadInputs(t *testing.T) {
	cl := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(cl, []byte("## [1.0.0]\n\n- A release.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		o       Options
		errWant string
	}{
		{"leading v", Options{Version: "v1.0.0", Commit: "0123456"}, "no leading v"},
		{"no commit", Options{Version: "1.0.0"}, "commit"},
		{"no changelog section", Options{Version: "9.9.9", Commit: "0123456", Root: "../.."}, `no section "## [9.9.9]"`},
		// Before anything is built.
		{"no cyclonedx-gomod", Options{Version: "1.0.0", Commit: "0123456", Root: "../..", Changelog: cl, Repository: DefaultRepository}, "no cyclonedx-gomod binary"},
		{"missing cyclonedx-gomod", Options{Version: "1.0.0", Commit: "0123456", Root: "../..", Changelog: cl, Repository: DefaultRepository, CycloneDXGomod: "/nonexistent/cyclonedx-gomod"}, "/nonexistent/cyclonedx-gomod"},
	} {
		if err := Build(t.Context(), tc.o); err == nil || !strings.Contains(err.Error(), tc.errWant) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.errWant)
		}
	}
}

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		in            string
		image, plugin string // fmt.Sprint of the lists
		errWant       string // "" for none
	}{
		{in: "", image: "[]", plugin: "[]"},
		{in: "all", image: "[]", plugin: "[]"},
		{in: "linux/amd64", image: "[linux/amd64]", plugin: "[linux/amd64]"},
		// The lists keep the release's order, whatever the flag's.
		{in: "darwin/arm64, linux/arm64,linux/amd64", image: "[linux/amd64 linux/arm64]", plugin: "[linux/amd64 linux/arm64 darwin/arm64]"},
		{in: "linux/arm64,darwin/amd64", image: "[linux/arm64]", plugin: "[linux/arm64 darwin/amd64]"},
		{in: "darwin/arm64", errWant: "no platform of the operator image"},
		{in: "windows/amd64", errWant: "none of the release's platforms"},
		{in: "linux", errWant: "not os/arch"},
		{in: "linux/amd64/v2", errWant: "not os/arch"},
		{in: "linux/amd64,", errWant: "not os/arch"},
		{in: "linux/amd64,linux/amd64", errWant: "named twice"},
	} {
		image, plugin, err := ParsePlatforms(tc.in)
		if tc.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errWant) {
				t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.errWant)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if fmt.Sprint(image) != tc.image || fmt.Sprint(plugin) != tc.plugin {
			t.Errorf("%q: image %v plugin %v, want %s and %s", tc.in, image, plugin, tc.image, tc.plugin)
		}
	}
}

// The flag reaches the options: nil lists (every platform) by default, the named ones with
// -platforms; stray arguments (a space instead of a comma) are refused, not ignored.
func TestParseFlagsPlatforms(t *testing.T) {
	base := []string{"-version", "1.0.0", "-commit", "0123456", "-source-date-epoch", "1700000000"}
	o, err := parseFlags(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if o.operatorPlatforms != nil || o.pluginPlatforms != nil {
		t.Errorf("default: %v %v, want nil (every platform)", o.operatorPlatforms, o.pluginPlatforms)
	}
	if got := fmt.Sprint(orDefault(o.operatorPlatforms, ImagePlatforms), orDefault(o.pluginPlatforms, PluginPlatforms)); got != "[linux/amd64 linux/arm64] [linux/amd64 linux/arm64 darwin/amd64 darwin/arm64]" {
		t.Errorf("default builds %s", got)
	}
	o, err = parseFlags(t.Context(), append(base, "-platforms", "linux/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.operatorPlatforms, o.pluginPlatforms) != "[linux/arm64] [linux/arm64]" {
		t.Errorf("-platforms linux/arm64: %v %v", o.operatorPlatforms, o.pluginPlatforms)
	}
	if _, err := parseFlags(t.Context(), append(base, "-platforms", "darwin/amd64")); err == nil {
		t.Error("-platforms darwin/amd64 (no image platform) accepted")
	}
	if _, err := parseFlags(t.Context(), append(base, "-platforms", "linux/amd64", "linux/arm64")); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("a stray argument: error %v", err)
	}
}
