#!/usr/bin/env bash
# Installs the Debian packages the sandbox needs, only those that are missing: redis-server,
# redis-tools and redis-sentinel (what Redis images run), iproute2 (pod networking) and
# util-linux (nsenter, for kubectl exec and exec probes). Needs root.
set -euo pipefail

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
if [[ ${#need[@]} -eq 0 ]]; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "the sandbox needs root (network and mount namespaces); missing packages: ${need[*]}" >&2
	exit 1
fi
echo ">> installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The packages start system-wide Redis services; the sandbox runs its own processes.
for svc in redis-server redis-sentinel; do
	if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
		systemctl disable --now "$svc" >/dev/null 2>&1 || true
	elif [[ -x /etc/init.d/$svc ]]; then
		/etc/init.d/"$svc" stop >/dev/null 2>&1 || true
	fi
done
