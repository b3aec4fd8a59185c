#!/usr/bin/env bash
# The benchmark driver for an NVIDIA GPU host (H100, H200: Vulkan through the NVIDIA driver). Run
# from the checkout root there, with `.gl` and `.dev` carried (and `.whl` for the official and
# peer baselines); scripts/device/prepare.sh fills them here. Results go to $OUT as two files.
#   nvidia.sh tests     the kernel tests (CPU references) on the GPU (TEST_FILTERS, TEST_TIMEOUT)
#   nvidia.sh bench     `lyre bench` of both models (or MODELS) at BATCHES only (the first part of engine)
#   nvidia.sh engine    `lyre bench`: 0.6B and 1.7B CustomVoice at BATCHES (1,8,32,64,256), per-dispatch
#                       profiles at 8/32/64, the KV cache in f32/f16 and attention split/unsplit
#                       after 500 and 2000 positions, 0.6B Base at 8/32 (the batch peer's checkpoint)
#   nvidia.sh server    `lyre serve` on 1.7B CustomVoice: scripts/ttfa_modes.py (one request at a
#                       time), then open-loop load (scripts/loadgen.py
#                       --rates RATES over TRANSPORTS: the WebSocket, then streaming POST
#                       /v1/audio/speech); SLACKS="0 default" also runs it with launch_slack_ms = 0,
#                       FIRST_AUDIO="false default" with fast_first_audio off; TEXT_MODES="default
#                       streaming" also sends every request with text_mode streaming; PROCS="1 4"
#                       also spreads the arrivals over four client processes;
#                       SERVER_LYRE serves another build
#   nvidia.sh peers     the official implementation's CUDA-graph loop, faster-qwen3-tts and
#                       faster-qwen3-tts-batch (scripts/device/peers.py) on the same checkpoints
#   nvidia.sh faster    the two faster-qwen3-tts packages and Lyre on their checkpoints (no official loop)
#   nvidia.sh official  the official CUDA-graph loop and Lyre at batch 1, 8 and 32 (no faster-qwen3-tts)
#   nvidia.sh fidelity  Lyre against the official implementation at real size (scripts/fidelity/)
#   nvidia.sh profile   per-dispatch GPU timestamps of MODELS (0.6b) at BATCHES (8,32,64)
#   nvidia.sh sweep     SWEEP_MODEL (0.6b) at BATCHES (1,8,32,64) under each [engine.tuning] variant
#                       of SWEEP_FILE (scripts/device/sweep.txt), against the defaults run first and last
#   nvidia.sh ab        .dev/lyre against every .dev/lyre-NAME (other builds, put there by hand),
#                       AB_ROUNDS (2) times each in turn, at AB_BATCHES, on AB_MODELS (0.6b);
#                       AB_ARGS adds `lyre bench` arguments
# Every mode ends by writing $OUT/latest.json (scripts/device/latest.py) from what it measured,
# and everything else lands in $OUT/results.tgz, saved after each step. A second invocation in
# the same call starts latest.json from the first one's and saves its files as results-2.tgz (a
# third results-3.tgz, and so on). The files themselves are written in a work folder: the
# device tool brings back only a few files from $OUT, so a run cut off by its time limit must
# not leave dozens there.
# Several modes run in order in one call: `nvidia.sh engine peers`. Pass LYRE_COMMIT (the commit
# the carried build is from, taken here): the GPU host's copy of the checkout may carry an older
# HEAD than the working tree it was sent, and latest.json records the commit.
set -uo pipefail
MODES=("${@:-engine}")
DEST=${OUT:-/tmp/out}
OUT=/tmp/lyre-run
export OUT
rm -rf "$OUT" && mkdir -p "$OUT" "$DEST"
RESULTS=results.tgz
n=1
while [ -e "$DEST/$RESULTS" ]; do
  n=$((n + 1))
  RESULTS=results-$n.tgz
