# webhook-operator. `make help` lists the targets.

# The version stamped into every binary (`manager --version`) and tagged on every image, and the
# commit it was built from.
VERSION ?= v0.1.0
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

# The images of the manager and of the Welcome operand: what images and docker-build build, and
# what deploy runs.
IMG         ?= ghcr.io/seedlabs/webhook-operator:$(VERSION)
WELCOME_IMG ?= ghcr.io/seedlabs/welcome-web:$(VERSION)

GOOS   ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)

# Where tools and built binaries go.
LOCALBIN ?= $(CURDIR)/bin

## Pinned tool versions, installed with `go install` into $(LOCALBIN).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION        ?= v5.8.2
GOLANGCI_LINT_VERSION    ?= v2.15.0

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE      ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT  ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

## The control plane for envtest, run-local and test-e2e, built from source by the tools modules in test/tools.
## KUBE_VERSION must match the k8s.io/kubernetes version in test/tools/kube/go.mod.
KUBE_VERSION     ?= v1.37.1
KUBE_MINOR        = $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBEBUILDER_ASSETS ?= $(LOCALBIN)/k8s/$(patsubst v%,%,$(KUBE_VERSION))-$(GOOS)-$(GOARCH)
KUBE_VERSION_PKGS  = k8s.io/component-base/version k8s.io/client-go/pkg/version
KUBE_LDFLAGS       = -s -w $(foreach p,$(KUBE_VERSION_PKGS),-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(KUBE_MINOR) -X $(p).gitTreeState=clean)

# go test flags; envtest suites take about a minute.
GO_TEST_FLAGS ?= -race -timeout 15m

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec
# A recipe that fails leaves no half-written target behind for the next run to trust.
.DELETE_ON_ERROR:

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook configurations into config/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: manifests generate ## Fail when generated files are out of date.
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		echo "Generated files are out of date; run 'make manifests generate' and commit:"; \
		git status --porcelain -- api config; git --no-pager diff --stat -- api config; exit 1; \
	fi

.PHONY: test
test: manifests generate fmt vet controlplane $(KUSTOMIZE) ## Run unit and envtest suites against the control plane built from source.
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" KUSTOMIZE="$(KUSTOMIZE)" go test $(GO_TEST_FLAGS) ./...

# The fuzz targets of the admission webhooks' HTTP handlers (each kind's, the scale subresource's,
# the AdmissionPolicy's, and any body to any of them), and of the matchConditions that skip the
# validating webhooks (may-be-refused); FUZZTIME is per target.
FUZZ_TARGETS ?= FuzzWelcomeAdmission FuzzMemcachedAdmission FuzzDeployObjectAdmission FuzzMemcachedScaleAdmission \
                FuzzDeployObjectSpec FuzzAdmissionPolicyAdmission FuzzAdmissionReviewBody FuzzWelcomeMayBeRefused FuzzMemcachedMayBeRefused
FUZZTIME     ?= 5m

.PHONY: fuzz
fuzz: ## Fuzz the admission webhooks' HTTP handlers, FUZZTIME (default 5m) per target; a failing input lands in webhooks/testdata/fuzz.
	for target in $(FUZZ_TARGETS); do \
		go test ./webhooks/ -run '^$$' -fuzz "^$${target}$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# make bench: BENCH_FLAGS=-quick tries it out in two minutes.
BENCH_OUT   ?= $(LOCALBIN)/bench/report.md
BENCH_FLAGS ?=

.PHONY: bench
bench: build controlplane ## Measure the operator beside its baselines on the embedded control plane and write a table of ratios to BENCH_OUT (about 20 minutes).
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go run ./test/bench -manager $(LOCALBIN)/manager -out $(BENCH_OUT) $(BENCH_FLAGS)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and fix what it can.
	$(GOLANGCI_LINT) run --fix ./...

##@ Build

# GO_BUILD builds a static binary stamped with VERSION and COMMIT: the Dockerfile builds with the
# same flags (test/deploy holds them equal).
VERSION_PKG = github.com/seedlabs/webhook-operator/internal/version
GO_BUILD    = CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)"

.PHONY: build
build: manifests generate fmt vet ## Build the manager, the welcome-web operand and the kubectl plugin into bin/.
	$(GO_BUILD) -o $(LOCALBIN)/manager ./cmd/manager
	$(GO_BUILD) -o $(LOCALBIN)/welcome-web ./cmd/welcome-web
	$(GO_BUILD) -o $(LOCALBIN)/kubectl-webhook_operator ./cmd/kubectl-webhook_operator

