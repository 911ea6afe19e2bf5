# syntax=docker/dockerfile:1
# Multi-stage build of the manager and the welcome-web operand: static binaries on distroless.
#   docker build --target manager -t IMG .
#   docker build --target welcome-web -t WELCOME_IMG .
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace

# Modules first, so they stay cached while the source changes.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY certs/ certs/
COPY cmd/ cmd/
COPY internal/ internal/
COPY webhooks/ webhooks/

# The same flags as `make build`.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/welcome-web ./cmd/welcome-web

FROM gcr.io/distroless/static:nonroot AS welcome-web
COPY --from=builder /out/welcome-web /welcome-web
USER 65532:65532
ENTRYPOINT ["/welcome-web"]

FROM gcr.io/distroless/static:nonroot AS manager
WORKDIR /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
