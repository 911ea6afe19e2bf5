# webhook-operator. `make help` lists the targets.

# The version stamped into every binary (`manager --version`) and tagged on every image, and the
# commit it was built from.
VERSION ?= v0.1.0
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

# The images of the manager and of the Welcome operand: what images and docker-build build, what
# deploy runs, and what release names and publish pushes, in REGISTRY (host[:port]/path).
REGISTRY         ?= ghcr.io/seedlabs
IMG_REPO         ?= $(REGISTRY)/webhook-operator
WELCOME_IMG_REPO ?= $(REGISTRY)/welcome-web
IMG              ?= $(IMG_REPO):$(VERSION)
WELCOME_IMG      ?= $(WELCOME_IMG_REPO):$(VERSION)

GOOS   ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)

# Where tools and built binaries go.
LOCALBIN ?= $(CURDIR)/bin

## Pinned tool versions, installed with `go install` into $(LOCALBIN).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION        ?= v5.8.2
GOLANGCI_LINT_VERSION    ?= v2.15.0
# The Ginkgo CLI, which runs the envtest suite in parallel processes: the version of
# github.com/onsi/ginkgo/v2 that go.mod requires (test/deploy holds them equal).
GINKGO_VERSION           ?= v2.34.0
# helm is built by test/tools/helm, whose go.mod requires this version (test/deploy holds them equal).
HELM_VERSION             ?= v4.3.1
# Helm 3, as Argo CD and Flux render charts with it, is built by test/tools/helm3 (the newest 3.x
# the module proxy serves; test/deploy holds them equal and renders the chart with both).
HELM3_VERSION            ?= v3.22.0
# cosign, with which make release and make publish sign a release, is built by test/tools/cosign,
# whose go.mod requires this version (test/deploy holds them equal).
COSIGN_VERSION           ?= v3.1.3
# promtool is built by test/tools/prometheus, whose go.mod requires this version of
# github.com/prometheus/prometheus (test/deploy holds them equal): Prometheus v3.Y.Z is the Go
# module v0.3YY.Z.
PROMETHEUS_VERSION       ?= v0.316.0

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE      ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT  ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GINKGO         ?= $(LOCALBIN)/ginkgo-$(GINKGO_VERSION)
HELM           ?= $(LOCALBIN)/helm-$(HELM_VERSION)
HELM3          ?= $(LOCALBIN)/helm-$(HELM3_VERSION)
PROMTOOL       ?= $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
COSIGN         ?= $(LOCALBIN)/cosign-$(COSIGN_VERSION)

# The Helm chart. Its templates read what controller-gen generates and the static objects of
# config/ from $(CHART_DIR)/files, which make manifests copies there.
CHART_DIR = dist/chart

## The control plane for envtest, run-local and test-e2e, built from source by the tools modules in test/tools.
## KUBE_VERSION must match the k8s.io/kubernetes version in test/tools/kube/go.mod.
KUBE_VERSION     ?= v1.37.1
KUBE_MINOR        = $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBEBUILDER_ASSETS ?= $(LOCALBIN)/k8s/$(patsubst v%,%,$(KUBE_VERSION))-$(GOOS)-$(GOARCH)
KUBE_VERSION_PKGS  = k8s.io/component-base/version k8s.io/client-go/pkg/version
KUBE_LDFLAGS       = -s -w $(foreach p,$(KUBE_VERSION_PKGS),-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(KUBE_MINOR) -X $(p).gitTreeState=clean)
# KUBE_BUILD builds the control plane's binaries as go test builds the tests' dependencies (no
# -trimpath, cgo as go's default). test/tools/kube holds every module they share with the tests at
# this module's version (TestToolsModuleSharesVersions), so a fresh clone's make test compiles the
# packages etcd, kube-apiserver and the tests share once. test/tools/kube-oldest is built alike.
KUBE_BUILD         = go build -ldflags

## The oldest Kubernetes minor the operator supports (docs/kubernetes-versions.md): make
## test-oldest-kube runs the envtest suite's admission specs against its kube-apiserver. KUBE_OLDEST_VERSION must match the
## k8s.io/kubernetes version in test/tools/kube-oldest/go.mod; etcd is KUBE_VERSION's (the etcd server
## of KUBE_VERSION's etcd client, as Kubernetes' build/dependencies.yaml pins it).
KUBE_OLDEST_VERSION ?= v1.35.4
KUBE_OLDEST_ASSETS  ?= $(LOCALBIN)/k8s/$(patsubst v%,%,$(KUBE_OLDEST_VERSION))-$(GOOS)-$(GOARCH)
KUBE_OLDEST_LDFLAGS  = -s -w $(foreach p,$(KUBE_VERSION_PKGS),-X $(p).gitVersion=$(KUBE_OLDEST_VERSION) -X $(p).gitMajor=1 \
                       -X $(p).gitMinor=$(word 2,$(subst ., ,$(KUBE_OLDEST_VERSION))) -X $(p).gitTreeState=clean)

