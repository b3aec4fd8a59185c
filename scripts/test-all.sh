#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs the system packages it needs (Debian),
# checks formatting and lints, then runs every Rust test and the end-to-end client tests.
# GPU tests run on whatever adapter wgpu finds; CI has only Mesa's lavapipe (Vulkan on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

SHARED="${LYRE_SHARED:-$(cd .. && pwd)/shared}"
# A clone made elsewhere (e.g. /tmp) finds the workplace's shared folder too.
[ -d "$SHARED/fixtures" ] || [ -n "${LYRE_SHARED:-}" ] || SHARED=/work/shared
if [ ! -d "$SHARED/fixtures" ]; then
  echo "error: the test fixtures are not at $SHARED/fixtures (set LYRE_SHARED)" >&2
  exit 1
fi
export LYRE_SHARED="$SHARED"

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
lyre_install_packages "${LYRE_RUNTIME_PACKAGES[@]}" "${LYRE_BUILD_PACKAGES[@]}" "${LYRE_TEST_PACKAGES[@]}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/lyre-xdg}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# Each section's header says how long the run has taken so far (CI must stay under 30 minutes).
section() { echo "== $* [$((SECONDS / 60))m$((SECONDS % 60))s]"; }

section "cargo fmt --check"
cargo fmt --all -- --check
section "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
section "cargo test"
cargo test --workspace --locked
section "parity and decoder again with the GPU kernels forced on (subgroup mat-vec, attention and RoPE; persistent layers (one workgroup) at one row, heads split into up to 4 parts from 8 keys; few-rows matmuls at 2-8 rows, GEMMs above; GEMM convs at every row count, the narrow kernel for the last conv)"
# The [engine.tuning] keys (docs/kernels.md), as LYRE_ENGINE_TUNING_* variables, on the test
# binaries the run above built (run directly: `cargo test --test parity` alone would resolve the
# workspace's features differently and rebuild). The kernel tests, the frame-by-frame decode
# (kernel-level ring tests cover the GEMM's history reads) and the decoder's batched-vs-alone test
# (80 s here; the GEMM conv tests straddle sessions, and the engine's batched = solo parity test
# reruns), the long-text segment tests (seams are engine logic, and they take 7 minutes with
# these kernels on lavapipe) and the 45-second reference clip (a 600-row prompt through the same
# GEMM and split attention as the other cases' prompts; 67 s of the pass) are not rerun.
forced=(MATMUL=subgroup PERSISTENT=on PERSISTENT_GROUPS=1 ATTENTION_CHUNKS=4 ATTENTION_CHUNK_KEYS=4
  GEMM=on GEMM_MIN_ROWS=1 FEW_ROWS=on FEW_ROWS_MIN_ROWS=2 FEW_ROWS_MIN_COLS=1
  CONV_GEMM_MIN_ROWS=1 CONV_GEMM_MIN_COLS=1 CONV_GEMM_MIN_TILES=0 CONV_NARROW=on)
test_binary() {
  cargo test --workspace --locked --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$1"
}
for name in decoder parity; do
  binary="$(test_binary "$name")"
  [ -x "$binary" ] || { echo "error: no test binary for $name" >&2; exit 1; }
  echo "-- $name: $binary"
  (cd crates/lyre-engine && env "${forced[@]/#/LYRE_ENGINE_TUNING_}" "$binary" --skip kernels:: \
    --skip streaming::frame_by_frame --skip streaming::batched_sessions_equal_each_session_alone \
    --skip segments:: --skip long_reference::)
done

if [ -d tests/e2e ]; then
  section "end-to-end client tests"
  python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
  # `cargo test --workspace` built the server binary for its integration tests.
  [ -x target/debug/lyre ] || cargo build --locked --workspace
  LYRE_BIN="$PWD/target/debug/lyre" python3 -m pytest -q tests/e2e
fi
# Further suites (reliability, deployment, browser, ...): one script each, run in name order.
for suite in scripts/suites/*.sh; do
  [ -e "$suite" ] || continue
  section "suite $(basename "$suite")"
  bash "$suite"
done
section "all tests passed"
