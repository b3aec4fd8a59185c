#!/usr/bin/env bash
# The benchmark driver for the lent H200 (run from the checkout root there, with `.gl`, `.dev` and,
# for the baseline, `.whl` carried; scripts/device/prepare.sh fills them here). Results go to $OUT.
#   h200.sh ab        kernel tests on the GPU, then `lyre bench` on 0.6B with one switch changed per run
#   h200.sh final     `lyre bench` 0.6B and 1.7B over every batch, a per-dispatch profile, and the
#                     official PyTorch implementation on the same GPU (QB_SECTIONS to choose)
set -uo pipefail
MODE=${1:-ab}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export LYRE_MODEL_ALLOW_CPU_ADAPTER=0 RUST_LOG=warn
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,memory.used --format=csv > "$OUT/gpu.txt" 2>&1
log() { echo "[$(date +%T)] $*"; }

model() { # model NAME DIR
  [ -e "$2/model.safetensors" ] && return
  python3 .dev/make_random_real.py ".dev/manifests/Qwen3-TTS-12Hz-$1.json" "$2" --tokenizer-dir .dev/tok > "$OUT/make-$1.log" 2>&1 \
    || { log "make_random_real $1 failed"; tail -5 "$OUT/make-$1.log"; exit 1; }
}

bench() { # bench TAG DIR ARGS... (env set by the caller)
  local tag=$1 dir=$2; shift 2
  log "bench $tag"
  timeout 300 .dev/lyre bench --model-dir "$dir" --json "$OUT/bench-$tag.json" "$@" > "$OUT/bench-$tag.txt" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && { log "bench $tag rc=$rc"; tail -5 "$OUT/bench-$tag.txt"; }
  grep -A 12 "^ batch" "$OUT/bench-$tag.txt" | grep -v "^ *[0-9.]* ms" | sed "s/^/$tag  /"
}

case "$MODE" in
ab)
  log "kernel tests on the GPU"
  for t in .dev/test-kernels .dev/test-decoder; do
    $t --test-threads 1 kernels linear fused conv > "$OUT/$(basename $t).log" 2>&1
    echo "$(basename $t): $(grep -E '^test result' "$OUT/$(basename $t).log")"
    grep -E "FAILED|panicked" "$OUT/$(basename $t).log" | head -5
  done
  model 0.6B-CustomVoice /tmp/m06
  B=${B:-1,8,32,128}
  F=${F:-10}
  bench default /tmp/m06 --batch "$B" --frames "$F"
  LYRE_SHADER_CHECKS=1 bench checks /tmp/m06 --batch "$B" --frames "$F"
  LYRE_CONV_KERNEL=tiled bench convtiled /tmp/m06 --batch "$B" --frames "$F"
  LYRE_GEMM_MAX_SPLIT=1 bench nosplit /tmp/m06 --batch "$B" --frames "$F"
  LYRE_GEMM_MIN_ROWS=0 bench nogemm /tmp/m06 --batch 1,8,32 --frames "$F"
  bench b256 /tmp/m06 --batch 256 --frames "$F"
  bench profile /tmp/m06 --batch 1,32,128 --frames 3 --profile-dispatches
  ;;
final)
  model 0.6B-CustomVoice /tmp/m06
  bench h200-0.6b /tmp/m06 --batch 1,8,32,64,128,256 --frames 30
  bench profile /tmp/m06 --batch 1,32,256 --frames 3 --profile-dispatches
  model 1.7B-CustomVoice /tmp/m17
  bench h200-1.7b /tmp/m17 --batch 1,8,32,64,128,256 --frames 20
  rm -rf /tmp/m17
  if [ -n "$(ls .whl/*.whl 2>/dev/null)" ]; then
    log "official baseline"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > "$OUT/pip.log" 2>&1 \
      || { log "pip failed"; tail -5 "$OUT/pip.log"; }
    cp .dev/bench_qwen.py .dev/tiny_configs.py scripts/device/official_sections.py /tmp/
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 QB_SECTIONS=${QB_SECTIONS:-env,gen1,batch,graph} QB_BUDGET_S=${QB_BUDGET_S:-240} \
      timeout 300 python3 /tmp/official_sections.py > "$OUT/qwen_bench.log" 2>&1
    log "python rc=$?"
    grep -E "SUMMARY|Error" "$OUT/qwen_bench.log" | tail -3 | cut -c1-1500
  fi
  ;;
esac
log done
