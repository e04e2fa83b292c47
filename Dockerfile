# Two stages: build a static binary with the Go toolchain, then ship it alone in an empty
# image that runs as a non-root user (the manifests also set runAsNonRoot).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/redis-operator ./cmd/redis-operator

FROM scratch
COPY --from=build /out/redis-operator /redis-operator
USER 65532:65532
ENTRYPOINT ["/redis-operator"]
