#!/usr/bin/env bash
# The benchmark driver for the lent H200 (run from the checkout root there, with `.gl`, `.dev` and,
# for the baseline, `.whl` carried; scripts/device/prepare.sh fills them here). Results go to $OUT.
#   h200.sh tests     the kernel tests (CPU references) on the GPU
#   h200.sh final     `lyre bench` on 0.6B over every batch, without cooperative matrices at 32,
#                     128 and 256,
#                     the official PyTorch implementation on the same GPU (`.whl` carried;
#                     QB_SECTIONS chooses bench_qwen.py's sections), 1.7B, and a per-dispatch
#                     profile
#   h200.sh kv        the kernel tests, then 0.6B after CONTEXT untimed frames as built, with
#                     the KV cache in f16 and with split attention off (BATCHES, CONTEXT,
#                     REPEATS: default 1,32,128, 500, 1), batch 1/32 at short context, a profile
#   h200.sh check     the kernel tests and 0.6B at batch 1 and 32 (a quick look at a change;
#                     BATCHES, and CHECK_17B=batches for 1.7B too)
#   h200.sh official  the official implementation alone
#   h200.sh v8        the kernel tests, the mat-vec microbenchmark at 1 and 2 rows, 0.6B at batch
#                     1/8/32 with each mat-vec kernel, and per-dispatch profiles at 8/32/128 with
#                     the codec's convs as chosen and as GEMMs everywhere (per-layer crossover)
#   h200.sh matvec    the kernel tests, the mat-vec microbenchmark (benches/matvec.rs), and 0.6B at
#                     batch 1/8/32 as built and with each v8 change off (LYRE_MATVEC=0,
#                     LYRE_FUSED_ATTENTION=0, both), with the codec convs as GEMMs at every row
#                     count, and 1.7B at batch 1/32 as built and as v7
#   h200.sh sweep     the kernel tests, the mat-vec microbenchmark swept over every kernel, split
#                     and GEMM tile at 2..64 rows (ROWS, SHAPES), then 0.6B at batch 1/8/32/64
#                     (BATCHES) as built and with each of SWEEP_ENVS
#   h200.sh v9        the kernel tests, the 1.7B shapes swept at 2-8 rows, and 0.6B (batch 1-16)
#                     and 1.7B (1-8) with the few-rows matmul on and off (LYRE_FEW_ROWS_MAX=0)
#   h200.sh coop      the kernel tests with cooperative matrices required (LYRE_REQUIRE_COOP=1),
#                     0.6B (BATCHES) with the GEMMs on cooperative matrices and without
#                     (LYRE_COOP=0) and with the codec convs on registers (LYRE_CONV_COOP=0), then
#                     the GEMM microbenchmark on registers and cooperative matrices (ROWS, SHAPES)
#   h200.sh parity    the fixture-parity tests that need only the CustomVoice fixture, as shipped,
#                     with the register GEMMs forced at every row count, and with the GEMMs on
#                     cooperative matrices at every row count (LYRE_PARITY_F16=1 tolerances;
#                     carry .gl and .fx only)
#   h200.sh v11       the kernel tests with cooperative matrices required, the grid-barrier probe
#                     (benches/grid_barrier.rs), 0.6B at batch 1/4/32 as built and with v10's conv
#                     K split (LYRE_CONV_MAX_SPLIT=8), and at batch 1 with every codec conv a GEMM
#   h200.sh barrier   the grid-barrier probe alone
#   h200.sh v12       the kernel tests with cooperative matrices required (the persistent layer's
#                     three times), 0.6B at batch 1/4/32 with persistent layers (as built) and
#                     without (LYRE_PERSISTENT=0) interleaved; at batch 1 with 64 and 256
#                     workgroups, a batch-1 profile, and 1.7B at batch 1/8 with and without
#   h200.sh ab        .dev/lyre against .dev/lyre-b (another build, put there by hand), interleaved
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
  timeout 300 "${LYRE:-.dev/lyre}" bench --model-dir "$dir" --json "$OUT/bench-$tag.json" "$@" > "$OUT/bench-$tag.txt" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && { log "bench $tag rc=$rc"; tail -5 "$OUT/bench-$tag.txt"; }
  grep -A 12 "^ batch" "$OUT/bench-$tag.txt" | grep -v "^ *[0-9.]* ms" | sed "s/^/$tag  /"
}

