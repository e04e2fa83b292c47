package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// rootStamp is the file hack/build-server-roots.sh writes last into a root it built: a root
// without it is unfinished.
const rootStamp = ".rediskube-root"

// serverSource is where an image's server programs and file system come from.
type serverSource struct {
	// root names a root file system under Table.Roots ("trixie"); empty is the host's.
	root string
	// version is the server's version there, for messages.
	version string
}

var hostServer = serverSource{}

// patches are the first and last patch release of a release line that the registry has.
type patches struct{ first, last int }

// family is an official image repository: the releases its registry has tags for and which
// server the sandbox runs for each.
type family struct {
	path   string
	server string
	// releases are the registry's release lines ("7.0") with their patch releases, as of
	// this table's writing: a newer release needs a line here.
	releases map[string]patches
	// servers maps a release line ("8.1"), else its major ("8"), to what runs it.
	servers map[string]serverSource
	// floating is the release line latest, no tag and a variant alone (alpine) run.
	floating string
}

var (
	trixieRedis  = serverSource{root: "trixie", version: "8.0.2"}
	trixieValkey = serverSource{root: "trixie", version: "8.1.1"}
)

// redisReleases is the official redis image. Its 6.x and 7.x tags run the host's Redis 7.0
// (Debian 12 has no other), as the sandbox always ran them; 8.x runs Redis 8.0.2.
var redisReleases = family{
	path:   "redis",
	server: "redis",
	releases: map[string]patches{
		"2.6": {0, 17}, "2.8": {0, 23}, "3.0": {0, 7}, "3.2": {0, 12}, "4.0": {0, 14}, "5.0": {0, 14},
		"6.0": {0, 20}, "6.2": {0, 20}, "7.0": {0, 15}, "7.2": {0, 11}, "7.4": {0, 6}, "8.0": {0, 4}, "8.2": {0, 2},
	},
	servers: map[string]serverSource{
		"6": {version: "7.0"}, "7": {version: "7.0"}, "8": trixieRedis,
	},
	floating: "8.2",
}

// valkeyReleases is valkey/valkey. Its 7.2 and 8.0 tags run the host's Valkey 8.0
// (bookworm-backports), as the sandbox always ran them; 8.1 runs Valkey 8.1.1.
var valkeyReleases = family{
	path:   "valkey/valkey",
	server: "valkey",
	releases: map[string]patches{
		"7.2": {4, 11}, "8.0": {0, 6}, "8.1": {0, 4}, "9.0": {0, 0},
	},
	servers: map[string]serverSource{
		"7.2": {version: "8.0"}, "8.0": {version: "8.0"}, "8.1": trixieValkey,
	},
	// The registry's latest is a 9.x, which the sandbox has no server for: its newest
	// Valkey runs instead.
	floating: "8.1",
}

// variant is the suffix of a tag that names the image's base (-alpine, -alpine3.21,
// -bookworm): the server is the same.
var variant = regexp.MustCompile(`^(alpine(3\.[0-9]+)?|bookworm|bullseye|buster|trixie)$`)

var version = regexp.MustCompile(`^([0-9]+)(\.([0-9]+)(\.([0-9]+))?)?$`)

// lineOf returns the release line a tag names ("8.0.2" -> "8.0", "8" -> the newest 8.x)
// and whether the registry has that tag at all.
func (f family) lineOf(tag string) (string, bool) {
	if tag == "" || tag == "latest" || variant.MatchString(tag) {
		return f.floating, true
	}
	ver, suffix, _ := strings.Cut(tag, "-")
	if suffix != "" && !variant.MatchString(suffix) {
		return "", false
	}
	m := version.FindStringSubmatch(ver)
	if m == nil {
		return "", false
	}
	if m[2] == "" {
		// A major alone floats to its newest line.
		var lines []string
		for l := range f.releases {
			if major, _, _ := strings.Cut(l, "."); major == m[1] {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return "", false
		}
		sort.Slice(lines, func(i, j int) bool { return lessLine(lines[i], lines[j]) })
		return lines[len(lines)-1], true
	}
	line := m[1] + "." + m[3]
	p, ok := f.releases[line]
	if !ok {
		return "", false
	}
	if m[5] != "" {
		n, err := strconv.Atoi(m[5])
		if err != nil || n < p.first || n > p.last {
			return "", false
		}
	}
	return line, true
}

func lessLine(a, b string) bool {
	am, an, _ := strings.Cut(a, ".")
	bm, bn, _ := strings.Cut(b, ".")
	ai, _ := strconv.Atoi(am)
	bi, _ := strconv.Atoi(bm)
	if ai != bi {
		return ai < bi
	}
	ani, _ := strconv.Atoi(an)
	bni, _ := strconv.Atoi(bn)
	return ani < bni
}

// serverFor is what runs a release line, if the sandbox has a server for it.
func (f family) serverFor(line string) (serverSource, bool) {
	if s, ok := f.servers[line]; ok {
		return s, true
	}
	major, _, _ := strings.Cut(line, ".")
	s, ok := f.servers[major]
	return s, ok
}

// idOf is the image ID of the family's image that runs from s: the host's keep the ID they
// always had, one per repository.
func (f family) idOf(s serverSource) string {
	if s.root == "" {
		return imageID(f.path)
	}
	sum := sha256.Sum256([]byte(f.path + " " + s.root))
	return "sandbox.invalid/" + f.path + "@sha256:" + hex.EncodeToString(sum[:])
}

// splitRef returns ref's tag and digest (either may be empty).
func splitRef(ref string) (tag, digest string) {
	r, digest, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(r, ":"); i >= 0 && !strings.Contains(r[i:], "/") {
		tag = r[i+1:]
	}
	return tag, digest
}

// manifestUnknown is what a registry answers for a tag or digest it does not have.
func manifestUnknown(ref, path, name string) *NotFoundError {
	return &NotFoundError{Ref: ref, Reason: fmt.Sprintf("manifest for %s%s not found: manifest unknown: manifest unknown", path, name)}
}

// official resolves an official redis or valkey/valkey reference by its tag or digest.
func (t Table) official(img *Image, ref string, f family) error {
	tag, digest := splitRef(ref)
	var src serverSource
	if digest != "" {
		// Only the digests the sandbox reports in container statuses exist.
		found := false
		for _, s := range f.servers {
			if strings.HasSuffix(f.idOf(s), "@"+digest) {
				src, found = s, true
				break
			}
		}
		if !found {
			return manifestUnknown(ref, f.path, "@"+digest)
		}
	} else {
		line, ok := f.lineOf(tag)
		if !ok {
			return manifestUnknown(ref, f.path, ":"+tag)
		}
		s, ok := f.serverFor(line)
		if !ok {
			return fmt.Errorf("the sandbox has no %s server for release %s (it runs %s)", f.server, line, f.known())
		}
		src = s
	}
	if err := t.dockerLibrary(img, f.server, src); err != nil {
		return err
	}
	img.ID = f.idOf(src)
	return nil
}

// known lists the release lines the family's servers run, for messages.
func (f family) known() string {
	var out []string
	for l := range f.releases {
		if s, ok := f.serverFor(l); ok {
			out = append(out, fmt.Sprintf("%s (%s %s)", l, f.server, s.version))
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessLine(strings.Fields(out[i])[0], strings.Fields(out[j])[0]) })
	return strings.Join(out, ", ")
}
