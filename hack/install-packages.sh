#!/usr/bin/env bash
# Installs the Debian packages the tests and the sandbox run, when they are missing: real
# redis-server/redis-sentinel/redis-cli processes, the ip tool (pod networking), nsenter,
# nft (kube-proxy's nftables rules in the sandbox's node namespace), openssl, and the tools
# client pods' scripts use (nslookup/dig, nc; curl and getent come with the base system),
# the Redis exporter the sandbox runs for exporter images (prometheus-redis-exporter), Prometheus
# (promtool tests the alert rules; make sandbox MONITORING=1 runs prometheus), and gcc with the
# C library headers for cgo, which `go test -race` needs; shellcheck, which make verify runs on
# the repository's shell scripts; debootstrap, with which hack/build-server-roots.sh builds the
# trixie root that runs Redis 8 and Valkey 8.1 images; busybox, whose sh (alpine's, the opstree
# images') the builder's tests run the cluster start script under; and Valkey 8 from Debian's
# bookworm-backports (valkey-server, valkey-cli), which the sandbox runs for valkey/valkey 8.0 images.
set -euo pipefail

declare -A wanted=(
	[redis-server]=redis-server
	[redis-cli]=redis-tools
	[redis-sentinel]=redis-sentinel
	[ip]=iproute2
	[nsenter]=util-linux
	[nft]=nftables
	[openssl]=openssl
	[nslookup]=dnsutils
	[nc]=netcat-openbsd
	[curl]=curl
	[prometheus-redis-exporter]=prometheus-redis-exporter
	[promtool]=prometheus
	[gcc]="gcc libc6-dev"
	[shellcheck]=shellcheck
	[debootstrap]=debootstrap
	[busybox]=busybox
)
missing=()
for command in "${!wanted[@]}"; do
	# A command may need several packages: the list splits on spaces.
	# shellcheck disable=SC2206
	command -v "$command" >/dev/null 2>&1 || missing+=(${wanted[$command]})
done
# Valkey 8 (valkey/valkey images run it in the sandbox) comes from bookworm-backports.
valkey_missing=false
command -v valkey-server >/dev/null 2>&1 && command -v valkey-cli >/dev/null 2>&1 || valkey_missing=true
[[ ${#missing[@]} -eq 0 && $valkey_missing == false ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "missing packages: ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [[ $valkey_missing == true ]]; then
	# shellcheck source=/dev/null # the system's file, not the repository's
	. /etc/os-release
	backports=/etc/apt/sources.list.d/${VERSION_CODENAME}-backports.sources
	if [[ $VERSION_CODENAME == bookworm ]] && ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
		printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" "Components: main" \
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$backports"
	fi
fi
if [[ ${#missing[@]} -gt 0 ]]; then
	echo ">> installing ${missing[*]}" >&2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [[ $valkey_missing == true ]]; then
	echo ">> installing valkey-server valkey-tools (bookworm-backports)" >&2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends -t bookworm-backports valkey-server valkey-tools >/dev/null
fi
# The packages start system services; the tests start their own processes instead.
for service in redis-server redis-sentinel valkey-server prometheus-redis-exporter prometheus; do
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now "$service" >/dev/null 2>&1 || true; fi
	service "$service" stop >/dev/null 2>&1 || true
done