# save: everything so far into $OUT/results.tgz (one file comes back even if a later step is cut).
save() {
  tar -C "$OUT" --exclude results.tgz -czf /tmp/results.tgz . && mv /tmp/results.tgz "$OUT/results.tgz"
}

# kernel_tests: the kernel tests (CPU references) on the GPU.
kernel_tests() {
  for t in .dev/test-kernels .dev/test-decoder; do
    $t --test-threads 1 kernels linear fused conv attention decode_layer > "$OUT/$(basename $t).log" 2>&1
    echo "$(basename $t): $(grep -E '^test result' "$OUT/$(basename $t).log")"
    grep -E "FAILED|panicked" "$OUT/$(basename $t).log" | head -5
  done
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
  kernel_tests
  ;;
final)
  model 0.6B-CustomVoice /tmp/m06
  bench h200-0.6b /tmp/m06 --batch 1,8,32,64,128,256 --frames 30
  save
  # v10: the GEMMs on registers only (no cooperative matrices) against the table above.
  LYRE_COOP=0 bench nocoop /tmp/m06 --batch 32,128,256 --frames 10
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
v11)
  LYRE_REQUIRE_COOP=1 kernel_tests
  save
  log "grid barrier"
  timeout 120 .dev/bench-grid-barrier > "$OUT/grid-barrier.md" 2>&1; cat "$OUT/grid-barrier.md"
  save
  model 0.6B-CustomVoice /tmp/m06
  bench v11 /tmp/m06 --batch 1,4,32 --frames 20
  LYRE_CONV_MAX_SPLIT=8 bench ks8 /tmp/m06 --batch 1,4,32 --frames 20
  save
  # Every codec conv a GEMM at batch 1 (is the v8 crossover still right with cooperative tiles?).
  LYRE_CONV_GEMM_MIN_ROWS=1 LYRE_CONV_GEMM_MIN_TILES=0 bench convgemm-b1 /tmp/m06 --batch 1 --frames 20
  LYRE_CONV_GEMM_MIN_ROWS=1 LYRE_CONV_GEMM_MIN_TILES=0 bench profile-convgemm-b1 /tmp/m06 --batch 1 --frames 3 \
    --profile-dispatches
  ;;
v12)
  LYRE_REQUIRE_COOP=1 kernel_tests
  for r in 1 2 3; do
    echo "decode_layer run $r: $(.dev/test-kernels decode_layer 2>&1 | tee -a "$OUT/decode-layer.log" | grep '^test result')"
  done
  save
  model 0.6B-CustomVoice /tmp/m06
  for r in 1 2; do
    bench v12-$r /tmp/m06 --batch 1,4,32 --frames 20
    LYRE_PERSISTENT=0 bench off-$r /tmp/m06 --batch 1,4,32 --frames 20
    save
  done
  LYRE_PERSISTENT=64 bench g64 /tmp/m06 --batch 1 --frames 20
  LYRE_PERSISTENT=256 bench g256 /tmp/m06 --batch 1 --frames 20
  save
  bench profile /tmp/m06 --batch 1 --frames 3 --profile-dispatches
  save
  model 1.7B-CustomVoice /tmp/m17
  bench v12-17 /tmp/m17 --batch 1,8 --frames 10
  LYRE_PERSISTENT=0 bench off-17 /tmp/m17 --batch 1,8 --frames 10
  ;;
kv)
  # Stop 22 (written without a device): the kernel tests (the residency probe and the barrier
  # now check release after their wait; f16 caches; split attention), then after CONTEXT untimed
  # frames (default 500): as built (heads split at batch 1), with the KV cache in f16, and with
  # the split off (LYRE_ATTENTION_CHUNKS=1), interleaved; a per-dispatch profile under the new
  # labels.
  LYRE_REQUIRE_COOP=1 kernel_tests
  save
  model 0.6B-CustomVoice /tmp/m06
  for r in $(seq ${REPEATS:-1}); do
    bench kv32-$r /tmp/m06 --batch ${BATCHES:-1,32,128} --frames 20 --context ${CONTEXT:-500}
    bench kv16-$r /tmp/m06 --batch ${BATCHES:-1,32,128} --frames 20 --context ${CONTEXT:-500} --kv-cache f16
    LYRE_ATTENTION_CHUNKS=1 bench nosplit-$r /tmp/m06 --batch 1 --frames 20 --context ${CONTEXT:-500}
    save
  done
  bench short /tmp/m06 --batch 1,32 --frames 20
  bench profile /tmp/m06 --batch 1,32 --frames 3 --profile-dispatches
  ;;
