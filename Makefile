# Every tool the targets need is installed by them: Go tools through `go install` at a pinned
# version into bin/, Debian packages through apt-get when missing. bin/ is git-ignored and
# doubles as the cache of built binaries (the control plane takes ~15 min to build cold).

SHELL := /usr/bin/env bash -o pipefail
ROOT := $(shell pwd)
BIN := $(ROOT)/bin
# The test module (test/go.mod): the sandbox, its command and every test that needs it, kept
# apart so that the operator's module carries none of the sandbox's dependencies.
TEST_MODULE := $(ROOT)/test
export PATH := $(BIN):$(PATH)

CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION := v2.15.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# kube-api-linter (sigs.k8s.io/kube-api-linter) checks the API types against Kubernetes' API
# conventions. It runs as a golangci-lint plugin; `golangci-lint custom` would build that binary
# from a git clone of golangci-lint, so the module hack/tools/kube-api-linter builds it instead,
# from the Go module proxy: its go.mod pins golangci-lint and kube-api-linter, and the binary is
# named after the pinned kube-api-linter version.
KUBE_API_LINTER_MODULE := hack/tools/kube-api-linter
KUBE_API_LINTER_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kube-api-linter" { print $$2 }' $(KUBE_API_LINTER_MODULE)/go.mod)
KUBE_API_LINTER := $(BIN)/golangci-lint-kal-$(KUBE_API_LINTER_VERSION)

IMG ?= redis-operator:dev
# The version and commit linked into the binaries (internal/version); make release needs VERSION.
VERSION ?=
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/rediskube/redis-operator/internal/version
LDFLAGS := -X $(VERSION_PKG).Version=$(or $(VERSION),dev) -X $(VERSION_PKG).Commit=$(or $(COMMIT),unknown)
GO_TEST_FLAGS ?= -count=1