# go test flags, and the Ginkgo CLI's for the envtest suite (test/integration), which runs in
# INTEGRATION_PROCS processes, each with a control plane of its own: its specs mostly wait on
# the API server and the controllers (45% of one core, run alone), so three at once take less
# than half the time on two cores. The suite is built as go test builds it (GO_TEST_FLAGS) into
# INTEGRATION_TEST, which Ginkgo runs in its package's directory.
# RACE=1 (CI's) adds the race detector, whose build of the tests' dependencies shares nothing with
# the control plane's.
RACE              ?=
GO_TEST_FLAGS     ?= $(if $(filter 1 true,$(RACE)),-race )-timeout 15m
GINKGO_FLAGS      ?= --timeout=15m --succinct
INTEGRATION_PROCS ?= 3
INTEGRATION_TEST   = test/integration/integration.test

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
manifests: $(CONTROLLER_GEN) $(KUSTOMIZE) ## Generate CRDs, RBAC and webhook configurations into config/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	mkdir -p $(LOCALBIN) && { echo '# Generated by make manifests from the markers in webhooks/ and match-conditions/: do not edit.'; \
		$(KUSTOMIZE) build --load-restrictor LoadRestrictionsNone config/webhook/match-conditions; } > $(LOCALBIN)/webhooks.yaml
	mv $(LOCALBIN)/webhooks.yaml config/webhook/manifests.yaml
	rm -rf $(CHART_DIR)/files && mkdir -p $(addprefix $(CHART_DIR)/files/,crds crd-conversion rbac prometheus grafana network-policy)
	cp config/crd/bases/*.yaml $(CHART_DIR)/files/crds/
	cp config/crd/patches/*_conversion.yaml $(CHART_DIR)/files/crd-conversion/
	cp config/rbac/role.yaml config/rbac/leader_election_role.yaml config/rbac/metrics_auth_role.yaml \
		config/rbac/metrics_reader_role.yaml config/rbac/*_editor_role.yaml config/rbac/*_viewer_role.yaml $(CHART_DIR)/files/rbac/
	cp config/webhook/manifests.yaml $(CHART_DIR)/files/webhooks.yaml
	cp config/prometheus/monitor.yaml config/prometheus/metrics_scraper.yaml config/prometheus/rules.yaml $(CHART_DIR)/files/prometheus/
	cp config/grafana/webhook-operator.json $(CHART_DIR)/files/grafana/
	cp config/network-policy/allow-*.yaml $(CHART_DIR)/files/network-policy/

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
	@if [ -n "$$(git status --porcelain -- api config $(CHART_DIR))" ]; then \
		echo "Generated files are out of date; run 'make manifests generate' and commit:"; \
		git status --porcelain -- api config $(CHART_DIR); git --no-pager diff --stat -- api config $(CHART_DIR); exit 1; \
	fi

# test builds what envtest runs (etcd and kube-apiserver) and nothing else, and vets every package
# in the same build as the tests (-vet=all: the checks of make vet), where a separate go vet would,
# beside CI's race build, compile every dependency a second time. The envtest suite, built
# first (it compiles nearly every package the others need), runs while go test builds and runs
# the other packages, and prints its report once they are done; the two fail make test alone.
# It tests the generated files as committed, as cluster-api's does, and does not regenerate them:
# controller-gen and kustomize, which that needs, are a newcomer's first 2 minutes, and make verify
# (CI's first step) fails when a marker changed and they were not regenerated.
.PHONY: test
test: fmt $(addprefix $(KUBEBUILDER_ASSETS)/,etcd kube-apiserver) $(GINKGO) ## Run the unit and envtest suites, on the newest supported Kubernetes.
	go test $(GO_TEST_FLAGS) -vet=all -c -o $(INTEGRATION_TEST) ./test/integration
	log=$$(mktemp); trap 'rm -f "$$log" $(INTEGRATION_TEST)' EXIT; \
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" $(GINKGO) -p --procs=$(INTEGRATION_PROCS) $(GINKGO_FLAGS) $(INTEGRATION_TEST) > "$$log" 2>&1 & \
	integration=$$! unit=0 suite=0; \
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go test $(GO_TEST_FLAGS) -vet=all $$(go list ./... | grep -v -e '/test/deploy$$' -e '/test/integration$$') || unit=$$?; \
	wait $$integration || suite=$$?; \
	cat "$$log"; [ $$unit -eq 0 ] && [ $$suite -eq 0 ]

# test-deploy checks what each install path would install: the kustomize builds, the Helm chart
# against them, the alerts (promtool), make release, the Dockerfile's builds, PROJECT, and
# setup-envtest's download and its fallback; and the local cluster: make run-local (with
# kube-controller-manager) and README.md's quick start against it. It builds helm, promtool,
# kube-controller-manager and kubectl, which make test does not.
.PHONY: test-deploy
test-deploy: manifests controlplane $(KUBEBUILDER_ASSETS)/kubectl $(KUSTOMIZE) $(HELM) $(HELM3) $(PROMTOOL) ## Test the install paths: kustomize builds, the Helm chart (Helm 4 and 3), the alerts, make release, make run-local.
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" KUSTOMIZE="$(KUSTOMIZE)" HELM="$(HELM)" HELM3="$(HELM3)" PROMTOOL="$(PROMTOOL)" \
		go test $(GO_TEST_FLAGS) ./test/deploy/

# The fuzz targets, each package:target: the admission webhooks' HTTP handlers (each kind's, the
# scale subresource's, the AdmissionPolicy's, and any body to any of them), the matchConditions
# that skip the validating webhooks (may-be-refused), the conversion webhook and Welcome's
# conversion data, and the webhooks at v1 against those at v1alpha1; FUZZTIME is per target, a duration or a count of runs (5000x). Go 1.26 may
# fail a target that found nothing with "context deadline exceeded" as a duration ends
# (golang/go#75804); a count never does, so CI gives one.
FUZZ_TARGETS ?= $(addprefix webhooks:,FuzzWelcomeAdmission FuzzMemcachedAdmission FuzzDeployObjectAdmission \
                FuzzMemcachedScaleAdmission FuzzDeployObjectSpec FuzzAdmissionPolicyAdmission FuzzAdmissionReviewBody \
                FuzzWelcomeMayBeRefused FuzzMemcachedMayBeRefused FuzzConvertReview FuzzVersionsAnswerAlike) \
                api/auth/v1alpha1:FuzzWelcomeConversionData
FUZZTIME     ?= 5m

# test-oldest-kube runs the specs labelled admission (the CRDs' schemas, the webhook configurations
# and their matchConditions, the webhooks through the API server, and the contract that whatever
# they admit the controllers can apply) against the oldest supported kube-apiserver.
.PHONY: test-oldest-kube
test-oldest-kube: manifests $(addprefix $(KUBE_OLDEST_ASSETS)/,etcd kube-apiserver) $(GINKGO) ## Run the envtest suite's admission and conversion specs against the oldest supported kube-apiserver (KUBE_OLDEST_VERSION).
	go test $(GO_TEST_FLAGS) -c -o $(INTEGRATION_TEST) ./test/integration
	trap 'rm -f $(INTEGRATION_TEST)' EXIT && \
	KUBEBUILDER_ASSETS="$(KUBE_OLDEST_ASSETS)" $(GINKGO) -p --procs=$(INTEGRATION_PROCS) $(GINKGO_FLAGS) --label-filter='admission || conversion' $(INTEGRATION_TEST)

.PHONY: docs
docs: ## Regenerate the rule table of docs/rules.md from kubectl webhook-operator rules -o json, the argocd-cm patch of docs/operations.md from config/argocd/health.lua, docs/chart-values.md from the chart's values.yaml, and docs/api.md from the CRDs.
	UPDATE_DOCS=1 go test ./cmd/kubectl-webhook_operator/ -run '^TestRulesPageIsInSync$$' -count=1
	UPDATE_DOCS=1 go test ./test/gitops/ -run '^TestArgoCDPatchIsInSync$$' -count=1
	UPDATE_DOCS=1 go test ./test/deploy/ -run '^(TestChartValuesPageIsInSync|TestAPIReferenceIsInSync)$$' -count=1

.PHONY: fuzz
fuzz: ## Fuzz the admission and conversion webhooks, FUZZTIME (default 5m) per target; a failing input lands in the package's testdata/fuzz.
	for target in $(FUZZ_TARGETS); do \
		go test ./$${target%%:*}/ -run '^$$' -fuzz "^$${target#*:}$$" -fuzztime $(FUZZTIME) || exit 1; \
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

# PLAIN_HTTP=true has push-images and publish speak HTTP to the registry, as to one on localhost.
PLAIN_HTTP ?= false
plain_http  = $(if $(filter true,$(PLAIN_HTTP)),--plain-http)

.PHONY: push-images
push-images: ## Push the images make images wrote into IMAGES_DIR to IMG and WELCOME_IMG, without Docker (docker's credentials).
	go run ./cmd/image-push --layout $(IMAGES_DIR)/webhook-operator --ref $(IMG) $(plain_http)
	go run ./cmd/image-push --layout $(IMAGES_DIR)/welcome-web --ref $(WELCOME_IMG) $(plain_http)

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
run-local: controlplane $(KUBEBUILDER_ASSETS)/kubectl ## Run the control plane, CRDs, webhooks and the manager on this machine; Ctrl-C stops it all.
	mkdir -p $(LOCALBIN)/local && ln -sf $(KUBEBUILDER_ASSETS)/kubectl $(LOCALBIN)/local/kubectl
	go run ./cmd/run-local --assets "$(KUBEBUILDER_ASSETS)" --kubeconfig-out "$(LOCALBIN)/local/kubeconfig"

##@ Deployment

KUBECTL ?= kubectl
ignore-not-found ?= false

# MEMCACHED_IMG, when set, replaces the memcached image every Memcached runs
# (config/manager/manager.yaml's MEMCACHED_IMAGE).
MEMCACHED_IMG ?=
comma := ,
operand_env = {name: WELCOME_IMAGE, value: "$(WELCOME_IMG)"}$(if $(MEMCACHED_IMG),$(comma) {name: MEMCACHED_IMAGE$(comma) value: "$(MEMCACHED_IMG)"})

# IMG_PULL_SECRET, when set, names the kubernetes.io/dockerconfigjson Secret of the operator's
# namespace the manager's pods pull IMG with, for a registry that asks for credentials. Create the
# namespace and the Secret first (docs/install.md).
IMG_PULL_SECRET ?=
pull_secrets = $(if $(IMG_PULL_SECRET),imagePullSecrets: [{name: $(IMG_PULL_SECRET)}]$(comma) )

# DEPLOY_CONFIG is the install deploy, undeploy and build-installer build: default (with
# cert-manager) or self-signed (without it; the manager keeps its own certificate).
DEPLOY_CONFIG ?= default

# kustomize_default builds config/$(DEPLOY_CONFIG) with the manager image set to $(IMG), pulled
# with $(IMG_PULL_SECRET), and the operand images to $(WELCOME_IMG) and $(MEMCACHED_IMG), in a
# copy of config/ so the tracked kustomization is never edited.
define kustomize_default
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp -r config "$$tmp/" && \
	(cd "$$tmp/config/manager" && $(KUSTOMIZE) edit set image controller=$(IMG) && \
	 printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata: {name: controller-manager, namespace: system}' \
		'spec: {template: {spec: {$(pull_secrets)containers: [{name: manager, env: [$(operand_env)]}]}}}' > operand_images_patch.yaml && \
	 $(KUSTOMIZE) edit add patch --path operand_images_patch.yaml) && \
	$(KUSTOMIZE) build "$$tmp/config/$(DEPLOY_CONFIG)"
endef

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs (and every custom resource) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

# deploy applies what kustomize builds. Over an install (an upgrade), it first applies the webhook
# configurations alone and waits until each of their entries has a caBundle: an entry this version
# adds gets it from the CA injector (cert-manager's, or the running managers' in self-signed mode)
# a moment after it is written, and a request it matched meanwhile would be refused; the requests it
# matches come only once the CRDs, applied next, serve what it names (v0.2.0's v1 Welcome entries).
.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator (needs cert-manager unless DEPLOY_CONFIG=self-signed); IMG, WELCOME_IMG and MEMCACHED_IMG select the images, IMG_PULL_SECRET a pull secret.
	manifests=$$(mktemp) && trap 'rm -f "$$manifests"' EXIT && ( $(kustomize_default) ) > "$$manifests" && \
	webhooks=$$(awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } /(^|\n)kind: (Mutating|Validating)WebhookConfiguration\n/' "$$manifests") && \
	if printf '%s\n' "$$webhooks" | $(KUBECTL) get -f - >/dev/null 2>&1; then \
		printf '%s\n' "$$webhooks" | $(KUBECTL) apply --server-side -f - && \
		for i in $$(seq 120); do \
			missing=$$(printf '%s\n' "$$webhooks" | $(KUBECTL) get -f - -o jsonpath='{range .items[*]}{range .webhooks[*]}{.name} {.clientConfig.caBundle}{"\n"}{end}{end}' | awk 'NF == 1 { print $$1 }'); \
			[ -z "$$missing" ] && break; \
			[ "$$i" = 120 ] && { echo "deploy: no caBundle after 2 minutes in $$missing: is the CA injector running?" >&2; exit 1; }; \
			sleep 1; \
		done; \
	fi && \
	$(KUBECTL) apply --server-side -f "$$manifests"

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

# installer prints what deploy applies, for release.
.PHONY: installer
installer: $(KUSTOMIZE)
	@$(kustomize_default)

##@ Release

# make release VERSION=vX.Y.Z writes into RELEASE_DIR:
#   images/webhook-operator, images/welcome-web   the images, as OCI image layouts (make publish pushes them)
#   install.yaml, install-self-signed.yaml        what deploy applies, with cert-manager or without, images by digest
#   webhook-operator-X.Y.Z.tgz                    the Helm chart, images by digest
#   kubectl-webhook_operator_OS_ARCH.tar.gz       the kubectl plugin for PLUGIN_PLATFORMS, with the LICENSE
#   webhook-operator.krew.yaml                    the plugin's krew manifest
#   webhook-operator.cdx.json, welcome-web.cdx.json  each image's SBOM (CycloneDX, from its binary's build information)
#   provenance.json                               the release's SLSA v1 provenance (what was built, from which commit, by whom)
#   checksums.txt                                 sha256 of each file above
# With SIGNING_KEY (a cosign private key; its password in COSIGN_PASSWORD) it signs the chart and
# checksums.txt (webhook-operator-X.Y.Z.tgz.sigstore.json, checksums.txt.sigstore.json), and make
# publish SIGNING_KEY=… signs the images and attaches their SBOMs and the provenance as signed
# in-toto attestations. It tags nothing and pushes nothing (make publish pushes); docs/release.md
# says what follows.
RELEASE_DIR      ?= dist/release
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_URL      ?= https://github.com/seedlabs/webhook-operator/releases/download/$(VERSION)
# The time every file of the chart's archive carries, so the same commit packages the same bytes.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# BUILDER_ID names who ran make release in its provenance: a CI run's URL. By default, a person's
# make release, which docs/release.md describes.
BUILDER_ID       ?= https://github.com/seedlabs/webhook-operator/blob/main/docs/release.md\#who-built-it
SIGNING_KEY      ?=
# cosign_offline writes into the directory $(1) a signing configuration and a trusted root that
# name no service: cosign then signs with SIGNING_KEY alone, with no transparency log, certificate
# authority or timestamp authority, none of which this project can reach (keyless signing is CI's
# way, docs/release.md); cosign_sign are the flags that sign so.
cosign_offline = $(COSIGN) signing-config create --out $(1)/signing-config.json >/dev/null && \
                 $(COSIGN) trusted-root create --out $(1)/trusted-root.json >/dev/null
cosign_sign    = --key $(SIGNING_KEY) --signing-config $(1)/signing-config.json --trusted-root $(1)/trusted-root.json --yes
# layout_digest is the digest of the image index in the OCI layout $(1).
layout_digest = $$(grep -o '"digest": *"sha256:[0-9a-f]*"' $(1)/index.json | head -1 | grep -o 'sha256:[0-9a-f]*')

.PHONY: release
release: $(KUSTOMIZE) $(HELM) $(if $(SIGNING_KEY),$(COSIGN)) ## Build the release VERSION=vX.Y.Z into RELEASE_DIR: images, install.yaml by digest, the chart, the kubectl plugin, krew manifest, SBOMs, provenance, checksums; SIGNING_KEY signs.
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "VERSION=$(VERSION) is not a version vX.Y.Z[-pre]"; exit 1; }
	@case "$(abspath $(CHART_DIR))/" in "$(abspath $(RELEASE_DIR))"/*) \
		echo "RELEASE_DIR=$(RELEASE_DIR) holds $(CHART_DIR), which make release would delete; name a directory of its own"; exit 1;; esac
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	$(MAKE) --no-print-directory images VERSION=$(VERSION) IMAGES_DIR=$(abspath $(RELEASE_DIR))/images
	binaries=$(RELEASE_DIR)/images/$(subst /,-,$(firstword $(PLATFORMS))) && \
	go run ./cmd/release-attest sbom --binary $$binaries/manager --version $(VERSION) --created $(SOURCE_DATE_EPOCH) --out $(RELEASE_DIR)/webhook-operator.cdx.json && \
	go run ./cmd/release-attest sbom --binary $$binaries/welcome-web --version $(VERSION) --created $(SOURCE_DATE_EPOCH) --out $(RELEASE_DIR)/welcome-web.cdx.json
	go run ./cmd/release-attest provenance --source https://github.com/seedlabs/webhook-operator --commit $(COMMIT) --builder '$(BUILDER_ID)' \
		--param VERSION=$(VERSION) --param REGISTRY=$(REGISTRY) --param 'PLATFORMS=$(PLATFORMS)' --out $(RELEASE_DIR)/provenance.json
	rm -rf $(addprefix $(RELEASE_DIR)/images/,$(subst /,-,$(PLATFORMS)))
	img=$(IMG_REPO)@$(call layout_digest,$(RELEASE_DIR)/images/webhook-operator) && \
	welcome=$(WELCOME_IMG_REPO)@$(call layout_digest,$(RELEASE_DIR)/images/welcome-web) && \
	$(MAKE) -s --no-print-directory installer IMG=$$img WELCOME_IMG=$$welcome > $(RELEASE_DIR)/install.yaml && \
	$(MAKE) -s --no-print-directory installer IMG=$$img WELCOME_IMG=$$welcome DEPLOY_CONFIG=self-signed > $(RELEASE_DIR)/install-self-signed.yaml && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp -r $(CHART_DIR) "$$tmp/chart" && \
	sed -i -e 's|^  repository: .*|  repository: $(IMG_REPO)|' -e 's|^  digest: ""|  digest: "'"$${img#*@}"'"|' \
		-e 's|^  welcomeImage: ""|  welcomeImage: "'"$$welcome"'"|' "$$tmp/chart/values.yaml" && \
	find "$$tmp/chart" -exec touch -h -d @$(SOURCE_DATE_EPOCH) {} + && \
	$(HELM) package "$$tmp/chart" --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) --destination $(RELEASE_DIR) >/dev/null
	for platform in $(PLUGIN_PLATFORMS); do \
		os=$${platform%%/*} arch=$${platform#*/} dir=$$(mktemp -d) && \
		GOOS=$$os GOARCH=$$arch $(GO_BUILD) -o $$dir/kubectl-webhook_operator ./cmd/kubectl-webhook_operator && cp LICENSE $$dir/ && \
		tar -C $$dir --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - kubectl-webhook_operator LICENSE | \
			gzip -n > $(RELEASE_DIR)/kubectl-webhook_operator_$${os}_$${arch}.tar.gz && rm -rf $$dir || exit 1; \
	done
	{ printf '%s\n' 'apiVersion: krew.googlecontainertools.github.com/v1alpha2' 'kind: Plugin' 'metadata:' '  name: webhook-operator' 'spec:' \
		'  version: $(VERSION)' '  homepage: https://github.com/seedlabs/webhook-operator' \
		"  shortDescription: Lint manifests with webhook-operator's admission rules, offline" \
		'  description: |' "    Runs webhook-operator's admission over Welcome, Memcached and DeployObject manifests" \
		'    without a cluster: every object is defaulted and validated by the rules the operator'"'"'s' \
		'    webhooks serve, under an AdmissionPolicy if given, so CI can refuse what the cluster would.' '  platforms:'; \
	  for platform in $(PLUGIN_PLATFORMS); do \
		os=$${platform%%/*} arch=$${platform#*/} archive=kubectl-webhook_operator_$${platform%%/*}_$${platform#*/}.tar.gz; \
		printf '%s\n' '  - selector:' '      matchLabels:' "        os: $$os" "        arch: $$arch" \
			"    uri: $(RELEASE_URL)/$$archive" "    sha256: $$(sha256sum $(RELEASE_DIR)/$$archive | cut -d' ' -f1)" \
			'    bin: kubectl-webhook_operator' '    files:' '    - from: kubectl-webhook_operator' '      to: .' '    - from: LICENSE' '      to: .'; \
	  done; } > $(RELEASE_DIR)/webhook-operator.krew.yaml
	cd $(RELEASE_DIR) && sha256sum *.yaml *.json *.tgz *.tar.gz > checksums.txt
	$(if $(SIGNING_KEY),cfg=$$(mktemp -d) && trap 'rm -rf "$$cfg"' EXIT && $(call cosign_offline,$$cfg) && \
		for f in $(CHART_FILE) $(RELEASE_DIR)/checksums.txt; do \
			$(COSIGN) sign-blob $(call cosign_sign,$$cfg) --bundle $$f.sigstore.json $$f >/dev/null || exit 1; \
		done)
	@echo "release $(VERSION) in $(RELEASE_DIR)"