done
for f in .gl/*.deb; do
  # libgomp (libsoxr's OpenMP) only where the host has none: never replace a newer one.
  case $f in *libgomp1_*) ls /usr/lib/x86_64-linux-gnu/libgomp.so.1 >/dev/null 2>&1 && continue ;; esac
  dpkg -x "$f" /
done
ldconfig
# Binaries may travel xz-compressed (the carried tree is capped at 64 MiB).
for f in .dev/*.xz; do
  [ -e "$f" ] && python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3], "wb"))' "$f" \
    && chmod +x "${f%.xz}" && rm "$f"
done
if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export LYRE_MODEL_ALLOW_CPU_ADAPTER=0 RUST_LOG=warn PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,memory.used --format=csv > "$OUT/gpu.txt" 2>&1
log() { echo "[$(date +%T)] $*"; }
# Earlier figures of the same card stay in latest.json unless this run measures them again; an
# earlier invocation in the same call has the newest.
if [ -e "$DEST/latest.json" ]; then
  cp "$DEST/latest.json" "$OUT/"
else
  cp docs/bench/latest.json "$OUT/" 2>/dev/null
fi

model() { # model NAME DIR
  [ -e "$2/model.safetensors" ] && return
  python3 .dev/make_random_real.py ".dev/manifests/Qwen3-TTS-12Hz-$1.json" "$2" --tokenizer-dir .dev/tok > "$OUT/make-$1.log" 2>&1 \
    || { log "make_random_real $1 failed" >&2; tail -5 "$OUT/make-$1.log" >&2; exit 1; }
}

model_dir() { # model_dir 0.6b|1.7b: makes the CustomVoice checkpoint, prints its folder
  case $1 in
    0.6b) model 0.6B-CustomVoice /tmp/m06 && echo /tmp/m06 ;;
    1.7b) model 1.7B-CustomVoice /tmp/m17 && echo /tmp/m17 ;;
    *) log "unknown model $1" >&2; return 1 ;;
  esac
}

bench() { # bench TAG DIR ARGS... (env set by the caller)
  local tag=$1 dir=$2; shift 2
  log "bench $tag"
  timeout 300 "${LYRE:-.dev/lyre}" bench --model-dir "$dir" --json "$OUT/bench-$tag.json" "$@" > "$OUT/bench-$tag.txt" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && { log "bench $tag rc=$rc"; tail -5 "$OUT/bench-$tag.txt"; }
  grep -A 12 "^ batch" "$OUT/bench-$tag.txt" | grep -v "^ *[0-9.]* ms" | sed "s/^/$tag  /"
}

get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("http://" + sys.argv[1], timeout=5).read().decode())' "$1"; }

save() {
  python3 scripts/device/latest.py "$OUT" > "$OUT/latest.log" 2>&1 || tail -3 "$OUT/latest.log"
  tar -C "$OUT" -czf "$DEST/$RESULTS.part" . && mv "$DEST/$RESULTS.part" "$DEST/$RESULTS"
  cp "$OUT/latest.json" "$DEST/" 2>/dev/null
}

wheels() { # wheels DIR PATTERN...: install the carried wheels matching PATTERNs into DIR
  local dir=$1; shift
  local files=()
  for p in "$@"; do files+=(.whl/$p); done
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$dir" "${files[@]}" \
    > "$OUT/pip-$(basename "$dir").log" 2>&1 || { log "pip $dir failed"; tail -3 "$OUT/pip-$(basename "$dir").log"; }
}

kernel_tests() { # TEST_FILTERS narrows them; a hung test is killed after TEST_TIMEOUT seconds
  for t in .dev/test-kernels .dev/test-decoder; do
    # shellcheck disable=SC2086 # the filters split into words on purpose
    timeout "${TEST_TIMEOUT:-300}" $t --test-threads 1 ${TEST_FILTERS:-kernels linear fused conv attention decode_layer} \
      > "$OUT/$(basename $t).log" 2>&1
    echo "$(basename $t): $(grep -E '^test result' "$OUT/$(basename $t).log")"
    grep -E "FAILED|panicked" "$OUT/$(basename $t).log" | head -5
  done
}

official_site() { # the official package and the transformers it pins, apart from the machine's
  [ -d /tmp/site-official/qwen_tts ] && return
  wheels /tmp/site-official 'qwen_tts-*.whl' 'transformers-4.57.3-*.whl' 'accelerate-*.whl' 'huggingface_hub-0.36.2-*.whl' \
    'tokenizers-0.22.2-*.whl' 'soundfile-*.whl' 'cffi-*.whl' 'pycparser-*.whl'
}

official() { # the official implementation's CUDA-graph loop (bench_qwen.py's sections)
  [ -n "$(ls .whl/qwen_tts-*.whl 2>/dev/null)" ] || { log "no wheels: official baseline skipped"; return; }
  log "official baseline"
  official_site
  cp .dev/bench_qwen.py .dev/tiny_configs.py scripts/device/official_sections.py /tmp/
  PYTHONPATH=/tmp/site-official QB_SECTIONS=${QB_SECTIONS:-env,graph} QB_BUDGET_S=${QB_BUDGET_S:-150} \
    timeout 240 python3 /tmp/official_sections.py > "$OUT/qwen_bench.log" 2>&1
  log "official rc=$?"

  grep -E "SUMMARY|Error" "$OUT/qwen_bench.log" | tail -3 | cut -c1-1500
}

peers() { # faster-qwen3-tts (0.6B CustomVoice) and faster-qwen3-tts-batch (0.6B Base)
  [ -n "$(ls .whl/faster_qwen3_tts-*.whl 2>/dev/null)" ] || { log "no peer wheels"; return; }
  # faster-qwen3-tts 0.5.4 runs on the machine's transformers 5.x with qwen-tts-hf; the batch
  # package drives transformers 4.57's static cache, so it runs beside the official package with
  # the last faster-qwen3-tts for transformers 4 (0.3.2).
  wheels /tmp/site-peers 'faster_qwen3_tts-0.5.4-*.whl' 'qwen_tts_hf-*.whl' 'soundfile-*.whl' 'soxr-*.whl' \
    'cffi-*.whl' 'pycparser-*.whl'
  official_site
  wheels /tmp/site-batch 'faster_qwen3_tts-0.3.2-*.whl' 'faster_qwen3_tts_batch-*.whl'
  for m in ${PEER_MODES:-faster:/tmp/m06 batched:/tmp/m06b}; do
    local pp=/tmp/site-peers
    [ "${m%%:*}" = batched ] && pp=/tmp/site-batch:/tmp/site-official
    log "peer ${m%%:*}"
    PYTHONPATH=$pp timeout 300 python3 scripts/device/peers.py "${m%%:*}" "${m#*:}" "$OUT/peer-${m%%:*}.json" \
      > "$OUT/peer-${m%%:*}.log" 2>&1
    log "rc=$?"; grep -E "SUMMARY|Error" "$OUT/peer-${m%%:*}.log" | tail -2 | cut -c1-1200
    save
  done
}

server() { # server DIR [SUFFIX]: lyre serve under open-loop load, files named with SUFFIX
  local dir=$1 sfx=${2:-} port=18080
  log "server on $(basename "$dir")"
  # 128 slots of 4096 positions would need a 2 GiB+ KV buffer per layer (over Vulkan's binding
  # limit); the corpus's requests need under 200 positions.
  LYRE_ENGINE_MAX_SESSIONS=${SESSIONS:-128} LYRE_ENGINE_MAX_POSITIONS=${POSITIONS:-1024} LYRE_ENGINE_MAX_QUEUE=512 LYRE_LIMITS_MAX_BUFFERED_FRAMES=4096 \
    "${SERVER_LYRE:-.dev/lyre}" serve --model-dir "$dir" --listen 127.0.0.1:$port > "$OUT/server$sfx.log" 2>&1 &
  local pid=$!
  for _ in $(seq 240); do
    get localhost:$port/readyz >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  get localhost:$port/readyz 2>/dev/null || { log "server not ready"; grep -v on_failure "$OUT/server$sfx.log" | tail -5; kill "$pid"; return; }
  echo
  wheels /tmp/site-load 'websockets-*.whl' 'httpx-*.whl' 'httpcore-*.whl' 'h11-*.whl' 'anyio-*.whl' 'sniffio-*.whl' 'certifi-*.whl' 'idna-*.whl'
  # One request at a time over each transport and text mode: what the prompt alone costs.
  PYTHONPATH=/tmp/site-load timeout 120 python3 scripts/ttfa_modes.py --url http://127.0.0.1:$port \
    --voice "${VOICE:-ryan}" --json "$OUT/ttfa-modes$sfx.json" 2>&1 | tee "$OUT/ttfa-modes$sfx.txt"
  local t mode tm procs
  for procs in ${PROCS:-1}; do
  for t in ${TRANSPORTS:-ws http}; do
    for mode in ${TEXT_MODES:-default}; do
      # TEXT_MODES="default streaming": also each transport with the text fed a token per frame
      # (files suffixed -tmstreaming; HTTP's default puts the whole text in the prompt).
      # PROCS="1 4": also with the arrivals spread over four client processes (-p4).
      tm=()
      [ "$mode" = default ] || tm=(--text-mode "$mode")
      local f="load-$t$sfx${tm:+-tm$mode}"
      [ "$procs" = 1 ] || f+="-p$procs"
      PYTHONPATH=/tmp/site-load timeout 400 python3 scripts/loadgen.py --url http://127.0.0.1:$port \
        --rates "${RATES:-5,10,20,40}" --duration "${DURATION:-30}" --transport "$t" --voice "${VOICE:-ryan}" \
        --procs "$procs" "${tm[@]}" --json "$OUT/$f.json" 2>&1 | tee "$OUT/$f.txt"
      save
    done
  done
  done
  get localhost:$port/metrics | grep -E "^lyre_(tick|session|queue|launch|prompt_ticks|batch_size|ttfa)" | head -80 > "$OUT/server-metrics$sfx.txt"
  kill "$pid"; wait "$pid" 2>/dev/null
}

run_mode() {
case "$1" in
tests)
  kernel_tests
  ;;
bench|engine)
  # MODELS="1.7b" benches one model only.
  local m dir
  for m in ${MODELS:-0.6b 1.7b}; do
    dir=$(model_dir "$m") || continue
    bench "$m" "$dir" --batch "${BATCHES:-1,8,32,64,256}" --frames 20
    save
  done
  [ "$1" = bench ] && return
  model 0.6B-CustomVoice /tmp/m06 # the rest of engine times 0.6B, whatever MODELS held
  bench profile-0.6b /tmp/m06 --batch 8,32,64 --frames 3 --profile-dispatches
  save
  for c in 500 2000; do
    bench ctx$c-f32 /tmp/m06 --batch 1,32 --frames 20 --context $c
    bench ctx$c-f16 /tmp/m06 --batch 1,32 --frames 20 --context $c --kv-cache f16
    LYRE_ENGINE_TUNING_ATTENTION_CHUNKS=1 bench ctx$c-nosplit /tmp/m06 --batch 1 --frames 20 --context $c
    save
  done
  ;;
peers)
  model 0.6B-CustomVoice /tmp/m06
  model 0.6B-Base /tmp/m06b
  official
  save
  peers
  bench 0.6b-peers /tmp/m06 --batch 1,8,32 --frames 20
  bench 0.6b-base /tmp/m06b --batch 8,32 --frames 20
  ;;
official)
  model 0.6B-CustomVoice /tmp/m06
  official
  save
  bench 0.6b-peers /tmp/m06 --batch 1,8,32 --frames 20
  ;;
faster)
  model 0.6B-CustomVoice /tmp/m06
  model 0.6B-Base /tmp/m06b
  peers
  bench 0.6b-peers /tmp/m06 --batch 1,8,32 --frames 20
  bench 0.6b-base /tmp/m06b --batch 8,32 --frames 20
  ;;
server)
  # The load generator's wheels come with .whl: without them the server would start for nothing.
  [ -n "$(ls .whl/websockets-*.whl 2>/dev/null)" ] || { log "no .whl/websockets-*.whl: carry .whl for the load generator"; return; }
  model 1.7B-CustomVoice /tmp/m17
  # SLACKS="0 default": engine.launch_slack_ms 0 (files suffixed -slack0), then the default;
  # FIRST_AUDIO="false default" likewise for engine.fast_first_audio (-ffafalse).
  local slack ffa sfx
  for slack in ${SLACKS:-default}; do
    for ffa in ${FIRST_AUDIO:-default}; do
      sfx=""
      [ "$slack" = default ] || sfx+="-slack$slack"
      [ "$ffa" = default ] || sfx+="-ffa$ffa"
      (
        [ "$slack" = default ] || export LYRE_ENGINE_LAUNCH_SLACK_MS=$slack
        [ "$ffa" = default ] || export LYRE_ENGINE_FAST_FIRST_AUDIO=$ffa
        server /tmp/m17 "$sfx"
      )
    done
  done
  ;;
fidelity)
  official_site
  bash scripts/fidelity/run.sh
  ;;
profile)
  local m dir
  for m in ${MODELS:-0.6b}; do
    dir=$(model_dir "$m") || continue
    LYRE=${PROFILE_LYRE:-.dev/lyre} bench "profile-$m" "$dir" --batch "${BATCHES:-8,32,64}" --frames 3 --profile-dispatches
    save
  done
  ;;
sweep)
  # SWEEP_MODEL=1.7b sweeps the other model; SWEEP_FILE another list of variants.
  local dir
  dir=$(model_dir "${SWEEP_MODEL:-0.6b}") || return
  { echo "base"; grep -v '^#' "${SWEEP_FILE:-scripts/device/sweep.txt}"; echo "base_again"; } | while read -r name tunes; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086 # the --tune words split on purpose
    bench "sweep-$name" "$dir" --batch "${BATCHES:-1,8,32,64}" --frames 20 $tunes < /dev/null > /dev/null
    save # a sweep cut off by the call's time limit still brings back what it measured
  done
  python3 scripts/device/sweep_table.py "$OUT" | tee "$OUT/sweep.txt"
  ;;
ab)
  local m dir
  for m in ${AB_MODELS:-0.6b}; do
    dir=$(model_dir "$m") || continue
    for r in $(seq "${AB_ROUNDS:-2}"); do
      for l in .dev/lyre .dev/lyre-*; do
        [ -x "$l" ] || continue
        local name=${l#.dev/lyre}
        # shellcheck disable=SC2086 # AB_ARGS splits into words on purpose
        LYRE=$l bench "ab-$m${name:--base}-$r" "$dir" --batch "${AB_BATCHES:-1,8,32,64}" --frames "${FRAMES:-20}" ${AB_ARGS:-}
        save
      done
    done
  done
  ;;
*)
  echo "unknown mode $1" >&2; exit 2
  ;;
esac
}

for mode in "${MODES[@]}"; do
  log "mode $mode"
  run_mode "$mode"
  save
done
log done