barrier)
  log "grid barrier"
  timeout 200 .dev/bench-grid-barrier > "$OUT/grid-barrier.md" 2>&1; cat "$OUT/grid-barrier.md"
  ;;
ab)
  # Two builds interleaved: .dev/lyre against .dev/lyre-b (another build of the engine, put there by
  # hand), twice each, at BATCHES.
  model 0.6B-CustomVoice /tmp/m06
  for r in 1 2; do
    bench a$r /tmp/m06 --batch ${BATCHES:-1,64,128,256} --frames 20
    LYRE=.dev/lyre-b bench b$r /tmp/m06 --batch ${BATCHES:-1,64,128,256} --frames 20
  done
  ;;
check)
  kernel_tests
  model 0.6B-CustomVoice /tmp/m06
  bench check /tmp/m06 --batch ${BATCHES:-1,32} --frames 30
  [ -n "${CHECK_17B-}" ] && { model 1.7B-CustomVoice /tmp/m17; bench check-1.7b /tmp/m17 --batch "$CHECK_17B" --frames 30; }
  ;;
v8)
  kernel_tests
  LYRE_BENCH_ROWS=1,2 .dev/bench-matvec > "$OUT/matvec.md" 2>&1; cat "$OUT/matvec.md"
  save
  model 0.6B-CustomVoice /tmp/m06
  bench new /tmp/m06 --batch 1,8,32 --frames 30
  LYRE_MATVEC=0 bench nomatvec /tmp/m06 --batch 1,8,32 --frames 30
  save
  bench profile /tmp/m06 --batch 8,32,128 --frames 3 --profile-dispatches
  LYRE_CONV_GEMM_MIN_ROWS=1 bench profile-convgemm /tmp/m06 --batch 8,32,128 --frames 3 --profile-dispatches
  ;;
matvec)
  kernel_tests
  log "matvec microbenchmark"
  .dev/bench-matvec > "$OUT/matvec.md" 2>&1; cat "$OUT/matvec.md"
  save
  model 0.6B-CustomVoice /tmp/m06
  bench new /tmp/m06 --batch 1,8,32 --frames 30
  LYRE_MATVEC=0 bench nomatvec /tmp/m06 --batch 1,8,32 --frames 30
  LYRE_FUSED_ATTENTION=0 bench nofused /tmp/m06 --batch 1,8,32 --frames 30
  LYRE_MATVEC=0 LYRE_FUSED_ATTENTION=0 bench v7 /tmp/m06 --batch 1,8,32 --frames 30
  LYRE_CONV_GEMM_MIN_ROWS=1 bench convgemm1 /tmp/m06 --batch 1,8,32 --frames 30
  save
  bench profile-b1 /tmp/m06 --batch 1 --frames 5 --profile-dispatches
  save
  model 1.7B-CustomVoice /tmp/m17
  bench new-1.7b /tmp/m17 --batch 1,32 --frames 30
  LYRE_MATVEC=0 LYRE_FUSED_ATTENTION=0 bench v7-1.7b /tmp/m17 --batch 1,32 --frames 30
  ;;
v9)
  kernel_tests
  log "1.7B shapes at 2-8 rows"
  LYRE_BENCH_SWEEP=1 LYRE_BENCH_ROWS=2,4,8 LYRE_BENCH_SHAPES=1.7B LYRE_BENCH_CHAIN=200 \
    timeout 200 .dev/bench-matvec > "$OUT/sweep-1.7b.md" 2>&1
  save
  model 0.6B-CustomVoice /tmp/m06
  bench v9 /tmp/m06 --batch 1,2,4,8,16 --frames 20
  LYRE_FEW_ROWS_MAX=0 bench v9-off /tmp/m06 --batch 1,2,4,8,16 --frames 20
  save
  model 1.7B-CustomVoice /tmp/m17
  bench v9-1.7b /tmp/m17 --batch 1,4,8 --frames 20
  LYRE_FEW_ROWS_MAX=0 bench v9-1.7b-off /tmp/m17 --batch 1,4,8 --frames 20
  ;;
