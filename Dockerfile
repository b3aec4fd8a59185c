# Lyre: the `lyre` server on a slim Debian runtime with the Vulkan loader. Needs BuildKit
# (Docker >= 23, or DOCKER_BUILDKIT=1 on 20.10). docs/deploy.md has the whole story.
#
#   docker build -t lyre .                                     # compile in a Rust image
#   docker build -t lyre --build-arg LYRE_BUILD=prebuilt \
#       --build-arg LYRE_BINARY=target/release/lyre .          # take a binary built on the host
#       (first: python3 scripts/licenses.py bundle target/THIRD-PARTY-LICENSES.txt)
#
# Without the `mp3` and `soxr` features (no LAME, no libsoxr: no LGPL code):
#   --build-arg LYRE_FEATURES=--no-default-features
#
# Run on NVIDIA hosts with the NVIDIA container toolkit (`--gpus all`, or the device plugin on
# Kubernetes). wgpu talks Vulkan, so the driver's *graphics* capability must be mounted, not only
# compute: NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility (set below). The toolkit then mounts
# the Vulkan ICD json (/usr/share/vulkan/icd.d/nvidia_icd.json or /etc/vulkan/icd.d/) and
# libGLX_nvidia.so.0. Where an older toolkit mounts the library but no json, point the loader at
# the one shipped here: VK_DRIVER_FILES=/usr/local/share/lyre/nvidia_icd.json.

ARG RUST_IMAGE=rust:1.95.0-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# `source` compiles in RUST_IMAGE; `prebuilt` copies LYRE_BINARY from the build context (a
# binary built on a Debian 12 host, for machines without access to a Rust image).
ARG LYRE_BUILD=source
# Empty, or --no-default-features for a build without mp3 and soxr (no LAME, no libsoxr: no LGPL
# code; the runtime then has no libsoxr0 either).
ARG LYRE_FEATURES=

# ---- build from source: pinned toolchain (rust-toolchain.toml), Cargo.lock, cached deps ----
FROM ${RUST_IMAGE} AS build-source
# The version of every Debian package follows the bookworm point release.
# gcc builds LAME (the mp3 feature) and SQLite; pkg-config finds libsoxr-dev (the soxr feature);
# python3 writes the third-party licence texts.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc pkg-config libsoxr-dev python3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY rust-toolchain.toml ./
# Installs the pinned toolchain in its own layer (changes only with rust-toolchain.toml).
RUN rustup show active-toolchain
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY scripts/licenses.py scripts/licenses.py
COPY LICENSE ./
ARG LYRE_FEATURES
# The registry and target/ live in BuildKit cache mounts: a source change recompiles only the
# two workspace crates, never the dependencies.
# hadolint ignore=SC2086
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p lyre-server $LYRE_FEATURES \
    && cp target/release/lyre /lyre \
    && python3 scripts/licenses.py bundle $LYRE_FEATURES /THIRD-PARTY-LICENSES.txt

# ---- or take a binary built on the host ----
FROM scratch AS build-prebuilt
ARG LYRE_BINARY=target/release/lyre
ARG LYRE_LICENSES=target/THIRD-PARTY-LICENSES.txt
COPY ${LYRE_BINARY} /lyre
COPY ${LYRE_LICENSES} /THIRD-PARTY-LICENSES.txt

# One of the two stages above (hadolint takes it for an untagged image).
# hadolint ignore=DL3006
FROM build-${LYRE_BUILD} AS build

# ---- runtime ----
FROM ${RUNTIME_IMAGE}
# `true` adds Mesa's drivers (lavapipe: Vulkan on the CPU) for tests on machines without a GPU.
# Never on GPU hosts: serving needs model.allow_cpu_adapter there, which is an outage in disguise.
ARG WITH_MESA=false
ARG LYRE_FEATURES
# libsoxr0 for the `soxr` feature (default), unless the build left it out.
# hadolint ignore=DL3008,SC2086
RUN soxr=libsoxr0; case "$LYRE_FEATURES" in *soxr*) ;; *--no-default-features*) soxr= ;; esac \
    && apt-get update \
    && apt-get install -y --no-install-recommends libvulkan1 $soxr ca-certificates curl \
    && if [ "$WITH_MESA" = true ]; then apt-get install -y --no-install-recommends mesa-vulkan-drivers; fi \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/lyre --create-home lyre \
    && mkdir -p /models && chown lyre:lyre /models
COPY --from=build /lyre /usr/local/bin/lyre
# Lyre's licence and the licence texts of every crate the binary links (scripts/licenses.py).
COPY LICENSE /usr/share/doc/lyre/LICENSE
COPY --from=build /THIRD-PARTY-LICENSES.txt /usr/share/doc/lyre/THIRD-PARTY-LICENSES.txt
COPY config /etc/lyre
# The image's configuration: the defaults, with the model at /models (deploy/image.toml).
COPY deploy/image.toml /etc/lyre/lyre.toml
COPY deploy/nvidia_icd.json /usr/local/share/lyre/nvidia_icd.json
# Every key (/etc/lyre/default.toml documents them) can be overridden by LYRE_<SECTION>_<KEY>
# (docker run -e LYRE_ENGINE_MAX_SESSIONS=64), or the file replaced by mounting one. The model
# is /models (the file's model.dir); -e LYRE_MODEL_REPO=Qwen/... downloads a repo instead, and
# -e LYRE_MODEL_DIR=/models/NAME picks one checkpoint of several.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility \
    LYRE_CONFIG=/etc/lyre/lyre.toml \
    LYRE_SERVER_LISTEN=0.0.0.0:8080 \
    HF_HOME=/var/lib/lyre/huggingface \
    XDG_CACHE_HOME=/var/lib/lyre/cache
VOLUME ["/models"]
# Numeric, so Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /var/lib/lyre
EXPOSE 8080
# SIGTERM drains: readiness turns false, new sessions get 503, live ones finish (at most
# server.drain_timeout_s = 30 s), exit 0. Give `docker stop` more than that: --stop-timeout 45.
STOPSIGNAL SIGTERM
# On the port of LYRE_SERVER_LISTEN. Liveness only (the process answers and its GPU worker is alive); load balancers should use
# /readyz, which also waits for the model and the warm-up frame and turns false while draining.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
    CMD ["sh", "-c", "curl -fsS -o /dev/null http://127.0.0.1:${LYRE_SERVER_LISTEN##*:}/healthz || exit 1"]
ENTRYPOINT ["/usr/local/bin/lyre"]
CMD ["serve"]
