#!/usr/bin/env bash
# Fills the ignored folders that an NVIDIA GPU host needs for scripts/device/nvidia.sh
# (docs/performance.md, "Reproducing the figures"):
#   .gl/   the Vulkan loader and glvnd libraries (those machines have the NVIDIA driver, no loader),
#          and libsoxr (the resampler `lyre` links)
#   .dev/  the release `lyre`, the kernel-test binaries, the mat-vec and grid-barrier
#          microbenchmarks, make_random_real.py with the 0.6B and 1.7B CustomVoice manifests and
#          the tokenizer files, and the official baseline script
#   .whl/  the wheels the official baseline, the peers (faster-qwen3-tts, faster-qwen3-tts-batch)
#          and the load generator need beside the machine's torch
# Then: run with carry [".gl", ".dev", ".whl"] and `bash scripts/device/nvidia.sh MODE`.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED="${LYRE_SHARED:-$(cd .. && pwd)/shared}"
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || printf '/.gl/\n/.dev/\n/.whl/\n' >> .git/info/exclude

if [ -z "$(ls .gl/libsoxr0_*.deb 2>/dev/null)" ]; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update >/dev/null
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 libsoxr0 libgomp1)
fi

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
lyre_install_packages "${LYRE_BUILD_PACKAGES[@]}"
cargo build --release --locked -p lyre-server
cargo build --release --locked -p lyre-engine --example fidelity
rm -rf .dev && mkdir -p .dev/manifests .dev/tok
cp target/release/lyre target/release/examples/fidelity .dev/
# The kernel tests and microbenchmarks (`nvidia.sh tests`) only with PREPARE_TESTS=1: on two
# cores they take longer to build than the rest.
if [ "${PREPARE_TESTS:-0}" = 1 ]; then
  artifacts() { # artifacts KIND: "name path" of each executable cargo built (JSON messages on stdin)
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == [sys.argv[1]]:
        print(m["target"]["name"].replace("_", "-"), m["executable"])' "$1"
  }
  cargo test --release --locked -p lyre-engine --test kernels --test decoder --test parity --no-run \
    --message-format=json 2>/dev/null | artifacts test | while read -r name path; do cp "$path" ".dev/test-$name"; done
  cargo bench --locked -p lyre-engine --bench matvec --bench grid_barrier --no-run --message-format=json 2>/dev/null \
    | artifacts bench | while read -r name path; do cp "$path" ".dev/bench-$name"; done
fi
strip .dev/lyre .dev/fidelity .dev/bench-* .dev/test-* 2>/dev/null || true
cp "$SHARED/reference/oracle/make_random_real.py" "$SHARED/reference/oracle/tiny_configs.py" .dev/
for m in 0.6B-CustomVoice 1.7B-CustomVoice 0.6B-Base; do
  cp "$SHARED/reference/manifests/Qwen3-TTS-12Hz-$m.json" .dev/manifests/
done
for f in vocab.json merges.txt tokenizer_config.json; do cp "$SHARED/fixtures/tiny-custom-voice/$f" .dev/tok/; done
cp "$SHARED/device/baseline/bench_qwen.py" .dev/

if [ -z "$(ls .whl/*.whl 2>/dev/null)" ]; then
  # The official package pins transformers 4.57.3 (its own PYTHONPATH there); faster-qwen3-tts
  # 0.5.4 runs on the machine's transformers (>= 5.15) with qwen-tts-hf (and soxr, which
  # transformers 5's audio utilities import); the load generator needs websockets and httpx.
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl qwen-tts==0.1.1 transformers==4.57.3 accelerate==1.12.0 huggingface_hub==0.36.2 tokenizers==0.22.2 \
    faster-qwen3-tts==0.5.4 faster-qwen3-tts-batch==0.2.0 qwen-tts-hf==0.1.1.post1 soundfile==0.14.0 cffi==1.17.1 pycparser==2.22 soxr==1.1.0 \
    websockets==17.4 httpx==0.28.1 httpcore==1.0.9 h11==0.16.0 anyio==4.9.0 sniffio==1.3.1 \
    certifi==2025.4.26 idna==3.10
  # faster-qwen3-tts-batch runs on transformers 4.57 beside the official package, with the last
  # faster-qwen3-tts for it (one pip call cannot take two versions of a package).
  python3 -m pip download -q --no-deps -d .whl faster-qwen3-tts==0.3.2
fi
du -sh .gl .dev .whl