# make images: the platforms of each image index, and where the OCI image layouts go.
PLATFORMS  ?= linux/amd64 linux/arm64
IMAGES_DIR ?= $(LOCALBIN)/images
# image_labels are the OCI annotations every image of ours carries.
image_labels = --label org.opencontainers.image.version=$(VERSION) --label org.opencontainers.image.revision=$(COMMIT) \
               --label org.opencontainers.image.source=https://github.com/seedlabs/webhook-operator

.PHONY: images
images: ## Build the manager's (IMG) and welcome-web's (WELCOME_IMG) images for PLATFORMS as OCI image layouts in IMAGES_DIR, without Docker.
	for platform in $(PLATFORMS); do \
		GOOS=$${platform%%/*} GOARCH=$${platform#*/} $(GO_BUILD) -o $(IMAGES_DIR)/$${platform%%/*}-$${platform#*/}/manager ./cmd/manager; \
		GOOS=$${platform%%/*} GOARCH=$${platform#*/} $(GO_BUILD) -o $(IMAGES_DIR)/$${platform%%/*}-$${platform#*/}/welcome-web ./cmd/welcome-web; \
	done
	go run ./cmd/image-build --ref $(IMG) --entrypoint /manager $(image_labels) \
		$(foreach p,$(PLATFORMS),--platform $(p)=$(IMAGES_DIR)/$(subst /,-,$(p))/manager) --out $(IMAGES_DIR)/webhook-operator
	go run ./cmd/image-build --ref $(WELCOME_IMG) --entrypoint /welcome-web $(image_labels) \
		$(foreach p,$(PLATFORMS),--platform $(p)=$(IMAGES_DIR)/$(subst /,-,$(p))/welcome-web) --out $(IMAGES_DIR)/welcome-web

CONTAINER_TOOL ?= docker

.PHONY: docker-build
docker-build: ## Build the manager and welcome-web images with the Dockerfile (needs a Docker engine).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --target manager -t $(IMG) .
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --target welcome-web -t $(WELCOME_IMG) .

.PHONY: docker-push
docker-push: ## Push the manager and welcome-web images.
	$(CONTAINER_TOOL) push $(IMG)
	$(CONTAINER_TOOL) push $(WELCOME_IMG)

.PHONY: run-local
run-local: controlplane ## Run the control plane, CRDs, webhooks and the manager on this machine; Ctrl-C stops it all.
	go run ./cmd/run-local --assets "$(KUBEBUILDER_ASSETS)" --kubeconfig-out "$(LOCALBIN)/local/kubeconfig"

##@ Deployment

KUBECTL ?= kubectl
ignore-not-found ?= false

# MEMCACHED_IMG, when set, replaces the memcached image every Memcached runs
# (config/manager/manager.yaml's MEMCACHED_IMAGE).
MEMCACHED_IMG ?=
comma := ,
operand_env = {name: WELCOME_IMAGE, value: "$(WELCOME_IMG)"}$(if $(MEMCACHED_IMG),$(comma) {name: MEMCACHED_IMAGE$(comma) value: "$(MEMCACHED_IMG)"})

