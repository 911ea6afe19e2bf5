# syntax=docker/dockerfile:1
# Multi-stage build of the manager and the welcome-web operand: static binaries on distroless, for
# users with Docker (make docker-build). make images builds the same binaries, with the same flags,
# user and entrypoint, without Docker; the end-to-end test holds the two equal.
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) --target manager -t IMG .
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) --target welcome-web -t WELCOME_IMG .
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /workspace

# Modules first, so they stay cached while the source changes.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY certs/ certs/
COPY cmd/ cmd/
COPY internal/ internal/
COPY webhooks/ webhooks/

# The same flags as the Makefile's GO_BUILD.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/seedlabs/webhook-operator/internal/version.version=${VERSION} -X github.com/seedlabs/webhook-operator/internal/version.commit=${COMMIT}" -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/seedlabs/webhook-operator/internal/version.version=${VERSION} -X github.com/seedlabs/webhook-operator/internal/version.commit=${COMMIT}" -o /out/welcome-web ./cmd/welcome-web

FROM gcr.io/distroless/static:nonroot AS welcome-web
COPY --from=builder /out/welcome-web /welcome-web
USER 65532:65532
ENTRYPOINT ["/welcome-web"]

FROM gcr.io/distroless/static:nonroot AS manager
WORKDIR /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
