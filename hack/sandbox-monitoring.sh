#!/usr/bin/env bash
# Starts (start) or stops (stop) a Prometheus (Debian's prometheus package, which make
# packages installs) that scrapes the sandbox's operator and every Redis exporter sidecar,
# found through the sandbox's API server, and evaluates config/prometheus/alerts.rules.yaml. `make sandbox MONITORING=1` runs start.
#   SANDBOX_DIR   the sandbox's directory (its kubeconfig; Prometheus keeps its data there)
#   PROMETHEUS_ADDR  where Prometheus listens (default 127.0.0.1:9090)
set -euo pipefail

dir=${SANDBOX_DIR:?SANDBOX_DIR is the sandbox directory}
addr=${PROMETHEUS_ADDR:-127.0.0.1:9090}
root=$(cd "$(dirname "$0")/.." && pwd)
data="$dir/prometheus"
pidfile="$data/prometheus.pid"

stop() {
	if [[ -f $data/discovery.pid ]]; then
		kill "$(cat "$data/discovery.pid")" 2>/dev/null || true
		rm -f "$data/discovery.pid"
	fi
	if [[ -f $pidfile ]]; then
		pid=$(cat "$pidfile")
		if kill "$pid" 2>/dev/null; then
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
		rm -f "$pidfile"
	fi
}

case ${1:-start} in
stop)
	stop
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac

command -v prometheus >/dev/null || { echo "prometheus is not installed: run make packages" >&2; exit 1; }
[[ -f $dir/kubeconfig ]] || { echo "no sandbox in $dir: run make sandbox first" >&2; exit 1; }
stop
mkdir -p "$data"
# Debian's Prometheus is built without Kubernetes service discovery, so a loop here lists the
# pods through the sandbox's API server every 10 s into file_sd target files: the operator's
# pods (label app.kubernetes.io/name=redis-operator, port "metrics") and every container port
# named "redis-exporter". Each target is labelled with its namespace, pod and container; the
# operator's own series carry the namespace and name of the resource they describe, which
# honor_labels keeps.
kubectl="$root/bin/kubectl --kubeconfig $dir/kubeconfig"
# The operator serves /metrics over HTTPS to callers the API server authenticates and allows
# to get /metrics: Prometheus scrapes with the token of a ServiceAccount bound to the
# ClusterRole redis-operator-metrics-reader (config/rbac, or the chart's), renewed hourly.
$kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: sandbox-prometheus, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sandbox-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: redis-operator-metrics-reader}
subjects: [{kind: ServiceAccount, name: sandbox-prometheus, namespace: default}]
YAML
token() {
	$kubectl create token sandbox-prometheus -n default --duration=2h >"$data/token.tmp" && mv "$data/token.tmp" "$data/token"
}
token
targets() { # PORT-NAME [SELECTOR]
	# shellcheck disable=SC2016 # a Go template, not shell
	$kubectl get pods -A ${2:+-l "$2"} -o go-template='{{range .items}}{{$ns := .metadata.namespace}}{{$pod := .metadata.name}}{{$ip := .status.podIP}}{{if $ip}}{{range .spec.containers}}{{$c := .name}}{{range .ports}}{{if eq .name "'"$1"'"}}- targets: ["{{$ip}}:{{.containerPort}}"]
  labels: {namespace: "{{$ns}}", pod: "{{$pod}}", container: "{{$c}}"}
{{end}}{{end}}{{end}}{{end}}{{end}}'
}
discover() {
	set +e # a failed listing is retried at the next round
	rounds=0
	while [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; do
		rounds=$((rounds + 1))
		if ((rounds % 360 == 0)); then token; fi
		for job in operator exporter; do
			if [[ $job == operator ]]; then list=$(targets metrics app.kubernetes.io/name=redis-operator); else list=$(targets redis-exporter); fi
			# Written whole, then renamed: Prometheus never reads half a file.
			printf '# %s targets, written by hack/sandbox-monitoring.sh\n%s\n' "$job" "$list" >"$data/$job.yaml.tmp" &&
				mv "$data/$job.yaml.tmp" "$data/$job.yaml"
		done
		sleep 10
	done
}
cat >"$data/prometheus.yml" <<YAML
global:
  scrape_interval: 10s
  evaluation_interval: 10s
rule_files:
  - $root/config/prometheus/alerts.rules.yaml
scrape_configs:
  - job_name: redis-operator
    honor_labels: true
    scheme: https
    tls_config:
      insecure_skip_verify: true # the operator's self-signed certificate
    authorization:
      credentials_file: $data/token
    file_sd_configs:
      - files: [$data/operator.yaml]
        refresh_interval: 10s
  - job_name: redis-exporter
    file_sd_configs:
      - files: [$data/exporter.yaml]
        refresh_interval: 10s
YAML
promtool check config "$data/prometheus.yml" >/dev/null
nohup prometheus --config.file="$data/prometheus.yml" --storage.tsdb.path="$data/tsdb" \
	--web.listen-address="$addr" >"$data/prometheus.log" 2>&1 &
echo $! >"$pidfile"
discover >"$data/discovery.log" 2>&1 &
echo $! >"$data/discovery.pid"
for _ in $(seq 100); do
	if curl -fsS "http://$addr/-/ready" >/dev/null 2>&1; then
		echo "Prometheus: http://$addr (targets: http://$addr/targets, alerts: http://$addr/alerts); log $data/prometheus.log"
		exit 0
	fi
	kill -0 "$(cat "$pidfile")" 2>/dev/null || break
	sleep 0.2
done
echo "Prometheus did not become ready; its log:" >&2
tail -20 "$data/prometheus.log" >&2
stop
exit 1
