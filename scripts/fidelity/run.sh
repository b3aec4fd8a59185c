#!/usr/bin/env bash
# Real-size fidelity: Lyre against the official implementation on random real-size CustomVoice
# checkpoints (scripts/device/nvidia.sh fidelity runs it on a GPU host; OUT, FRAMES, BATCH and
# MODELS may be set). For each model: official.py (float32 greedy, bfloat16 teacher-forced),
# Lyre's examples/fidelity (teacher-forced alone and in a tick of BATCH sessions, then greedy)
# for each of VARIANTS, and compare.py, whose report lands in $OUT/fidelity.json.
#   MODELS  "NAME:DIR ..." (default: 0.6B and 1.7B CustomVoice under /tmp, made if missing)
#   DEVICE  torch device for the official model (cuda)
#   FIDELITY  the Lyre binary (.dev/fidelity)
#   VARIANTS  Lyre's runs: KV-cache formats, each optionally with `+key=value` of [engine.tuning]
#             (default "f32 f16 f32+coop=false": the last without the cooperative-matrix GEMMs,
#             whose f16 operands are the GPU's main difference from the CPU run)
set -uo pipefail
OUT=${OUT:-/tmp/out}
FRAMES=${FRAMES:-60}
BATCH=${BATCH:-48}
DEVICE=${DEVICE:-cuda}
FIDELITY=${FIDELITY:-.dev/fidelity}
VARIANTS=${VARIANTS:-f32 f16 f32+coop=false}
MODELS=${MODELS:-0.6B-CustomVoice:/tmp/m06 1.7B-CustomVoice:/tmp/m17}
OFFICIAL_PYTHONPATH=${OFFICIAL_PYTHONPATH:-/tmp/site-official}
mkdir -p "$OUT"
for m in $MODELS; do
  name=${m%%:*} dir=${m#*:}
  tag=$(echo "${name%%-*}" | tr 'B' 'b')
  if [ ! -e "$dir/model.safetensors" ]; then
    python3 .dev/make_random_real.py ".dev/manifests/Qwen3-TTS-12Hz-$name.json" "$dir" --tokenizer-dir .dev/tok \
      > "$OUT/make-$name.log" 2>&1 || { echo "make_random_real $name failed"; continue; }
  fi
  case_dir=/tmp/fidelity-$tag
  mkdir -p "$case_dir"
  rm -f "$case_dir"/kv-*.safetensors  # an earlier run's traces are not this run's
  cp "$dir/config.json" "$dir/generation_config.json" "$case_dir/"
  echo "[$(date +%T)] official $name"
  PYTHONPATH=$OFFICIAL_PYTHONPATH timeout 400 python3 scripts/fidelity/official.py "$dir" "$case_dir" \
    --frames "$FRAMES" --device "$DEVICE" > "$OUT/official-$tag.log" 2>&1 \
    || { echo "official $name failed"; tail -5 "$OUT/official-$tag.log"; continue; }
  for v in $VARIANTS; do
    # A variant is a KV-cache format, then optionally `+key=value`, an [engine.tuning] key.
    kv=${v%%+*} trace=kv-${v%%+*} tune=()
    if [ "$v" != "$kv" ]; then
      key=${v#*+}
      trace="$trace-${key%%=*}-${key#*=}"
      tune=("LYRE_ENGINE_TUNING_$(echo "${key%%=*}" | tr '[:lower:]' '[:upper:]')=${key#*=}")
    fi
    echo "[$(date +%T)] lyre $name $trace"
    env "${tune[@]}" timeout 300 "$FIDELITY" "$dir" "$case_dir" "$case_dir/$trace.safetensors" --kv-cache "$kv" \
      --batch "$BATCH" > "$OUT/lyre-$tag-$trace.log" 2>&1 || { echo "lyre $name $trace failed"; tail -5 "$OUT/lyre-$tag-$trace.log"; }
  done
  python3 scripts/fidelity/compare.py "$case_dir" "$case_dir"/kv-*.safetensors --model "$tag" \
    --json "$OUT/fidelity.json" 2>&1 | tee "$OUT/fidelity-$tag.txt"
done
