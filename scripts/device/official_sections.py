#!/usr/bin/env python3
"""Runs chosen sections of the official-implementation benchmark (../shared/device/baseline/
bench_qwen.py, copied beside this file with tiny_configs.py) on the H200: QB_SECTIONS is a
comma-separated list of env, gen1, manual, prof, batch, graph, decode (default: env,gen1,batch,graph).
The model is built exactly as bench_qwen.main() builds it; results go to $OUT/qwen_bench.json."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_qwen as b  # noqa: E402

sections = os.environ.get("QB_SECTIONS", "env,gen1,batch,graph").split(",")
t0 = time.time()
cfg = b.Qwen3TTSConfig(**b.real_tts_config())
model = b.from_config(b.Qwen3TTSForConditionalGeneration, cfg, b.DT, b.ATTN)
with b.torch.no_grad():
    model.talker.codec_head.weight[cfg.talker_config.codec_eos_token_id].zero_()  # never sample EOS
b.sync()
b.RESULTS["build_s"] = time.time() - t0
for name in sections:
    fn = getattr(b, f"s_{name}")
    fn() if name == "decode" else fn(model)
b.RESULTS["total_s"] = time.time() - b.T_START
b.save()
print("SUMMARY", json.dumps({k: b.RESULTS.get(k) for k in sections if k != "env"})[:4000])