# make publish REGISTRY=host[:port]/path VERSION=vX.Y.Z pushes the release make release wrote for the
# same REGISTRY: both images, by the digests its install.yaml and chart name, tagged VERSION, and the
# chart as oci://REGISTRY/charts/webhook-operator. Docker's credentials serve the images and Helm's
# (helm registry login) the chart.
CHART_FILE  = $(RELEASE_DIR)/webhook-operator-$(patsubst v%,%,$(VERSION)).tgz

.PHONY: publish
# signed_images are the release's images, each as the name of its layout and its repository.
signed_images = webhook-operator=$(IMG_REPO) welcome-web=$(WELCOME_IMG_REPO)

publish: $(HELM) $(if $(SIGNING_KEY),$(COSIGN)) ## Push the release VERSION in RELEASE_DIR to REGISTRY: both images, tagged VERSION, and the chart as oci://REGISTRY/charts/webhook-operator; SIGNING_KEY signs them.
	@[ -f $(CHART_FILE) ] || { echo "$(CHART_FILE) is missing: make release VERSION=$(VERSION) REGISTRY=$(REGISTRY) first"; exit 1; }
	@grep -q 'image: $(IMG_REPO)@' $(RELEASE_DIR)/install.yaml || { echo "$(RELEASE_DIR) names images outside $(REGISTRY): make release VERSION=$(VERSION) REGISTRY=$(REGISTRY) first"; exit 1; }
	$(MAKE) --no-print-directory push-images IMAGES_DIR=$(abspath $(RELEASE_DIR))/images IMG=$(IMG_REPO):$(VERSION) WELCOME_IMG=$(WELCOME_IMG_REPO):$(VERSION)
	chart=$$($(HELM) push $(CHART_FILE) oci://$(REGISTRY)/charts $(plain_http) 2>&1 | tee /dev/stderr | sed -n 's/^Digest: //p') && [ -n "$$chart" ] \
	$(if $(SIGNING_KEY),&& cfg=$$(mktemp -d) && trap 'rm -rf "$$cfg"' EXIT && $(call cosign_offline,$$cfg) && \
		$(foreach i,$(signed_images),ref=$(word 2,$(subst =, ,$(i)))@$(call layout_digest,$(RELEASE_DIR)/images/$(word 1,$(subst =, ,$(i)))) && \
			$(COSIGN) sign $(call cosign_sign,$$cfg) $$ref && \
			$(COSIGN) attest $(call cosign_sign,$$cfg) --type cyclonedx --predicate $(RELEASE_DIR)/$(word 1,$(subst =, ,$(i))).cdx.json $$ref && \
			$(COSIGN) attest $(call cosign_sign,$$cfg) --type slsaprovenance1 --predicate $(RELEASE_DIR)/provenance.json $$ref && ) \
		$(COSIGN) sign $(call cosign_sign,$$cfg) $(REGISTRY)/charts/webhook-operator@$$chart)

##@ End-to-end test

# The end-to-end cluster has one real node. containerd, its runc shim, ctr, crictl and the CNI
# plugins are built by test/tools/node; kubelet and kube-proxy by test/tools/kube, like the control
# plane; runc and nft (which kube-proxy's nftables mode runs) come from Debian, installed by
# node-packages when missing.
NODE_TOOLS_MOD = test/tools/node/go.mod test/tools/node/go.sum
NODE_BIN      ?= $(LOCALBIN)/node
NODE_TOOLS     = containerd containerd-shim-runc-v2 ctr crictl bridge loopback host-local
node_pkg_containerd              = github.com/containerd/containerd/v2/cmd/containerd
node_pkg_containerd-shim-runc-v2 = github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
node_pkg_ctr                     = github.com/containerd/containerd/v2/cmd/ctr
node_pkg_crictl                  = sigs.k8s.io/cri-tools/cmd/crictl
node_pkg_bridge                  = github.com/containernetworking/plugins/plugins/main/bridge
node_pkg_loopback                = github.com/containernetworking/plugins/plugins/main/loopback
node_pkg_host-local              = github.com/containernetworking/plugins/plugins/ipam/host-local
# node_version is the version test/tools/node requires of module $(1), for the binaries' -X flags;
# the recipe runs in that module.
node_version = $$(go list -m -f '{{.Version}}' $(1))
node_ldflags = -X github.com/containerd/containerd/v2/version.Version=$(call node_version,github.com/containerd/containerd/v2) \
               -X sigs.k8s.io/cri-tools/pkg/version.Version=$(call node_version,sigs.k8s.io/cri-tools)
RUNC ?= /usr/sbin/runc
NFT  ?= /usr/sbin/nft

# The extra programs of the end-to-end test, built by test/tools/e2e: cert-manager's controllers
# (k8s.io v0.36, which cert-manager v1.21 needs), and cert-manager's CRDs.
E2E_TOOLS_MOD   = test/tools/e2e/go.mod test/tools/e2e/go.sum
E2E_BIN        ?= $(LOCALBIN)/e2e
CERT_MANAGER   ?= $(E2E_BIN)/cert-manager
CERT_MANAGER_CRDS ?= $(E2E_BIN)/cert-manager-crds
E2E_ARTIFACTS  ?= $(E2E_BIN)/artifacts
# More flags for the suite, such as E2E_FLAGS=-ginkgo.focus=Helm to run the specs whose text says Helm.
E2E_FLAGS      ?=
# The versions the upgrade specs start from: fixed earlier commits of this repository, taken out of
# git and built and deployed with their own Makefile, config/ and chart. E2E_PREVIOUS_COMMIT is
# deployed with make deploy, E2E_PREVIOUS_CHART_COMMIT with helm install. Both are the previous
# release, v0.1.0 (CHANGELOG.md), which lists v1 unserved and serves its webhooks ahead: one
# upgrades one release at a time (docs/upgrade.md).
E2E_PREVIOUS_COMMIT       ?= 37956cbc0938db28f2324e0cfb9f0f35f806fd7f
E2E_PREVIOUS_CHART_COMMIT ?= 37956cbc0938db28f2324e0cfb9f0f35f806fd7f
# previous_dir is where the tree of commit $(1) and its manager's image go; previous_img, the image's name.
previous_dir = $(E2E_BIN)/previous/$(1)
previous_img = e2e.local/webhook-operator:$(1)
# The images of the end-to-end test's own pods, as OCI layouts: the pod sandbox, cert-manager, a
# memcached from Debian's package (the operator's default is a public image, which cannot be
# pulled), e2e-echo in two versions, for DeployObjects, and e2e-caller, which calls the webhook
# port from a pod as anyone could.
E2E_IMAGES_DIR        ?= $(E2E_BIN)/images
E2E_MEMCACHED_IMG      = e2e.local/memcached:debian
E2E_CERT_MANAGER_IMG   = e2e.local/cert-manager:dev
E2E_ECHO_IMG           = e2e.local/echo
E2E_CALLER_IMG         = e2e.local/caller:dev
E2E_MEMCACHED_PACKAGES = memcached libevent-2.1-7 libsasl2-2 libssl3 libc6
# module_dir is where the Go module cache holds module $(1) at the version test/tools/e2e requires.
module_dir = $$(cd test/tools/e2e && go mod download $(1) && go list -m -f '{{.Dir}}' $(1))

.PHONY: test-e2e
test-e2e: build images e2e-images e2e-previous controlplane node $(addprefix $(KUBEBUILDER_ASSETS)/,kube-scheduler kubectl) $(CERT_MANAGER_CRDS) $(KUSTOMIZE) $(HELM) $(COSIGN) ## As root: make deploy onto a cluster with a real node (kubelet, containerd, runc) and cert-manager, and test it.
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" KUSTOMIZE="$(KUSTOMIZE)" E2E_HELM="$(HELM)" E2E_COSIGN="$(COSIGN)" E2E_KUBECTL_PLUGIN="$(LOCALBIN)/kubectl-webhook_operator" \
	E2E_IMG="$(IMG)" E2E_WELCOME_IMG="$(WELCOME_IMG)" E2E_MEMCACHED_IMG="$(E2E_MEMCACHED_IMG)" E2E_ECHO_IMG="$(E2E_ECHO_IMG)" E2E_CALLER_IMG="$(E2E_CALLER_IMG)" \
	E2E_CERT_MANAGER_IMG="$(E2E_CERT_MANAGER_IMG)" E2E_CERT_MANAGER_CRDS="$(CERT_MANAGER_CRDS)" \
	E2E_IMAGES="$(IMAGES_DIR)/webhook-operator $(IMAGES_DIR)/welcome-web $(wildcard $(E2E_IMAGES_DIR)/*) \
		$(foreach c,$(E2E_PREVIOUS_COMMIT) $(E2E_PREVIOUS_CHART_COMMIT),$(call previous_dir,$(c))/images/webhook-operator)" \
	E2E_PREVIOUS_COMMIT="$(E2E_PREVIOUS_COMMIT)" E2E_PREVIOUS_TREE="$(call previous_dir,$(E2E_PREVIOUS_COMMIT))/tree" \
	E2E_PREVIOUS_IMG="$(call previous_img,$(E2E_PREVIOUS_COMMIT))" \
	E2E_PREVIOUS_CHART_COMMIT="$(E2E_PREVIOUS_CHART_COMMIT)" E2E_PREVIOUS_CHART_TREE="$(call previous_dir,$(E2E_PREVIOUS_CHART_COMMIT))/tree" \
	E2E_PREVIOUS_CHART_IMG="$(call previous_img,$(E2E_PREVIOUS_CHART_COMMIT))" \
	E2E_CONTROLLER_GEN="$(CONTROLLER_GEN)" \
	E2E_NODE_BIN="$(NODE_BIN)" E2E_RUNC="$(RUNC)" E2E_VERSION="$(VERSION)" E2E_COMMIT="$(COMMIT)" \
	E2E_ARTIFACTS="$(E2E_ARTIFACTS)" go test -tags e2e -count=1 -timeout 45m -v ./test/e2e/ -ginkgo.v $(E2E_FLAGS)

# e2e-previous takes each previous version's tree out of git (fetching the commit if the clone
# lacks it) and builds its manager's image with its own Makefile.
.PHONY: e2e-previous
e2e-previous: $(foreach c,$(E2E_PREVIOUS_COMMIT) $(E2E_PREVIOUS_CHART_COMMIT),$(call previous_dir,$(c))/images/webhook-operator/index.json) ## Build the images of the versions the upgrade specs start from.

$(call previous_dir,%)/images/webhook-operator/index.json:
	git cat-file -e $*^{commit} 2>/dev/null || git fetch --quiet --depth=1 origin $*
	rm -rf $(call previous_dir,$*) && mkdir -p $(call previous_dir,$*)/tree/bin
	git archive $* | tar -x -C $(call previous_dir,$*)/tree
	MAKEFLAGS= MAKELEVEL= $(MAKE) --no-print-directory -C $(call previous_dir,$*)/tree images VERSION=v0.0.0-previous COMMIT=$* \
		IMG=$(call previous_img,$*) WELCOME_IMG=e2e.local/welcome-web:$* PLATFORMS=$(GOOS)/$(GOARCH) IMAGES_DIR=$(call previous_dir,$*)/images

.PHONY: node
node: node-packages $(addprefix $(NODE_BIN)/,$(NODE_TOOLS)) $(addprefix $(KUBEBUILDER_ASSETS)/,kubelet kube-proxy) ## Build and install what the end-to-end test's node runs.

.PHONY: node-packages
node-packages: ## Install runc and nft from Debian's packages, when missing (needs root).
	@if [ ! -x $(RUNC) ] || [ ! -x $(NFT) ]; then \
		echo "installing runc and nftables from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runc nftables; \
	fi

$(addprefix $(NODE_BIN)/,$(NODE_TOOLS)): $(NODE_BIN)/%: $(NODE_TOOLS_MOD)
	cd test/tools/node && CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w $(node_ldflags)" -o $@ $(node_pkg_$*)

$(CERT_MANAGER): $(E2E_TOOLS_MOD) test/tools/e2e/cmd/cert-manager/main.go
	cd test/tools/e2e && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./cmd/cert-manager

$(CERT_MANAGER_CRDS): $(E2E_TOOLS_MOD)
	rm -rf $@ $@.tmp && mkdir -p $@.tmp
	cp $(call module_dir,github.com/cert-manager/cert-manager)/deploy/crds/*.yaml $@.tmp/
	chmod -R u+w $@.tmp && mv $@.tmp $@

# The memcached image's root file system: Debian's memcached and the shared libraries of its
# packages and their dependencies, extracted from the packages apt-get downloads.
$(E2E_BIN)/memcached-rootfs: | node-packages
	rm -rf $@ $@.tmp && mkdir -p $@.tmp/debs $@.tmp/root $@/usr/bin
	cd $@.tmp/debs && apt-get download -qq $(E2E_MEMCACHED_PACKAGES) 2>/dev/null || \
		(apt-get update -qq && apt-get download -qq $(E2E_MEMCACHED_PACKAGES))
	for deb in $@.tmp/debs/*.deb; do dpkg-deb -x $$deb $@.tmp/root; done
	cp -a $@.tmp/root/usr/bin/memcached $@/usr/bin/
	cd $@.tmp/root && find lib lib64 usr/lib -maxdepth 2 -name '*.so*' \( -type f -o -type l \) -exec cp -a --parents {} $@ \;
	rm -rf $@.tmp

.PHONY: e2e-images
e2e-images: $(CERT_MANAGER) $(E2E_BIN)/memcached-rootfs ## Build the images of the end-to-end test's own pods into E2E_IMAGES_DIR.
	$(GO_BUILD) -o $(E2E_BIN)/pause ./test/e2e/images/pause
	$(GO_BUILD) -o $(E2E_BIN)/e2e-echo ./test/e2e/images/echo
	$(GO_BUILD) -o $(E2E_BIN)/e2e-caller ./test/e2e/images/caller
	go run ./cmd/image-build --ref registry.k8s.io/pause:3.10.2 --entrypoint /pause --user 65535:65535 \
		--platform $(GOOS)/$(GOARCH)=$(E2E_BIN)/pause --out $(E2E_IMAGES_DIR)/pause
	go run ./cmd/image-build --ref $(E2E_CERT_MANAGER_IMG) --entrypoint /cert-manager \
		--platform $(GOOS)/$(GOARCH)=$(CERT_MANAGER) --out $(E2E_IMAGES_DIR)/cert-manager
	go run ./cmd/image-build --ref $(E2E_MEMCACHED_IMG) --entrypoint /usr/bin/memcached --env PATH=/usr/bin:/bin \
		--platform $(GOOS)/$(GOARCH)=$(E2E_BIN)/memcached-rootfs --out $(E2E_IMAGES_DIR)/memcached
	go run ./cmd/image-build --ref $(E2E_CALLER_IMG) --entrypoint /e2e-caller \
		--platform $(GOOS)/$(GOARCH)=$(E2E_BIN)/e2e-caller --out $(E2E_IMAGES_DIR)/caller
	for v in v1 v2; do \
		go run ./cmd/image-build --ref $(E2E_ECHO_IMG):$$v --entrypoint /e2e-echo --env APP_VERSION=$$v \
			--platform $(GOOS)/$(GOARCH)=$(E2E_BIN)/e2e-echo --out $(E2E_IMAGES_DIR)/echo-$$v || exit 1; \
	done

##@ Control plane (downloaded by setup-envtest where it can, else built from the Go module proxy)

# etcd, kube-apiserver and kubectl come from setup-envtest, as kubebuilder projects get them, when
# it can download them (within seconds); where it cannot (no internet, or no release of
# KUBE_VERSION), it fails at once and they are built from source, as is every other binary: setup-
# envtest has no kube-controller-manager, kubelet or kube-proxy. ENVTEST_DOWNLOAD=false always
# builds. Either way they land in KUBEBUILDER_ASSETS, and the log says which way each came.
SETUP_ENVTEST_VERSION ?= v0.25.1
SETUP_ENVTEST         ?= $(LOCALBIN)/setup-envtest-$(SETUP_ENVTEST_VERSION)
ENVTEST_DOWNLOAD      ?= true
ENVTEST_DOWNLOAD_DIR  ?= $(LOCALBIN)/envtest
# ENVTEST_INDEX, when set, is the index of envtest releases setup-envtest reads instead of its own.
ENVTEST_INDEX         ?=
# envtest_download copies $(1) of setup-envtest's Kubernetes $(2) into the target, or fails.
envtest_download = [ "$(ENVTEST_DOWNLOAD)" = true ] && \
	dir=$$(timeout 30 $(SETUP_ENVTEST) use $(patsubst v%,%,$(2)) --bin-dir $(ENVTEST_DOWNLOAD_DIR) $(if $(ENVTEST_INDEX),--index $(ENVTEST_INDEX)) -p path 2>/dev/null) && \
	mkdir -p $(@D) && cp "$$dir/$(1)" $@ && echo "$(1) $(2): downloaded by setup-envtest"
envtest_fallback = { [ "$(ENVTEST_DOWNLOAD)" != true ] || echo "$(1) $(2): setup-envtest cannot download it; building it from the Go module proxy"; }

.PHONY: controlplane
controlplane: $(addprefix $(KUBEBUILDER_ASSETS)/,etcd kube-apiserver kube-controller-manager) ## Download or build etcd, kube-apiserver and kube-controller-manager into bin/k8s.

$(addprefix $(KUBEBUILDER_ASSETS)/,etcd kube-apiserver kubectl): $(KUBEBUILDER_ASSETS)/%: test/tools/kube/go.mod test/tools/kube/cmd/%/main.go | $(SETUP_ENVTEST)
	$(call envtest_download,$*,$(KUBE_VERSION)) || { $(call envtest_fallback,$*,$(KUBE_VERSION)) && \
		cd test/tools/kube && $(KUBE_BUILD) "$(KUBE_LDFLAGS)" -o $@ ./cmd/$*; }

$(addprefix $(KUBEBUILDER_ASSETS)/,kube-controller-manager kube-scheduler kubelet kube-proxy): $(KUBEBUILDER_ASSETS)/%: test/tools/kube/go.mod test/tools/kube/cmd/%/main.go
	cd test/tools/kube && $(KUBE_BUILD) "$(KUBE_LDFLAGS)" -o $@ ./cmd/$*

$(KUBE_OLDEST_ASSETS)/kube-apiserver: test/tools/kube-oldest/go.mod test/tools/kube-oldest/cmd/kube-apiserver/main.go | $(SETUP_ENVTEST)
	$(call envtest_download,kube-apiserver,$(KUBE_OLDEST_VERSION)) || { $(call envtest_fallback,kube-apiserver,$(KUBE_OLDEST_VERSION)) && \
		cd test/tools/kube-oldest && $(KUBE_BUILD) "$(KUBE_OLDEST_LDFLAGS)" -o $@ ./cmd/kube-apiserver; }

$(KUBE_OLDEST_ASSETS)/etcd: $(KUBEBUILDER_ASSETS)/etcd
	mkdir -p $(@D) && cp $< $@

$(SETUP_ENVTEST):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-runtime/tools/setup-envtest@$(SETUP_ENVTEST_VERSION)
	mv $(LOCALBIN)/setup-envtest $@

##@ Tools

$(GINKGO):
	GOBIN=$(LOCALBIN) go install github.com/onsi/ginkgo/v2/ginkgo@$(GINKGO_VERSION)
	mv $(LOCALBIN)/ginkgo $@

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(KUSTOMIZE):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $@

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(GOLANGCI_LINT) $(GINKGO) $(HELM) $(HELM3) $(PROMTOOL) ## Install the pinned tools into bin/.

# Only promtool's rule commands are used (make test-deploy checks and unit-tests config/prometheus's
# alerts): remove_all_sd leaves out the cloud service discoveries, a quarter of the build time.
# --version reports the Prometheus release, 3.Y.Z.
$(PROMTOOL): test/tools/prometheus/go.mod
	cd test/tools/prometheus && CGO_ENABLED=0 go build -tags remove_all_sd -trimpath \
		-ldflags "-s -w -X github.com/prometheus/common/version.Version=$(patsubst 3.0%,3.%,$(patsubst v0.3%,3.%,$(PROMETHEUS_VERSION)))" \
		-o $@ github.com/prometheus/prometheus/cmd/promtool

$(HELM): test/tools/helm/go.mod
	cd test/tools/helm && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" \
		-o $@ helm.sh/helm/v4/cmd/helm

# As Helm's own Makefile stamps it, the Kubernetes version helm template and lint assume is that of
# the client-go it is built with (v0.Y.Z is 1.Y), not Helm 3's fallback, 1.20.
$(HELM3): test/tools/helm3/go.mod
	minor=$$(sed -n 's|^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*|\1|p' test/tools/helm3/go.mod) && [ -n "$$minor" ] && \
	cd test/tools/helm3 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM3_VERSION) \
		$(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=$$minor)" \
		-o $@ helm.sh/helm/v3/cmd/helm

$(COSIGN): test/tools/cosign/go.mod
	cd test/tools/cosign && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ github.com/sigstore/cosign/v3/cmd/cosign

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@
