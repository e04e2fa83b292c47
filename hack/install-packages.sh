#!/usr/bin/env bash
# Installs the Debian packages the tests and the sandbox run, when they are missing: real
# redis-server/redis-sentinel/redis-cli processes, the ip tool (pod networking), nsenter,
# nft (kube-proxy's nftables rules in the sandbox's node namespace), openssl, and the tools
# client pods' scripts use (nslookup/dig, nc; curl and getent come with the base system),
# the Redis exporter the sandbox runs for exporter images (prometheus-redis-exporter), Prometheus
# (promtool tests the alert rules; make sandbox MONITORING=1 runs prometheus), and gcc with the
# C library headers for cgo, which `go test -race` needs.
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
)
missing=()
for command in "${!wanted[@]}"; do
	# A command may need several packages: the list splits on spaces.
	# shellcheck disable=SC2206
	command -v "$command" >/dev/null 2>&1 || missing+=(${wanted[$command]})
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "missing packages: ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo ">> installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages start system services; the tests start their own processes instead.
for service in redis-server redis-sentinel prometheus-redis-exporter prometheus; do
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now "$service" >/dev/null 2>&1 || true; fi
	service "$service" stop >/dev/null 2>&1 || true
done
