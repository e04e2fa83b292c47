#!/usr/bin/env bash
# Builds the root file systems the sandbox runs newer server images from (test/sandbox/images):
# Debian trixie with redis-server 8.0 and valkey-server 8.1 and their sentinels and CLIs. This
# Debian 12 machine cannot install trixie's servers beside its own libraries, so they live in a
# private minbase root, and the sandbox makes that root a container's file system, as a real
# image is. About 70 s and 150 MB once (most of it downloading); bin/ is git-ignored and caches
# it, and a stamp file naming what went in makes every later run return at once.
#
# Usage: hack/build-server-roots.sh [ROOTS_DIR]   (default: bin/roots; the root is ROOTS_DIR/trixie)
set -euo pipefail

roots_dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/bin/roots}
suite=trixie
packages=(redis-server redis-sentinel redis-tools valkey-server valkey-sentinel valkey-tools)
root=$roots_dir/$suite
stamp=$root/.rediskube-root
# Changing the suite, the packages or this number builds the root anew.
want="suite=$suite packages=${packages[*]} layout=1"
if [[ -f $stamp && $(<"$stamp") == "$want" ]]; then
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "building $root needs root (debootstrap, chroot): run as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! command -v debootstrap >/dev/null 2>&1; then
	echo ">> installing debootstrap" >&2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# The Debian mirror this machine's apt already uses (the first URI of a plain Debian suite),
# so that the root comes from wherever the machine is allowed to fetch packages.
debian_mirror() {
	local file
	for file in /etc/apt/sources.list.d/*.sources; do
		[[ -f $file ]] || continue
		# deb822: a stanza whose Suites name a release other than -security.
		awk '
			/^[[:space:]]*#/ { next }
			/^[[:space:]]*$/ { if (uri != "" && suite) { print uri; exit } uri = ""; suite = 0; next }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i !~ /-security$/ && $i != "nodistro") suite = 1 }
			END { if (uri != "" && suite) print uri }
		' "$file" | grep -m1 '/debian/\?$' && return 0
	done
	for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $file ]] || continue
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { if ($(i+1) !~ /-security$/) print $i; break } }' "$file" |
			grep -m1 '/debian/\?$' && return 0
	done
	return 1
}
mirror=$(debian_mirror) || {
	echo "no Debian mirror found in /etc/apt/sources.list or /etc/apt/sources.list.d" >&2
	exit 1
}

mkdir -p "$roots_dir"
work=$root.partial
# A root of an earlier, interrupted run may still have /proc mounted: never delete through it.
cleanup() {
	if mountpoint -q "$work/proc"; then umount "$work/proc"; fi
}
trap cleanup EXIT
cleanup
rm -rf --one-file-system "$work"

start=$SECONDS
echo ">> debootstrap --variant=minbase $suite into $work" >&2
debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
	"$suite" "$work" "$mirror" >"$roots_dir/$suite.debootstrap.log" 2>&1 || {
	tail -n 20 "$roots_dir/$suite.debootstrap.log" >&2
	exit 1
}
# The packages' maintainer scripts would start their servers: the sandbox starts its own.
printf '%s\n' '#!/bin/sh' 'exit 101' >"$work/usr/sbin/policy-rc.d"
chmod 0755 "$work/usr/sbin/policy-rc.d"
mount -t proc proc "$work/proc"
echo ">> installing ${packages[*]} into $work" >&2
chroot "$work" apt-get update -qq
chroot "$work" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
chroot "$work" apt-get clean
umount "$work/proc"
# The package lists are only for installing; the containers never run apt.
rm -rf "${work:?}"/var/lib/apt/lists/* "$work"/var/cache/apt/*.bin
printf '%s\n' "$want" >"$work/.rediskube-root"

rm -rf --one-file-system "$root"
mv "$work" "$root"
echo ">> $root ready in $((SECONDS - start)) s, $(du -sh --one-file-system "$root" | cut -f1)" >&2
