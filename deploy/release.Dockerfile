# The release image, built by goreleaser (.goreleaser.yaml) from the binary it
# has already cross-compiled for each platform: the build context holds only
# that binary. It matches the image the top-level Dockerfile builds from source.

# An empty /data for the nonroot user (uid 65532), made on the build platform
# so that no emulation is needed for the target platform.
FROM --platform=$BUILDPLATFORM busybox:1.37 AS data
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY elector /elector
COPY --from=data --chown=65532:65532 /out/data /data
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
