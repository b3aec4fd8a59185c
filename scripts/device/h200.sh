#!/usr/bin/env bash
# The benchmark driver for the lent H200 (run from the checkout root there, with `.gl`, `.dev` and,
# for the baseline, `.whl` carried; scripts/device/prepare.sh fills them here). Results go to $OUT.
#   h200.sh tests     the kernel tests (CPU references) on the GPU
#   h200.sh final     `lyre bench` on 0.6B at batch 256 with each tile switch, keeping the faster;
#                     then 0.6B over every batch, the official PyTorch implementation on the same
#                     GPU (`.whl` carried; QB_SECTIONS chooses bench_qwen.py's sections), 1.7B,
#                     and a per-dispatch profile
#   h200.sh official  the official implementation alone
#   h200.sh parity    the fixture-parity tests that need only the CustomVoice fixture, as shipped
#                     and with the GEMMs forced at every row count (carry .gl and .fx only)
# Everything lands in $OUT/results.tgz, saved after each step.
set -uo pipefail
MODE=${1:-final}
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

# fastest TAG... : the tag whose bench-TAG.json has the lowest ms/frame at its largest batch.
fastest() {
  python3 - "$OUT" "$@" <<'PY'
import json, sys
out, tags = sys.argv[1], sys.argv[2:]
def ms(tag):
    try:
        runs = json.load(open(f"{out}/bench-{tag}.json"))["runs"]
        return max(runs, key=lambda r: r["batch"])["ms_per_frame"]
    except Exception:
        return float("inf")
print(min(tags, key=ms))
PY
}

# save: everything so far into $OUT/results.tgz (one file comes back even if a later step is cut).
save() {
  tar -C "$OUT" --exclude results.tgz -czf /tmp/results.tgz . && mv /tmp/results.tgz "$OUT/results.tgz"
}

official() {
  [ -n "$(ls .whl/*.whl 2>/dev/null)" ] || { log "no wheels: official baseline skipped"; return; }
  log "official baseline"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > "$OUT/pip.log" 2>&1 \
    || { log "pip failed"; tail -5 "$OUT/pip.log"; }
  cp .dev/bench_qwen.py .dev/tiny_configs.py scripts/device/official_sections.py /tmp/
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 QB_SECTIONS=${QB_SECTIONS:-env,gen1,graph,batch} QB_BUDGET_S=${QB_BUDGET_S:-170} \
    timeout 260 python3 /tmp/official_sections.py > "$OUT/qwen_bench.log" 2>&1
  log "python rc=$?"
  grep -E "SUMMARY|Error" "$OUT/qwen_bench.log" | tail -3 | cut -c1-2500
}

case "$MODE" in
tests)
  for t in .dev/test-kernels .dev/test-decoder; do
    $t --test-threads 1 kernels linear fused conv attention > "$OUT/$(basename $t).log" 2>&1
    echo "$(basename $t): $(grep -E '^test result' "$OUT/$(basename $t).log")"
    grep -E "FAILED|panicked" "$OUT/$(basename $t).log" | head -5
  done
  ;;
final)
  model 0.6B-CustomVoice /tmp/m06
  # The tile switches measured against each other at batch 256; each winner is kept.
  for tile in 64 128 128x128; do
    LYRE_CONV_TILE=$tile bench conv$tile /tmp/m06 --batch 256 --frames 8
  done
  best=$(fastest conv64 conv128 conv128x128); export LYRE_CONV_TILE=${best#conv}
  for tile in 64 128; do
    LYRE_GEMM_LARGE_TILE=$tile bench large$tile /tmp/m06 --batch 256 --frames 8
  done
  best=$(fastest large64 large128); export LYRE_GEMM_LARGE_TILE=${best#large}
  env | grep -E "^LYRE_(CONV|GEMM)" | tee "$OUT/choices.env"
  save
  bench h200-0.6b /tmp/m06 --batch 1,8,32,64,128,256 --frames 30
  save
  official
  save
  model 1.7B-CustomVoice /tmp/m17
  bench h200-1.7b /tmp/m17 --batch 1,8,32,128,256 --frames 10
  save
  bench profile /tmp/m06 --batch 1,32,256 --frames 3 --profile-dispatches
  ;;
official)
  official
  ;;
parity)
  export LYRE_SHARED=$PWD/.fx
  t="e2e::custom_voice_greedy_cases_match_reference batch::batched_sessions_equal_solo_runs
     batch::reused_slots_give_identical_audio pipeline:: talker::talker_layer_zero_input_is_the_prefill"
  # shellcheck disable=SC2086
  .fx/test-parity --test-threads 2 $t 2>&1 | tee "$OUT/parity.log" | grep -E "^test result|FAILED"
  # shellcheck disable=SC2086
  LYRE_GEMM_MIN_ROWS=1 LYRE_CONV_GEMM_MIN_ROWS=1 .fx/test-parity --test-threads 2 $t 2>&1 \
    | tee "$OUT/parity-forced.log" | grep -E "^test result|FAILED"
  ;;
esac
save
find "$OUT" -mindepth 1 -maxdepth 1 ! -name results.tgz -exec rm -rf {} +
log done
