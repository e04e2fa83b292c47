#!/usr/bin/env bash
# Builds bin/chainsaw, the Kubernetes e2e test tool, from its Go module at the pinned version.
# Its test runner implements the interface testing.MainStart takes, which Go 1.25 extended
# with ModulePath; `go install github.com/kyverno/chainsaw@v0.2.12` therefore fails with
# the Go of this repository. We build the unmodified module from a temporary copy with one
# added file that supplies the missing method. Skipped when the pinned version is built.
set -euo pipefail

version=v0.2.12
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
stamp="$bin/.chainsaw.version"
if [[ -x "$bin/chainsaw" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
	exit 0
fi
mkdir -p "$bin"
echo ">> building chainsaw $version" >&2
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cd "$work"
GOFLAGS=-mod=mod go mod download "github.com/kyverno/chainsaw@$version"
src="$(go env GOMODCACHE)/github.com/kyverno/chainsaw@$version"
cp -r "$src" "$work/chainsaw"
chmod -R u+w "$work/chainsaw"
cat >"$work/chainsaw/pkg/runner/internal/modulepath.go" <<'GO'
package internal

// ModulePath completes the testDeps interface of Go 1.25 and later.
func (*TestDeps) ModulePath() string { return "" }
GO
cd "$work/chainsaw"
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
	-ldflags "-s -w -X github.com/kyverno/chainsaw/pkg/version.BuildVersion=$version" \
	-o "$bin/chainsaw.tmp" .
mv "$bin/chainsaw.tmp" "$bin/chainsaw"
echo "$version" >"$stamp"
