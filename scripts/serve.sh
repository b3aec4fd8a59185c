#!/usr/bin/env bash
# Starts the Lyre server from a fresh Debian machine with Rust and gcc: installs the Vulkan loader,
# Mesa's drivers and what the build needs (pkg-config, libsoxr-dev) when they are missing (as
# root, with apt; otherwise says what to install), then builds and runs `lyre serve`.
#
#   bash scripts/serve.sh                          # the demo model, config/dev.toml (127.0.0.1:8080)
#   bash scripts/serve.sh --model-dir models/0.6b-cv --listen 0.0.0.0:8080   # any `lyre serve` flags
#
# LYRE_SKIP_PACKAGES=1 skips the package check (e.g. a GPU host whose driver is installed another way).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh

if [ "$(uname -s)" = Linux ] && [ "${LYRE_SKIP_PACKAGES:-0}" != 1 ]; then
  if ! lyre_install_packages "${LYRE_RUNTIME_PACKAGES[@]}" "${LYRE_BUILD_PACKAGES[@]}"; then
    echo "       (without libsoxr-dev the build fails; without a Vulkan driver the server starts" >&2
    echo "        but never turns ready;" >&2
    echo "        LYRE_SKIP_PACKAGES=1 skips this check)" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null; then
  echo "error: cargo is not on PATH: install Rust (rustup) first" >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  set -- --config config/dev.toml
fi
exec cargo run --release --locked -p lyre-server -- serve "$@"
