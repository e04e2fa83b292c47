// Package version holds the version and commit the operator and the kubectl plugin were built
// from. The release build sets both with -ldflags -X (hack/release); a plain go build leaves the
// defaults, so that a binary that says "dev" is known not to be a release.
package version

import "fmt"

// Version and Commit are variables, not constants, because the linker can only set variables.
var (
	// Version is the release version without a leading v, e.g. 1.2.3.
	Version = "dev"
	// Commit is the full git commit hash the binary was built from.
	Commit = "unknown"
)

// String is the one line both binaries print for their version.
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s)", program, Version, Commit)
}
