# Build:  docker build --build-arg VERSION=v0.1.0 -t elector .
# Run:    docker run -p 8080:8080 -v elector-data:/data elector
#
# The builder compiles a static binary; the final image holds only that
# binary and an empty /data owned by the nonroot user (uid 65532), so that a
# fresh named volume mounted there is writable by the gateway.

FROM golang:1.26 AS build
WORKDIR /src
# go.work joins the server's module and the Go client's (client/go.mod).
COPY go.mod go.sum go.work go.work.sum ./
COPY client/go.mod client/
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/elector ./cmd/elector \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/elector /elector
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot
# The embedded backend (the default) stores elections in the volume.
ENV ELECTOR_EMBEDDED_DATA_DIR=/data
# The listen address is in the environment, so that `elector healthcheck`
# probes the same address (https when ELECTOR_TLS_CERT_FILE is set).
ENV ELECTOR_LISTEN=0.0.0.0:8080
EXPOSE 8080
VOLUME /data
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/elector", "healthcheck"]
ENTRYPOINT ["/elector"]
CMD ["serve"]
