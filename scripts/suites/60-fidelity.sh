#!/usr/bin/env bash
# The fidelity check (scripts/fidelity/) on the tiny CustomVoice fixture: the official
# implementation's outputs for 6 frames are stored in crates/lyre-engine/tests/data/fidelity
# (made by scripts/fidelity/official.py on the CPU); Lyre's fidelity example runs the same prompt
# teacher-forced alone and in a tick of 4 sessions, then greedy, with the KV cache in f32 and in
# f16, and compare.py must find every position within official bf16's own error (cosine >= 0.9999)
# and the greedy codes equal to official float32's in every frame. The same scripts make the
# real-size report on a GPU host (docs/performance.md). To remake the stored outputs (in the
# environment of ../shared/reference/oracle/setup_env.sh):
#   python scripts/fidelity/official.py ../shared/fixtures/tiny-custom-voice DIR --frames 6 --device cpu
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED="${LYRE_SHARED:-$(cd .. && pwd)/shared}"
FIXTURE="$SHARED/fixtures/tiny-custom-voice"
STORED=crates/lyre-engine/tests/data/fidelity/tiny-custom-voice
# shellcheck source=scripts/lib/python.sh
source scripts/lib/python.sh
VENV="$PWD/target/fidelity-venv"
lyre_venv "$VENV"
lyre_venv_install "$VENV" "$(sha256sum < scripts/fidelity/requirements.txt)" \
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r scripts/fidelity/requirements.txt
# `cargo test --workspace` builds the examples too (with the workspace's features: building the
# example alone would rebuild its dependencies); after test-all.sh's run this is a no-op.
cargo test --workspace --locked --no-run -q
case_dir=$(mktemp -d "$PWD/target/fidelity-case.XXXXXX")
trap 'rm -rf "$case_dir"' EXIT
cp "$STORED"/* "$FIXTURE/config.json" "$FIXTURE/generation_config.json" "$case_dir/"
for kv in f32 f16; do
  LYRE_MODEL_ALLOW_CPU_ADAPTER=1 target/debug/examples/fidelity "$FIXTURE" "$case_dir" "$case_dir/kv-$kv.safetensors" \
    --kv-cache "$kv" --batch 4 > "$case_dir/lyre-$kv.log" 2>&1 || { tail -20 "$case_dir/lyre-$kv.log"; exit 1; }
done
"$VENV/bin/python" scripts/fidelity/compare.py "$case_dir" "$case_dir"/kv-*.safetensors --model tiny \
  --json "$case_dir/fidelity.json" --require-cosine 0.9999 --require-greedy