# kustomize_default builds config/default with the manager image set to $(IMG) and the operand
# images to $(WELCOME_IMG) and $(MEMCACHED_IMG), in a copy of config/ so the tracked kustomization
# is never edited.
define kustomize_default
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp -r config "$$tmp/" && \
	(cd "$$tmp/config/manager" && $(KUSTOMIZE) edit set image controller=$(IMG) && \
	 printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata: {name: controller-manager, namespace: system}' \
		'spec: {template: {spec: {containers: [{name: manager, env: [$(operand_env)]}]}}}' > operand_images_patch.yaml && \
	 $(KUSTOMIZE) edit add patch --path operand_images_patch.yaml) && \
	$(KUSTOMIZE) build "$$tmp/config/default"
endef

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs (and every custom resource) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator (needs cert-manager); IMG, WELCOME_IMG and MEMCACHED_IMG select the images.
	$(kustomize_default) | $(KUBECTL) apply --server-side -f -

# undeploy deletes the custom resources first, while the manager still runs: it takes off the
# finalizer an earlier version put on Memcacheds, which would otherwise keep them and the CRDs.
# Then it waits for the garbage collector to delete their Deployments and Services: were the CRDs
# gone first, it could not, since it cannot resolve an owner whose kind no longer exists. (Deleting
# in the foreground would wait as well, but takes the garbage collector three times as long.)
.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove everything deploy created, custom resources first.
	kinds=$$($(KUSTOMIZE) build config/crd | $(KUBECTL) get --ignore-not-found -o name -f - | sed 's|.*/||' | paste -sd, -) && \
	if [ -n "$$kinds" ]; then \
		$(KUBECTL) delete --all --all-namespaces --wait --timeout=2m "$$kinds" && \
		$(KUBECTL) wait --for=delete deployments,services --all-namespaces \
			--selector=app.kubernetes.io/managed-by=webhook-operator --timeout=3m; \
	fi
	$(kustomize_default) | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: build-installer
build-installer: manifests generate $(KUSTOMIZE) ## Write dist/install.yaml, everything deploy applies, for users without kustomize.
	mkdir -p dist
	$(kustomize_default) > dist/install.yaml

##@ End-to-end test

# The extra programs of the end-to-end test, built by test/tools/e2e: kwok and cert-manager's
# controllers (k8s.io v0.36, which cert-manager v1.21 needs), kwok's stages and cert-manager's CRDs.
E2E_TOOLS_MOD   = test/tools/e2e/go.mod test/tools/e2e/go.sum
E2E_BIN        ?= $(LOCALBIN)/e2e
KWOK           ?= $(E2E_BIN)/kwok
KWOK_STAGES    ?= $(E2E_BIN)/kwok-stages.yaml
CERT_MANAGER   ?= $(E2E_BIN)/cert-manager
CERT_MANAGER_CRDS ?= $(E2E_BIN)/cert-manager-crds
E2E_ARTIFACTS  ?= $(E2E_BIN)/artifacts
E2E_IMG        ?= ghcr.io/seedlabs/webhook-operator:e2e
# module_dir is where the Go module cache holds module $(1) at the version test/tools/e2e requires.
module_dir = $$(cd test/tools/e2e && go mod download $(1) && go list -m -f '{{.Dir}}' $(1))

.PHONY: test-e2e
test-e2e: build controlplane $(addprefix $(KUBEBUILDER_ASSETS)/,kube-scheduler kubectl) e2e-tools $(KUSTOMIZE) ## Deploy the operator with make deploy onto a real control plane with kwok nodes and cert-manager, no containers, and test it.
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" KUSTOMIZE="$(KUSTOMIZE)" E2E_MANAGER="$(LOCALBIN)/manager" E2E_KUBECTL_PLUGIN="$(LOCALBIN)/kubectl-webhook_operator" E2E_IMG="$(E2E_IMG)" \
	E2E_KWOK="$(KWOK)" E2E_KWOK_STAGES="$(KWOK_STAGES)" E2E_CERT_MANAGER="$(CERT_MANAGER)" E2E_CERT_MANAGER_CRDS="$(CERT_MANAGER_CRDS)" \
	E2E_ARTIFACTS="$(E2E_ARTIFACTS)" go test -tags e2e -count=1 -timeout 35m -v ./test/e2e/ -ginkgo.v

.PHONY: e2e-tools
e2e-tools: $(KWOK) $(KWOK_STAGES) $(CERT_MANAGER) $(CERT_MANAGER_CRDS) ## Build kwok and cert-manager's controllers, and fetch their stages and CRDs.

$(KWOK): $(E2E_TOOLS_MOD)
	cd test/tools/e2e && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ sigs.k8s.io/kwok/cmd/kwok

$(CERT_MANAGER): $(E2E_TOOLS_MOD) test/tools/e2e/cmd/cert-manager/main.go
	cd test/tools/e2e && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./cmd/cert-manager

# kwok's "fast" stages, from its module: nodes Ready at once with a heartbeat lease, pods Ready at
# once, and deleted pods removed.
$(KWOK_STAGES): $(E2E_TOOLS_MOD) $(KUSTOMIZE)
	mkdir -p $(dir $@)
	$(KUSTOMIZE) build $(call module_dir,sigs.k8s.io/kwok)/kustomize/stage/fast > $@.tmp
	mv $@.tmp $@

$(CERT_MANAGER_CRDS): $(E2E_TOOLS_MOD)
	rm -rf $@ $@.tmp && mkdir -p $@.tmp
	cp $(call module_dir,github.com/cert-manager/cert-manager)/deploy/crds/*.yaml $@.tmp/
	chmod -R u+w $@.tmp && mv $@.tmp $@

##@ Control plane (built from the Go module proxy, never downloaded)

.PHONY: controlplane
controlplane: $(addprefix $(KUBEBUILDER_ASSETS)/,etcd kube-apiserver kube-controller-manager) ## Build etcd, kube-apiserver and kube-controller-manager into bin/k8s.

$(KUBEBUILDER_ASSETS)/etcd: test/tools/etcd/go.mod test/tools/etcd/main.go
	cd test/tools/etcd && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ .

$(addprefix $(KUBEBUILDER_ASSETS)/,kube-apiserver kube-controller-manager kube-scheduler kubectl): $(KUBEBUILDER_ASSETS)/%: test/tools/kube/go.mod test/tools/kube/cmd/%/main.go
	cd test/tools/kube && CGO_ENABLED=0 go build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $@ ./cmd/$*

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(KUSTOMIZE):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $@

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(GOLANGCI_LINT) ## Install the pinned tools into bin/.

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@
