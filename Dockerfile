# Latch's container image (docs/deploy.md#container).
#
# From source — a Swift build stage, then the runtime stage:
#   podman build --format=docker -t latch .    (or docker build -t latch .; the Swift image comes from Docker Hub)
# From a latch binary built elsewhere, without the Swift image — the runtime stage alone:
#   podman build --format=docker --target runtime --build-arg BINARY_FROM=context -t latch CONTEXT
# where CONTEXT holds dist/latch (and, for a binary that is not linked with --static-swift-stdlib, the shared
# libraries it needs from the Swift toolchain in dist/lib/). Build with --format=docker to keep the HEALTHCHECK
# (the OCI image format has no health check).
#
# Run (the data in a volume; the issuer is the public URL clients use, TLS in front of Latch):
#   podman run -d --name latch -p 8080:8080 -v latch-data:/var/lib/latch \
#     -e LATCH_ISSUER=https://id.example.com -e LATCH_PRODUCTION=true -e LATCH_REGISTRATION_TEST_KEYS=false latch

ARG SWIFT_IMAGE=docker.io/library/swift:6.3-bookworm
ARG RUNTIME_BASE=docker.io/library/debian:bookworm-slim
# Where the runtime stage takes latch from: "build" (compiled below) or "context" (dist/ in the build context).
ARG BINARY_FROM=build

# --- Build: a release binary with the Swift runtime linked in, so the runtime image needs no toolchain. ---
FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The manifest alone first: resolving the dependencies is a layer of its own, reused while only sources change.
COPY Package.swift ./
RUN swift package resolve
# The manifest names every target, tests and examples included, so their folders must be there.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Examples ./Examples
RUN swift build -c release --static-swift-stdlib --product latch \
    && mkdir -p /dist/lib \
    && cp "$(swift build -c release --show-bin-path)/latch" /dist/latch \
    && strip /dist/latch

# The binary (and any libraries) from the build stage ...
FROM scratch AS binary-build
LABEL latch.build-stage=binary
COPY --from=build /dist/ /dist/

# ... or from the build context's dist/ folder.
FROM scratch AS binary-context
# (The label lets a build script find this stage's untagged image and remove it.)
LABEL latch.build-stage=binary
COPY dist/ /dist/

FROM binary-${BINARY_FROM} AS binary

# --- Runtime: Debian bookworm slim, a non-root user, the data in a volume. ---
FROM ${RUNTIME_BASE} AS runtime
# libcurl4: Foundation's URLSession (latch health and the CLI's client commands); ca-certificates: TLS to Apple, Google
# and upstream identity providers; tzdata: Foundation's time zones.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates libcurl4 tzdata \
    && rm -rf /var/lib/apt/lists/*
# A fixed uid/gid (10001), so that a volume's owner and Kubernetes' runAsNonRoot can be checked by number.
RUN groupadd --system --gid 10001 latch \
    && useradd --system --uid 10001 --gid latch --home-dir /var/lib/latch --no-create-home --shell /usr/sbin/nologin latch \
    && install -d -m 0700 -o latch -g latch /var/lib/latch
COPY --from=binary /dist/ /opt/latch/
# Libraries beside a binary that is not statically linked (dist/lib/) are found through the loader's cache.
RUN ln -s /opt/latch/latch /usr/local/bin/latch \
    && echo /opt/latch/lib > /etc/ld.so.conf.d/latch.conf && ldconfig \
    && latch --version
ENV LATCH_HTTP_HOST=0.0.0.0 \
    LATCH_HTTP_PORT=8080 \
    LATCH_DATA_DIR=/var/lib/latch
VOLUME /var/lib/latch
WORKDIR /var/lib/latch
EXPOSE 8080
USER 10001:10001
# latch health: GET /health/ready on this container's own listener; exit 0 when ready, 3 otherwise.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["latch", "health", "--timeout", "5"]
ENTRYPOINT ["latch"]
CMD ["serve"]
