# Lyre: build stage (pinned toolchain and Cargo.lock), then a slim Debian runtime with the
# Vulkan loader. On NVIDIA hosts run with the NVIDIA container toolkit and
# NVIDIA_DRIVER_CAPABILITIES including `graphics` so the Vulkan ICD is mounted.
ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends cmake make gcc g++ pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crates crates
COPY tests tests
RUN cargo build --release --locked -p lyre-server && cp target/release/lyre /lyre

FROM ${RUNTIME_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends libvulkan1 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /var/lib/lyre --create-home lyre
COPY --from=build /lyre /usr/local/bin/lyre
COPY config /etc/lyre
ENV NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility \
    LYRE_SERVER_LISTEN=0.0.0.0:8080 \
    LYRE_MODEL_DIR=/models \
    XDG_CACHE_HOME=/var/lib/lyre/cache
VOLUME ["/models"]
USER lyre
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/lyre"]
CMD ["serve", "--config", "/etc/lyre/default.toml"]
