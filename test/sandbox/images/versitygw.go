package images

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// VersitygwVersion is the versitygw release the sandbox runs for versity/versitygw: the one
// the Makefile builds into bin/ (VERSITYGW_VERSION, `make versitygw`), the S3 server of the
// backup tests.
const VersitygwVersion = "v1.8.0"

// versitygwPath is the repository of versitygw's published image.
const versitygwPath = "versity/versitygw"

// versitygwRelease is a tag of a versitygw release: the project tags its images as its Git
// releases, with the v.
var versitygwRelease = regexp.MustCompile(`^v([0-9]+)\.([0-9]+)\.([0-9]+)$`)

// VersitygwBinary is the file the versitygw image runs.
func (t Table) VersitygwBinary() string {
	return filepath.Join(t.BinDir, "versitygw-"+VersitygwVersion)
}

// versitygw is versity/versitygw: Alpine with the gateway at /usr/local/bin/versitygw, root
// (the image sets no USER), no CMD, and an entrypoint script that runs the gateway with the
// container's arguments, or without any from its VGW_BACKEND* and VGW_ARGS variables.
//
// Tags resolve as the registry would: VersitygwVersion, latest and no tag run the binary the
// Makefile builds (latest stands for the newest release the sandbox has); an older release is
// refused because the sandbox has no build of it, and a newer or malformed tag, or a digest
// other than the one the sandbox reports, as "manifest unknown".
func (t Table) versitygw(img *Image, ref string) error {
	tag, digest := splitRef(ref)
	switch {
	case digest != "":
		if !strings.HasSuffix(img.ID, "@"+digest) {
			return manifestUnknown(ref, versitygwPath, "@"+digest)
		}
	case tag == "" || tag == "latest" || tag == VersitygwVersion:
	case versitygwRelease.MatchString(tag) && !newerRelease(tag, VersitygwVersion):
		return fmt.Errorf("the sandbox has no versitygw %s: it runs %s only (the Makefile's VERSITYGW_VERSION)", tag, VersitygwVersion)
	default:
		return manifestUnknown(ref, versitygwPath, ":"+tag)
	}
	bin := t.VersitygwBinary()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the versitygw binary %s is not built (run `make versitygw`)", bin)
	}
	img.Kind = ObjectStore
	img.Entrypoint = []string{versitygwEntrypoint}
	img.Binds = []Bind{{Source: bin, Target: "/usr/local/bin/versitygw"}}
	img.Lacks = hostServerBinaries
	// The image makes its IAM and setup folder at build time, as root.
	img.Dirs = []Dir{{Path: "/tmp/vgw", Mode: 0o755}}
	img.Files = []File{placeholder(versitygwEntrypoint)}
	img.Behaviour = Versitygw
	return nil
}

const versitygwEntrypoint = "/usr/local/bin/docker-entrypoint.sh"

// newerRelease reports whether release tag a ("v1.9.0") is newer than b.
func newerRelease(a, b string) bool {
	am, bm := versitygwRelease.FindStringSubmatch(a), versitygwRelease.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(am[i])
		y, _ := strconv.Atoi(bm[i])
		if x != y {
			return x > y
		}
	}
	return false
}
