# Dovetail's developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin
export GOFLAGS ?= -mod=mod
# The commit binaries report (dovetail --version, dovetailctl --version); go's own VCS stamping misses some checkouts
# (linked work trees).
VERSION_LDFLAGS = -X github.com/dovetail/dovetail/pkg/version.commit=$(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
# Where the locally built etcd/kube-apiserver live; envtest reads KUBEBUILDER_ASSETS.
CONTROL_PLANE_BIN = $(shell bash hack/build-control-plane.sh)

.PHONY: help
help: ## Show this help.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

##@ The two commands

.PHONY: demo
demo: build ## Start the local cluster, AWS simulator and controller; schedule 20 pods onto new nodes; print a summary.
	@bash hack/demo.sh

.PHONY: test
test: control-plane karpenter build image ## Run every test: unit, envtest (real kube-apiserver) and end-to-end on the local stack.
	@bash hack/test.sh

##@ Building

.PHONY: build
build: ## Build bin/dovetail, bin/dovetailctl and bin/awssim.
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/...

.PHONY: image
image: ## Build OCI images of dovetail and dovetailctl (linux/amd64, linux/arm64) into bin/image/ without Docker; print their references.
	$(GO) run ./hack/image -out $(BIN)/image

.PHONY: kubectl-plugin
kubectl-plugin: ## Build bin/dovetailctl and install it also as the kubectl plugin bin/kubectl-dovetail (put bin/ on PATH).
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/dovetailctl ./cmd/dovetailctl
	ln -sf dovetailctl $(BIN)/kubectl-dovetail
	printf '#!/bin/sh\n# kubectl (1.26+) runs this to complete `kubectl dovetail ...`.\nexec kubectl-dovetail __complete "$$@"\n' > $(BIN)/kubectl_complete-dovetail
	chmod +x $(BIN)/kubectl_complete-dovetail
	@echo "installed $(BIN)/kubectl-dovetail and $(BIN)/kubectl_complete-dovetail; add $(BIN) to PATH"

.PHONY: control-plane
control-plane: ## Build (once, cached outside the clone) etcd, kube-apiserver, controller-manager, scheduler, kubectl, kwok.
	@bash hack/build-control-plane.sh >/dev/null

.PHONY: karpenter
karpenter: ## Build (once, cached outside the clone) Karpenter's own AWS controller for test/e2e/karpenter; KARPENTER_VERSION=v1.15.0 for another release.
	@bash hack/build-karpenter.sh >/dev/null

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs from api/ (and the chart's copy of the CRDs), and the reference pages of docs/reference.
	@bash hack/generate.sh
	@bash hack/sync-chart-crds.sh

.PHONY: verify
verify: ## Fail if generated files or docs drift, a docs link or make target is broken, code is not gofmt'ed or go vet complains.
	@bash hack/verify.sh

##@ Local stack

.PHONY: cluster-up
cluster-up: ## Start the local control plane (etcd, apiserver, controller-manager, scheduler, kwok).
	@bash hack/cluster-up.sh >/dev/null

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its state.
	@bash hack/cluster-down.sh

.PHONY: stack-up
stack-up: build ## Start cluster + AWS simulator + controller (what the demo runs), without the demo workload.
	@bash hack/stack-up.sh

.PHONY: demo-down
demo-down: ## Stop everything `make demo` started and remove its state.
	@bash hack/stack-down.sh

##@ Tests and benchmarks

.PHONY: test-unit
test-unit: control-plane ## Unit and envtest tests only.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test ./...

.PHONY: test-metrics
test-metrics: ## Karpenter's metric list (read from its v1.14/v1.15 packages) and the dashboard queries on the committed scrapes (docs/dashboards.md).
	@KARPENTER_METRICS_V115=1 bash hack/test-karpenter-metrics.sh

.PHONY: test-stress
test-stress: control-plane ## Tests of every package that starts a simulator or API server, -count=20, under CPU load.
	@bash hack/test-stress.sh

.PHONY: test-chaos
test-chaos: control-plane build ## Kill the controller mid-launch/mid-disruption in rounds of scale-out/in, drift, spot interruption (CHAOS_ROUNDS, default 30); leader-election takeover.
	CHAOS_ROUNDS=$${CHAOS_ROUNDS:-30} KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test -tags chaos -p 1 -count 1 -timeout 300m -v -run 'TestChaos|TestLeaderElection' ./test/chaos/

.PHONY: test-e2e
test-e2e: control-plane karpenter build ## End-to-end tests on a local stack of their own.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test -tags e2e -p 1 -count 1 -timeout 30m ./test/e2e/...

.PHONY: test-faults
test-faults: control-plane build ## AWS and API fault scenarios at full size: EC2 throttled 2 min during a 300-pod scale-out, 2 of 3 zones out of capacity, kube-apiserver down 30 s.
	DOVETAIL_E2E_FAULTS=full KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test -tags e2e -p 1 -count 1 -timeout 60m -v -run 'TestThrottledScaleOut|TestCapacityInTwoZones|TestAPIServerRestart' ./test/e2e/

.PHONY: test-twocluster
test-twocluster: control-plane build ## Two clusters with one CLUSTER_NAME on one simulated account: neither touches the other's resources (also part of test-e2e).
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test -tags e2e -p 1 -count 1 -timeout 15m -v -run TestTwoClustersOneName ./test/e2e/twocluster/

.PHONY: test-e2e-iam
test-e2e-iam: control-plane karpenter build ## End-to-end tests with the simulator enforcing the documented controller IAM policy (docs/iam.md).
	DOVETAIL_E2E_IAM_POLICY=documented KUBEBUILDER_ASSETS=$(CONTROL_PLANE_BIN) $(GO) test -tags e2e -p 1 -count 1 -timeout 30m ./test/e2e/...

.PHONY: bench-scheduling
bench-scheduling: ## Scheduler benchmarks at 1k/5k/20k/50k pods (figures go to docs/benchmarks.md).
	@bash hack/bench-scheduling.sh

.PHONY: bench-disruption
bench-disruption: ## Disruption benchmark: one decision pass and the convergence simulation on 2,000 nodes (docs/benchmarks.md).
	@bash hack/bench-disruption.sh

.PHONY: bench-rss
bench-rss: control-plane build ## Controller memory at 1,000 nodes: envtest, bin/awssim and bin/dovetail, no scale-out (docs/benchmarks.md).
	$(GO) test -tags bench -p 1 -count 1 -timeout 60m -v ./test/bench/rss/

.PHONY: bench-stack
# Each local-stack benchmark runs in a go test of its own (a stack of its own, a timeout of its own: together they
# take longer than one timeout allows on a loaded 2-core machine); a failed one does not stop the others.
BENCH_STACK_TESTS ?= TestScaleOut TestScaleOutHostnameSpread TestScaleOutSelfAntiAffinity TestScaleOutMixed TestConsolidationScaleIn TestDriftReplace TestMassDeletion
BENCH_STACK_TIMEOUT ?= 60m

bench-stack: control-plane build ## Local-stack benchmarks: scale-outs (1,000 pods, hostname spread, self anti-affinity, mixed), consolidation scale-in, drift, mass node deletion (docs/benchmarks.md).
	@failed=""; for t in $(BENCH_STACK_TESTS); do \
		echo "== bench-stack: $$t"; \
		$(GO) test -tags bench -p 1 -count 1 -timeout $(BENCH_STACK_TIMEOUT) -v -run "^$$t\$$" ./test/bench/ || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "bench-stack: failed:$$failed"; exit 1; fi

.PHONY: bench-scale
bench-scale: control-plane build ## A cluster of BENCH_SCALE_NODES (5,000) nodes and 10 pods each: the controller at rest, provisioning, consolidation, drift (docs/benchmarks.md).
	DOVETAIL_BENCH_PORT_BASE=$${DOVETAIL_BENCH_PORT_BASE:-20200} DOVETAIL_MEMORY_LIMIT=$${DOVETAIL_MEMORY_LIMIT:-1GiB} \
	DOVETAIL_ENV="ENABLE_PROFILING=true $${DOVETAIL_ENV:-}" \
		$(GO) test -tags bench -p 1 -count 1 -timeout $${BENCH_SCALE_TIMEOUT:-6h} -v -run '^TestScale$$' ./test/bench/

.PHONY: bench-metrics
bench-metrics: ## Metrics scrape at 2,000 nodes and 20,000 pods, as served and as gathered: time, bytes, allocations, heap held (docs/benchmarks.md).
	$(GO) test -run '^$$' -bench BenchmarkScrape -benchtime 5x -count 1 ./pkg/metrics/
