#!/usr/bin/env bash
# Licences and build hygiene: the default build needs no cmake; `--no-default-features` drops
# LAME and libsoxr's bindings (the only LGPL code) and then answers mp3 with a 400 naming the
# field; every crate's licence is allowed by deny.toml (scripts/licenses.py, over `cargo
# metadata`), and the build without default features passes without deny.toml's LGPL
# exceptions; the licence texts the image ships can be made. About 1.5 minutes in CI: the build
# without default features shares every dependency's build with the default one (bytemuck's
# features are named for both in Cargo.toml; the lint runs over the workspace, whose
# dev-dependencies turn on naga's other outputs), so only the engine and the server compile again.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "-- cargo tree: no cmake in the default build, no LAME or libsoxr without default features"
if cargo tree --locked -e build,normal | grep -E '\bcmake v'; then
  echo "error: the default build depends on cmake" >&2
  exit 1
fi
if cargo tree --locked -p lyre-server --no-default-features -e build,normal | grep -i -E 'lame|soxr'; then
  echo "error: the build without default features still has LAME or libsoxr" >&2
  exit 1
fi
cargo tree --locked -p lyre-server -e normal -i mp3lame-sys >/dev/null
cargo tree --locked -p lyre-server -e normal -i libsoxr-sys >/dev/null

echo "-- licence policy (deny.toml)"
python3 scripts/licenses.py check
python3 scripts/licenses.py check --no-default-features --no-exceptions
if python3 scripts/licenses.py check --no-exceptions 2>/dev/null; then
  echo "error: the check let the default build's LGPL code through without its exception" >&2
  exit 1
fi

echo "-- the licence texts the image ships"
out="$(mktemp)"
python3 scripts/licenses.py bundle "$out"
for needle in "GNU LESSER GENERAL PUBLIC LICENSE" "opus-pure 0.2.2" "libsoxr-sys 0.1.4" "wgpu-core" "Apache License"; do
  grep -q "$needle" "$out" || { echo "error: the licence bundle lacks \`$needle\`" >&2; exit 1; }
done
rm -f "$out"

echo "-- the workspace without default features (no LGPL code): lint-clean, and mp3 is a 400 naming the field"
cargo clippy --locked --workspace --no-default-features --all-targets -- -D warnings
cargo test --locked -p lyre-server --no-default-features --lib -- audio:: http::openai::