# Three test tiers (README, "Tests"):
#   unit         tests without build tag: no control plane, no redis-server, nothing in bin/.
#   integration  test files tagged `//go:build integration`: a real kube-apiserver and etcd from
#                bin/ (envtest), real redis-server/redis-cli/sh processes, bin/helm, promtool.
#   e2e          the test module's packages under e2e/: each starts a sandbox.
# A test that needs anything beyond Go goes in a file tagged integration (or under e2e/).
# Both tiers below run under the race detector, which needs cgo (gcc, from hack/install-packages.sh).
INTEGRATION_TAG := integration
# The packages of the module in the current directory with a test file tagged integration
# (a shell command for recipes: the files are looked up when the recipe runs).
INTEGRATION_PKGS = $$(for d in $$(go list -tags $(INTEGRATION_TAG) -f '{{.Dir}}' ./...); do \
	grep -qlx '//go:build $(INTEGRATION_TAG)' $$d/*_test.go 2>/dev/null && echo $$d; done)
# The test module's sandbox packages: every package under e2e/, new ones included.
E2E_PKGS := ./e2e/...
# The test module's packages outside e2e/ (the sandbox's own pieces, the CRD comparisons, ...).
TEST_MODULE_NON_E2E_PKGS = $$(go list ./... | grep -v '^github.com/rediskube/redis-operator/test/e2e\(/\|$$\)')
# Timeouts with headroom of at least twice the measured time (README, "Tests"); go test applies
# -timeout to each package's test binary, so E2E_TIMEOUT bounds each sandbox package.
UNIT_TIMEOUT ?= 5m
INTEGRATION_TIMEOUT ?= 30m
E2E_TIMEOUT ?= 40m
# Tests of one sandbox package that call t.Parallel run this many at a time. They spend their
# time waiting on Redis and Kubernetes: test/e2e/operator took 1,285 s at 3 on the idle 2-core
# machine, and 1,141 s at 4 with other builds and tests loading it (load average 12-17).
E2E_PARALLEL ?= 4

.PHONY: all
all: build

##@ Generation

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy functions for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from the Go types and kubebuilder markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=redis-operator paths="./internal/controller/...;./internal/webhook/..." output:rbac:artifacts:config=config/rbac
	$(MAKE) --no-print-directory chart-sync

# The operator chart ships the CRDs, the RBAC rules, the admission policy, the alerts and the
# dashboard of config/ as they are: copied here, checked by verify.
CHART_DIR := charts/redis-operator
.PHONY: chart-sync
chart-sync: ## Copy the generated CRDs, RBAC rules, admission policy, alerts and dashboard into the redis-operator chart.
	@mkdir -p $(CHART_DIR)/crds $(CHART_DIR)/files
	@rm -f $(CHART_DIR)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART_DIR)/crds/
	cp config/rbac/role.yaml $(CHART_DIR)/files/role.yaml
	cp config/policy/storage-never-shrinks.yaml $(CHART_DIR)/templates/storage-never-shrinks.yaml
	cp config/prometheus/alerts.rules.yaml $(CHART_DIR)/files/alerts.rules.yaml
	cp config/grafana/redis-operator-dashboard.json $(CHART_DIR)/files/redis-operator-dashboard.json
	@# config/prometheus ships the same rules as a PrometheusRule object.
	{ printf '%s\n' '# Written by make chart-sync from alerts.rules.yaml: edit that file.' 'apiVersion: monitoring.coreos.com/v1' \
		'kind: PrometheusRule' 'metadata:' '  name: redis-operator' '  labels:' '    app.kubernetes.io/name: redis-operator' 'spec:'; \
		sed -e 's/^./  &/' config/prometheus/alerts.rules.yaml; } > config/prometheus/prometheusrule.yaml

# The resource charts' values.schema.json, from one source of the properties they share.
.PHONY: chart-schemas
chart-schemas: ## Write the resource charts' values.schema.json from hack/chartschema.
	go run ./hack/chartschema -src hack/chartschema -charts charts

# The API reference, one Markdown file per version under api/, from the Go types.
.PHONY: docs
docs: ## Write the API reference (docs/api/<version>.md) from the Go types.
	@mkdir -p docs/api
	@for v in api/*/; do v=$$(basename $$v); go run ./hack/apidocs -api api/$$v -out docs/api/$$v.md || exit 1; done

# The shell scripts the targets and CI run; shellcheck comes from hack/install-packages.sh.
SHELL_SCRIPTS := hack/*.sh .ci/run
# The repository's modules: the operator's, the test module and the pinned control-plane tools.
GO_MODULES := . test hack/tools $(KUBE_API_LINTER_MODULE)

.PHONY: verify
verify: generate manifests docs chart-schemas ## Fail when generated files are not committed as generated, go.mod/go.sum are not tidy, or a shell script has a shellcheck finding.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$unformatted" || { echo "gofmt needed: $$unformatted"; exit 1; }
	@git diff --exit-code -- api config charts docs || { echo "generated files are out of date: run make generate manifests docs chart-schemas and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts docs)" || { git status --porcelain -- api config charts docs; echo "untracked generated files"; exit 1; }
	@for m in $(GO_MODULES); do (cd $$m && go mod tidy -diff) || { echo "go.mod/go.sum of $$m are not tidy: run go mod tidy there and commit"; exit 1; }; done
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: run make packages"; exit 1; }
	shellcheck $(SHELL_SCRIPTS)

##@ Build

.PHONY: build
build: ## Build the operator binary into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/redis-operator ./cmd/redis-operator

.PHONY: kubectl-redis
kubectl-redis: ## Build the kubectl plugin into bin/kubectl-redis (`kubectl redis status NAME`).
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-redis ./cmd/kubectl-redis

HELM_VERSION := v3.22.0
HELM := $(BIN)/helm
.PHONY: helm
helm: $(HELM) ## Build bin/helm (helm.sh/helm/v3 $(HELM_VERSION)), which installs and tests the charts in charts/.

$(HELM):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# The resource charts share their helpers through the library chart charts/redis-common, which
# Helm reads from each chart's charts/ directory (git-ignored): chart-deps packages it there,
# always anew so that an edit of the library is never rendered stale. Every target that installs
# or renders the charts from the tree (integration, e2e) runs it first.
KIND_CHARTS := redis redis-cluster redis-replication redis-sentinel
.PHONY: chart-deps
chart-deps: $(HELM) ## Package the redis-common library chart into the charts/ directory of each resource chart.
	@for c in $(KIND_CHARTS); do $(HELM) dependency build --skip-refresh charts/$$c >/dev/null || exit 1; done

KUSTOMIZE_VERSION := v5.8.1
KUSTOMIZE := $(BIN)/kustomize
$(KUSTOMIZE):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

# cyclonedx-gomod writes a release's CycloneDX SBOMs of the operator (hack/release): the Go
# modules linked into each image's binary, read from the binary's build information.
CYCLONEDX_GOMOD_VERSION := v1.10.0
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
$(CYCLONEDX_GOMOD):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(BIN)/cyclonedx-gomod $@

# versitygw (github.com/versity/versitygw, Apache-2.0), a maintained S3 gateway, is the real S3
# server of the backup tests (internal/s3test): its posix backend keeps each bucket in a folder
# of a temporary directory. The tests find it through VERSITYGW. The sandbox runs it for the
# image versity/versitygw (test/sandbox/images), so make sandbox and make e2e build it too.
VERSITYGW_VERSION := v1.8.0
VERSITYGW := $(BIN)/versitygw-$(VERSITYGW_VERSION)
$(VERSITYGW):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	mv $(BIN)/versitygw $@

.PHONY: versitygw
versitygw: $(VERSITYGW) ## Build bin/versitygw-$(VERSITYGW_VERSION), the S3 server of the backup tests.

# A release is built here, without a container engine or a registry (hack/release): the image
# as an OCI image layout, the charts, install.yaml, the plugin's archives and krew manifest,
# an SBOM of the operator binary per image platform, the release notes from CHANGELOG.md's section for VERSION, and
# SHA256SUMS over all of it.
DIST := $(ROOT)/dist
.PHONY: release
release: $(HELM) $(KUSTOMIZE) $(CYCLONEDX_GOMOD) chart-deps ## Build release VERSION=x.y.z into dist/ (README, "Releases").
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z"; exit 1; }
	@git diff --quiet HEAD || echo ">> uncommitted changes: dist/ says commit $(COMMIT) but holds them"
	rm -rf $(DIST)
	go run ./hack/release -version $(VERSION) -commit $(COMMIT) -root $(ROOT) -out $(DIST) -helm $(HELM) -kustomize $(KUSTOMIZE) \
		-cyclonedx-gomod $(CYCLONEDX_GOMOD)

# The release build's own test (hack/release, tagged release): it cross-builds the operator
# for linux/arm64 and the plugin for three more platforms, minutes on a cold build cache, so
# it has a target of its own rather than a place in make test's 30-minute budget.
.PHONY: release-test
# The tests find the versioned cyclonedx-gomod binary through CYCLONEDX_GOMOD.
release-test: $(HELM) $(KUSTOMIZE) $(CYCLONEDX_GOMOD) chart-deps ## Build a test release into a temporary folder and check every part of it.
	CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) go test $(GO_TEST_FLAGS) -tags release -timeout 40m ./hack/release/

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build -t $(IMG) .

##@ Test

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kube-proxy into bin/.
	hack/build-control-plane.sh

.PHONY: packages
packages: ## Install the Debian packages the tests and the sandbox need (redis-server, iproute2, nftables, ...).
	hack/install-packages.sh

# Redis 8 and Valkey 8.1 need a newer Debian than this machine's: the sandbox runs their images
# from a trixie root file system (about 70 s and 150 MB once, cached in bin/roots).
.PHONY: server-roots
server-roots: packages ## Build bin/roots/trixie (debootstrap), the root file system of the redis:8 and valkey/valkey:8.1 images.
	hack/build-server-roots.sh $(BIN)/roots

.PHONY: chainsaw
chainsaw: ## Build bin/chainsaw (kyverno/chainsaw v0.2.12), which runs the tests in test/chainsaw.
	hack/build-chainsaw.sh

.PHONY: vet
vet: ## Run go vet on the operator's module and on the test module (integration tests and benchmarks included).
	go vet -tags bench,$(INTEGRATION_TAG),release ./...
	cd $(TEST_MODULE) && go vet -tags bench,chaos,servers,$(INTEGRATION_TAG),release ./...

.PHONY: test
test: packages server-roots control-plane build kubectl-redis chainsaw helm chart-deps ## Run every test: vet, verify, lint, then the unit, integration and e2e tiers.
	$(MAKE) --no-print-directory vet
	$(MAKE) --no-print-directory verify
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory e2e

# No prerequisites: the unit tier needs Go and gcc only. KUBEBUILDER_ASSETS is unset so that
# nothing in it can lean on a control plane.
.PHONY: unit
unit: ## Run the unit tier: every test without build tag of both modules (e2e/ excepted), under the race detector.
	env -u KUBEBUILDER_ASSETS CGO_ENABLED=1 go test $(GO_TEST_FLAGS) -race -timeout $(UNIT_TIMEOUT) ./...
	cd $(TEST_MODULE) && env -u KUBEBUILDER_ASSETS CGO_ENABLED=1 go test $(GO_TEST_FLAGS) -race -timeout $(UNIT_TIMEOUT) $(TEST_MODULE_NON_E2E_PKGS)

# The controller package's integration tests (every kind against a real kube-apiserver and
# real redis-server processes, ~11 min on 2 cores under load) run without the race detector in
# `make test`, to keep the suite's time; INTEGRATION_RACE_CONTROLLER=1 runs them under it too.
CONTROLLER_PKG := $(ROOT)/internal/controller
INTEGRATION_RACE_CONTROLLER ?=
# The controller package's tests each run an operator of their own on a namespace and loopback
# addresses of their own, and spend their time waiting on Redis: this many run at once.
CONTROLLER_PARALLEL ?= 4
.PHONY: integration
integration: packages server-roots control-plane helm chart-deps $(VERSITYGW) ## Run the integration tier: the tests tagged integration (real kube-apiserver, real redis-server, real S3 server), under the race detector.
	KUBEBUILDER_ASSETS=$(BIN) VERSITYGW=$(VERSITYGW) CGO_ENABLED=1 go test $(GO_TEST_FLAGS) -race -tags $(INTEGRATION_TAG) -timeout $(INTEGRATION_TIMEOUT) \
		$$(echo $(INTEGRATION_PKGS) | tr ' ' '\n' | grep -vxF $(CONTROLLER_PKG))
	KUBEBUILDER_ASSETS=$(BIN) VERSITYGW=$(VERSITYGW) CGO_ENABLED=1 go test $(GO_TEST_FLAGS) $(if $(INTEGRATION_RACE_CONTROLLER),-race) -tags $(INTEGRATION_TAG) \
		-parallel $(CONTROLLER_PARALLEL) -timeout $(INTEGRATION_TIMEOUT) $(CONTROLLER_PKG)
	cd $(TEST_MODULE) && KUBEBUILDER_ASSETS=$(BIN) CGO_ENABLED=1 go test $(GO_TEST_FLAGS) -race -tags $(INTEGRATION_TAG) -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_PKGS)

# The sandbox slot the benchmark runs on: BENCH_SLOT=N (or SANDBOX_SLOT=N); empty takes the first free one.
# BENCH_PARTS=bootstrap,failures,... runs only those parts (see test/bench) into bench/results/partial.json.
BENCH_SLOT ?= $(if $(filter command line environment,$(origin SANDBOX_SLOT)),$(SANDBOX_SLOT),)
.PHONY: bench
bench: packages server-roots control-plane build ## Measure the operator on the sandbox; writes bench/results/latest.json.
	cd $(TEST_MODULE) && E2E_SANDBOX_SLOT=$(BENCH_SLOT) go test -tags bench -count=1 -timeout 30m -v -run TestBenchmark ./bench/

# The backup and restore benchmark (issue #22): no sandbox, a local redis-server, redis-cli and
# versitygw. BENCH_BACKUP_KEYS (1000000) values of 100 B, BENCH_BACKUP_ROUNDS (3) rounds of each side.
.PHONY: bench-backup
bench-backup: packages $(VERSITYGW) ## Measure backup throughput against redis-cli --rdb and restore against a plain load; writes bench/results/backup-latest.json.
	VERSITYGW=$(VERSITYGW) go test -tags bench -count=1 -timeout 30m -v -run TestBackupBenchmark ./internal/backup/bench/

# Hundreds of pods (QUIET_REDIS=100 standalone Redis, QUIET_CLUSTERS=20 clusters 3×(1+1)): run it on
# an otherwise idle machine. Adds "quiet_at_scale" to bench/results/latest.json.
.PHONY: bench-quiet
bench-quiet: packages server-roots control-plane build ## Measure the idle operator beside 100 Redis and 20 clusters; adds to bench/results/latest.json.
	cd $(TEST_MODULE) && E2E_SANDBOX_SLOT=$(BENCH_SLOT) go test -tags bench -count=1 -timeout 60m -v -run TestQuietAtScale ./bench/

.PHONY: lint
lint: $(GOLANGCI_LINT) lint-api ## Run golangci-lint on the operator's module and on the test module, and kube-api-linter on api/.
	$(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml --build-tags bench,$(INTEGRATION_TAG),release ./...
	cd $(TEST_MODULE) && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml --build-tags bench,chaos,servers,$(INTEGRATION_TAG),release ./...

# The rules it runs, those it leaves off and the released fields it excludes, each with its
# reason, are in .golangci-kal.yml.
.PHONY: lint-api
lint-api: $(KUBE_API_LINTER) ## Run kube-api-linter (the API conventions of Kubernetes) on the API types in api/.
	$(KUBE_API_LINTER) run --config $(ROOT)/.golangci-kal.yml ./api/...

# govulncheck reads the Go vulnerability database over the network, so it is not part of
# verify or test: run it where that database can be reached.
GOVULNCHECK_VERSION := v1.9.0
.PHONY: vulncheck
vulncheck: ## Report known vulnerabilities in the code paths of both modules (needs network access to the Go vulnerability database).
	go run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) -tags $(INTEGRATION_TAG) ./...
	cd $(TEST_MODULE) && go run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) -tags bench,chaos,servers,$(INTEGRATION_TAG) ./...

.PHONY: golden
golden: ## Rewrite the builders' golden files from the current code.
	go test ./internal/builder/... -update

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

# Rebuilt when the module's files change too, a bump of golangci-lint in its go.mod included.
# Built like $(GOLANGCI_LINT) (no -trimpath), so that it reuses that build's compiled packages:
# seconds after it rather than minutes.
$(KUBE_API_LINTER): $(KUBE_API_LINTER_MODULE)/go.mod $(KUBE_API_LINTER_MODULE)/go.sum $(KUBE_API_LINTER_MODULE)/main.go
	@mkdir -p $(BIN)
	cd $(KUBE_API_LINTER_MODULE) && go build -o $@ .

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_.-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Sandbox

SANDBOX_DIR ?= $(ROOT)/.sandbox
SANDBOX_SLOT ?= 0
# MONITORING=1 also starts Debian's Prometheus, scraping the operator and every exporter, at
# PROMETHEUS_ADDR (port 9090 plus the slot).
MONITORING ?=
PROMETHEUS_ADDR ?= 127.0.0.1:$(shell echo $$((9090 + $(SANDBOX_SLOT))))
# Applied without the operator; with the operator deployed, SANDBOX_OPERATOR_SAMPLE instead.
SANDBOX_SAMPLE ?= hack/sandbox/sample-redis.yaml
SANDBOX_OPERATOR_SAMPLE ?= config/samples/redis_v1beta2_redis_minimal.yaml config/samples/redis_v1beta2_rediscluster_minimal.yaml
# SANDBOX_RELEASE=x.y.z runs the operator of that release (make release VERSION=x.y.z builds
# it into dist/image) instead of bin/redis-operator: the sandbox starts its registry, the
# image is pushed there, and the nodes pull it and run the binary from its layers.
SANDBOX_RELEASE ?=

.PHONY: sandbox-bin
sandbox-bin: ## Build bin/sandbox from the test module.
	cd $(TEST_MODULE) && CGO_ENABLED=0 go build -trimpath -o $(BIN)/sandbox ./cmd/sandbox

.PHONY: sandbox
sandbox: packages server-roots control-plane sandbox-bin $(VERSITYGW) ## Start Kubernetes with 3 virtual nodes, the CRDs, the operator (when it builds) and a sample; MONITORING=1 adds Prometheus.
	@if [ -f cmd/redis-operator/main.go ]; then $(MAKE) --no-print-directory build || echo ">> the operator does not build: starting the sandbox without it"; fi
	$(BIN)/sandbox up --dir $(SANDBOX_DIR) --slot $(SANDBOX_SLOT) --operator-image $(IMG) \
		$(if $(SANDBOX_RELEASE),--push $(DIST)/image --operator-from-registry redis-operator:$(SANDBOX_RELEASE)) \
		$(foreach s,$(SANDBOX_SAMPLE),--sample $(s)) $(foreach s,$(wildcard $(SANDBOX_OPERATOR_SAMPLE)),--operator-sample $(s))
	@if [ -n "$(MONITORING)" ]; then SANDBOX_DIR=$(SANDBOX_DIR) PROMETHEUS_ADDR=$(PROMETHEUS_ADDR) hack/sandbox-monitoring.sh start; fi

.PHONY: sandbox-push
sandbox-push: ## Push make release's image (dist/image) and charts (dist/charts) to the registry of a sandbox started with SANDBOX_RELEASE or `sandbox up --registry`.
	@test -x $(BIN)/sandbox || $(MAKE) --no-print-directory sandbox-bin
	$(BIN)/sandbox push --dir $(SANDBOX_DIR) --charts $(DIST)/charts $(DIST)/image

.PHONY: sandbox-down
sandbox-down: ## Stop the sandbox and remove every process, namespace, mount, link and route it made.
	@SANDBOX_DIR=$(SANDBOX_DIR) hack/sandbox-monitoring.sh stop
	@test -x $(BIN)/sandbox || $(MAKE) --no-print-directory sandbox-bin
	$(BIN)/sandbox down --dir $(SANDBOX_DIR) --slot $(SANDBOX_SLOT)

# The fault scenarios too long for the CI budget (test files tagged chaos in e2e/operator): a
# soak of CHAOS_SCALE_CYCLES (20) scale-out/scale-in cycles under per-shard writers, a soak of
# CHAOS_FAILOVER_CYCLES (10) rolling updates and leader hand-backs read back by new clients,
# and the fault matrix.
CHAOS_TIMEOUT ?= 90m
.PHONY: chaos
chaos: packages server-roots control-plane build sandbox-bin ## Run the fault scenarios kept out of make test (as root).
	cd $(TEST_MODULE) && $(FAILSUMMARY_BUILD) && KUBEBUILDER_ASSETS=$(BIN) E2E_SANDBOX_BIN=$(BIN)/sandbox go test $(GO_TEST_FLAGS) -p 1 -tags chaos -timeout $(CHAOS_TIMEOUT) -v -run 'Soak|FaultMatrix' ./e2e/operator/ 2>&1 | $(FAILSUMMARY)

# The whole server table (test/e2e/operator, tag servers): every kind and a cluster's
# lifecycle (TLS, password, resharding, rolling update, rotation, hand-over) on Redis 7.0 and
# 8.0, Valkey 8.0 and 8.1. make e2e runs each kind on each server once.
.PHONY: e2e-servers
e2e-servers: packages server-roots control-plane build sandbox-bin ## Run every scenario of the server table on every Redis and Valkey release the sandbox has (as root).
	cd $(TEST_MODULE) && $(FAILSUMMARY_BUILD) && KUBEBUILDER_ASSETS=$(BIN) E2E_SANDBOX_BIN=$(BIN)/sandbox go test $(GO_TEST_FLAGS) -p 1 -parallel $(E2E_PARALLEL) -tags servers -timeout $(E2E_TIMEOUT) -v -run 'TestServerTable' ./e2e/operator/ 2>&1 | $(FAILSUMMARY)

# Two releases built from the tree (hack/release, this machine's platform only unless
# RELEASE_E2E_ALL_PLATFORMS=1) run on a sandbox from their own images, pulled from the
# sandbox's registry (test/e2e/release, tagged release): the first from its install.yaml, then
# from its chart installed by Helm from oci://, upgraded to the second with no Redis pod
# restarted. Kept out of make e2e for the release builds' time.
.PHONY: e2e-release
e2e-release: packages server-roots control-plane $(HELM) $(KUSTOMIZE) $(CYCLONEDX_GOMOD) chart-deps ## Build two releases, run the first's image from install.yaml, then helm install it from the sandbox's registry and upgrade to the second (as root).
	cd $(TEST_MODULE) && KUBEBUILDER_ASSETS=$(BIN) CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) go test $(GO_TEST_FLAGS) -tags release -timeout $(E2E_TIMEOUT) -v ./e2e/release/

# The sandbox tiers pipe go test -v through failsummary (test/cmd/failsummary), which ends the
# log with each failed test's own messages: a failed test's reason otherwise sits above its
# namespace dump, far from both its FAIL line and the log's tail. pipefail keeps go test's status.
FAILSUMMARY := $(BIN)/failsummary
FAILSUMMARY_BUILD := go build -o $(FAILSUMMARY) ./cmd/failsummary

# -p 1: one package at a time, so that two sandboxes never share the machine's cores.
.PHONY: e2e
e2e: packages server-roots control-plane build sandbox-bin kubectl-redis chainsaw helm chart-deps $(VERSITYGW) ## Run the e2e tier: the sandbox's end-to-end tests, one package at a time (as root).
	cd $(TEST_MODULE) && $(FAILSUMMARY_BUILD) && KUBEBUILDER_ASSETS=$(BIN) E2E_SANDBOX_BIN=$(BIN)/sandbox go test $(GO_TEST_FLAGS) -p 1 -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) -v $(E2E_PKGS) 2>&1 | $(FAILSUMMARY)
