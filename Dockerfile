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
# The system's CA bundle: backups and restores verify an HTTPS store (AWS S3 and others)
# against it unless the RedisBackup names a caSecret.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/redis-operator /redis-operator
USER 65532:65532
ENTRYPOINT ["/redis-operator"]
