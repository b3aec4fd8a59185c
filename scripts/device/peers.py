#!/usr/bin/env python3
"""Other Qwen3-TTS servers' engines on the same GPU and checkpoint as Lyre (run by
scripts/device/nvidia.sh peers; needs CUDA, the machine's torch and transformers >= 5.15, and the
wheels of faster-qwen3-tts 0.5.4, faster-qwen3-tts-batch 0.2.0 and qwen-tts-hf on PYTHONPATH).

    peers.py faster   CKPT_DIR OUT.json   faster-qwen3-tts (CUDA graphs), batch 1: ms per frame
                                          (decode steps only, no codec, as the package reports it)
                                          and time to first audio of its streaming API
    peers.py batched  CKPT_DIR OUT.json   faster-qwen3-tts-batch: frames/s at 8 and 32 sessions
                                          (a Base checkpoint: the package clones voices only)

Every run asks for exactly FRAMES frames (min_new_tokens = max_new_tokens), sampling as the
checkpoint's defaults (temperature 0.9, top-k 50), bf16, SDPA attention."""
import json
import os
import statistics
import sys
import time
import wave

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stubs  # noqa: E402

STUBBED = stubs.install() + stubs.patch_rope_theta()

FRAMES = int(os.environ.get("PEER_FRAMES", "100"))
REPEATS = int(os.environ.get("PEER_REPEATS", "3"))
TEXT = ("The guided tour starts at the main entrance, lasts about ninety minutes, and ends in the "
        "rooftop cafe, where visitors can enjoy a view across the entire old town.")


def sync():
    torch.cuda.synchronize()


def speaker_of(ckpt):
    with open(os.path.join(ckpt, "config.json")) as f:
        spk = json.load(f)["talker_config"].get("spk_id", {})
    return sorted(spk)[0] if spk else None


def faster(ckpt, out):
    from faster_qwen3_tts import FasterQwen3TTS
    from faster_qwen3_tts.generate import fast_generate

    t0 = time.time()
    model = FasterQwen3TTS.from_pretrained(ckpt, device="cuda", dtype=torch.bfloat16, max_seq_len=2048)
    speaker = speaker_of(ckpt)
    res = {"package": "faster-qwen3-tts 0.5.4", "checkpoint": ckpt, "frames": FRAMES, "load_s": time.time() - t0}
    prep = model._prepare_generation_custom(text=TEXT, language="english", speaker=speaker, instruct=None,
                                            non_streaming_mode=True)
    m, talker, config, tie, tam, tth, tpe = prep
    model.warmup(prefill_len=tie.shape[1])
    ms, prefill = [], []
    for _ in range(REPEATS + 1):
        sync()
        codes, timing = fast_generate(talker=talker, talker_input_embeds=tie, attention_mask=tam,
                                      trailing_text_hiddens=tth, tts_pad_embed=tpe, config=config,
                                      predictor_graph=model.predictor_graph, talker_graph=model.talker_graph,
                                      max_new_tokens=FRAMES, min_new_tokens=FRAMES)
        sync()
        ms.append(timing["ms_per_step"])
        prefill.append(timing["prefill_ms"])
        res["steps"] = timing["steps"]
    res["b1_ms_per_frame_runs"] = ms[1:]
    res["b1_ms"] = statistics.median(ms[1:])
    res["prefill_ms"] = statistics.median(prefill[1:])
    # Time to first audio through its streaming API (codec included), smallest chunk and default.
    for chunk in (1, 12):
        ttfa = []
        for _ in range(REPEATS + 1):
            sync()
            t = time.perf_counter()
            gen = model.generate_custom_voice_streaming(text=TEXT, speaker=speaker, language="english",
                                                         max_new_tokens=FRAMES, min_new_tokens=FRAMES,
                                                         chunk_size=chunk)
            audio, _sr, _timing = next(gen)
            sync()
            ttfa.append((time.perf_counter() - t) * 1e3)
            gen.close()
        res[f"ttfa_ms_chunk{chunk}_runs"] = ttfa[1:]
    res["ttfa_ms"] = statistics.median(res["ttfa_ms_chunk1_runs"])
    save(out, res)


def reference_wav(seconds=3.0, rate=24000):
    """A short 24 kHz reference clip in a WAV file, returned as its path (a chirp: the weights are
    random, any audio will do)."""
    import tempfile

    t = np.arange(int(seconds * rate)) / rate
    y = (0.3 * np.sin(2 * np.pi * (200 + 300 * t) * t) * 32767).astype(np.int16)
    path = os.path.join(tempfile.mkdtemp(), "reference.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(y.tobytes())
    return path


def batched(ckpt, out):
    from faster_qwen3_tts import FasterQwen3TTS
    from faster_qwen3_tts_batch import BatchedFasterQwen3TTS
    from faster_qwen3_tts_batch.batched_generate import batched_fast_generate

    t0 = time.time()
    base = FasterQwen3TTS.from_pretrained(ckpt, device="cuda", dtype=torch.bfloat16, max_seq_len=2048)
    res = {"package": "faster-qwen3-tts-batch 0.2.0", "checkpoint": ckpt, "frames": FRAMES,
           "load_s": time.time() - t0, "voice": "x-vector clone of a 3 s 24 kHz clip"}
    ref = reference_wav()
    for b in (8, 32):
        model = BatchedFasterQwen3TTS(base, max_batch_size=b, max_seq_len=2048)
        inputs = [base._prepare_generation(text=TEXT, ref_audio=ref, ref_text="", language="english",
                                           xvec_only=True, non_streaming_mode=True, append_silence=True)
                  for _ in range(b)]
        m_ref = inputs[0][0]
        model.warmup(prefill_len=max(x[3].shape[1] for x in inputs))
        fps = []
        for _ in range(REPEATS + 1):
            sync()
            t = time.perf_counter()
            results = batched_fast_generate(
                talker=m_ref.talker, talker_input_embeds_list=[x[3] for x in inputs],
                attention_mask_list=[x[4] for x in inputs], trailing_text_hiddens_list=[x[5] for x in inputs],
                tts_pad_embed=inputs[0][6], config=m_ref.config.talker_config,
                predictor_graph=model.batched_predictor_graph, talker_graph=model.batched_talker_graph,
                max_new_tokens=FRAMES, min_new_tokens=FRAMES)
            sync()
            wall = time.perf_counter() - t
            steps = sum(timing["steps"] for _codes, timing in results)
            decode_s = max(timing["decode_s"] for _codes, timing in results)
            fps.append({"frames": steps, "wall_s": wall, "decode_s": decode_s,
                        "frames_per_s_decode": steps / decode_s, "frames_per_s_wall": steps / wall})
        res[f"b{b}_runs"] = fps[1:]
        res[f"b{b}_frames_per_s"] = statistics.median(r["frames_per_s_decode"] for r in fps[1:])
        res[f"b{b}_frames_per_s_wall"] = statistics.median(r["frames_per_s_wall"] for r in fps[1:])
        del model
        torch.cuda.empty_cache()
        save(out, res)
    save(out, res)


def save(out, res):
    res["gpu"] = torch.cuda.get_device_name(0)
    res["torch"] = torch.__version__
    res["stubbed"] = STUBBED
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    print("SUMMARY", json.dumps({k: v for k, v in res.items() if not k.endswith("_runs")})[:2000], flush=True)


if __name__ == "__main__":
    mode, ckpt, out = sys.argv[1:4]
    {"faster": faster, "batched": batched}[mode](ckpt, out)