sweep)
  kernel_tests
  log "mat-vec / GEMM sweep"
  LYRE_BENCH_SWEEP=1 LYRE_BENCH_ROWS=${ROWS:-2,8,16,32,64} LYRE_BENCH_SHAPES=${SHAPES:-0.6B,cp} LYRE_BENCH_CHAIN=200 \
    timeout 240 .dev/bench-matvec > "$OUT/sweep.md" 2>&1
  log "sweep rc=$?"
  save
  model 0.6B-CustomVoice /tmp/m06
  bench base /tmp/m06 --batch ${BATCHES:-1,8,32,64} --frames 20
  for e in ${SWEEP_ENVS:-LYRE_FEW_ROWS_MAX=0 LYRE_GEMM_MAX_SPLIT=4}; do
    env "$e" bash -c "$(declare -f bench log); OUT=$OUT; bench ${e//=/-} /tmp/m06 --batch ${BATCHES:-1,8,32,64} --frames 20"
  done
  ;;
coop)
  LYRE_REQUIRE_COOP=1 kernel_tests
  save
  model 0.6B-CustomVoice /tmp/m06
  bench coop /tmp/m06 --batch ${BATCHES:-32,128,256} --frames 20
  save
  LYRE_COOP=0 bench nocoop /tmp/m06 --batch ${BATCHES:-32,128,256} --frames 20
  save
  LYRE_CONV_COOP=0 bench coop-noconv /tmp/m06 --batch ${BATCHES:-32,128,256} --frames 20
  save
  log "GEMM sweep"
  LYRE_BENCH_SWEEP=gemm LYRE_BENCH_ROWS=${ROWS:-32,64,128,256} LYRE_BENCH_SHAPES=${SHAPES:-0.6B,cp head} \
    LYRE_BENCH_CHAIN=100 timeout ${SWEEP_S:-120} .dev/bench-matvec > "$OUT/gemm-sweep.md" 2>&1
  log "sweep rc=$?"
  ;;
parity)
  export LYRE_SHARED=$PWD/.fx
  t="e2e::custom_voice_greedy_cases_match_reference batch::batched_sessions_equal_solo_runs
     batch::reused_slots_give_identical_audio pipeline:: talker::talker_layer_zero_input_is_the_prefill"
  # One test thread: with two the process crashes (SIGSEGV in the e2e thread, its instruction
  # pointer inside the mapped model.safetensors) — since v10 with the GEMMs forced, since v12 as
  # shipped too, with or without persistent layers (LYRE_PERSISTENT=0). See docs/PERFORMANCE.md v12.
  # shellcheck disable=SC2086
  .fx/test-parity --test-threads 1 $t 2>&1 | tee "$OUT/parity.log" | grep -E "^test result|FAILED"
  # shellcheck disable=SC2086
  LYRE_COOP=0 LYRE_GEMM_MIN_ROWS=1 LYRE_CONV_GEMM_MIN_ROWS=1 .fx/test-parity --test-threads 1 $t 2>&1 \
    | tee "$OUT/parity-forced.log" | grep -E "^test result|FAILED"
  # The GEMMs on cooperative matrices at every row count, held to f16-operand tolerances.
  # shellcheck disable=SC2086
  LYRE_PARITY_F16=1 LYRE_GEMM_MIN_ROWS=1 LYRE_CONV_GEMM_MIN_ROWS=1 LYRE_COOP_MIN_ROWS=1 .fx/test-parity \
    --test-threads 1 --nocapture $t 2>&1 | tee "$OUT/parity-coop.log" | grep -E "^test result|FAILED|max.Δ"
  ;;
esac
save
find "$OUT" -mindepth 1 -maxdepth 1 ! -name results.tgz -exec rm -rf {} +
log done
