#!/usr/bin/env python3
"""The official implementation's side of the fidelity check (scripts/fidelity/run.sh).

    official.py CKPT OUT_DIR --frames F [--device cuda] [--text ...] [--speaker ...]

Loads CKPT with the official `qwen_tts.Qwen3TTSModel` (qwen-tts 0.1.1, transformers 4.57.3), runs
one CustomVoice prompt greedily in float32 for exactly F frames (EOS masked), recording at every
frame the talker's final-normed hidden state, its raw codec-head logits and the code predictor's 15
raw logit rows (forward hooks, as the reference fixtures were made). Then the same in bfloat16,
teacher-forced onto the float32 codes (a logits processor that keeps only the given code, for the
talker and inside every code-predictor call), which gives official bf16's own error against
official f32 at every position. Writes OUT_DIR/case.json (text, speaker, language, prompt ids,
codes) and OUT_DIR/official_{f32,bf16}.safetensors."""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "device"))
import stubs  # noqa: E402

stubs.install()
from qwen_tts import Qwen3TTSModel  # noqa: E402
from transformers import LogitsProcessor, LogitsProcessorList  # noqa: E402

TEXT = ("The guided tour starts at the main entrance, lasts about ninety minutes, and ends in the "
        "rooftop cafe, where visitors can enjoy a view across the entire old town.")


class KeepOnly(LogitsProcessor):
    """Teacher forcing: at generated position k only `codes[k]` survives (None: leave as is)."""

    def __init__(self, codes):
        self.codes = codes

    def __call__(self, input_ids, scores):
        k = input_ids.shape[1]
        if k < len(self.codes) and self.codes[k] is not None:
            keep = scores[:, self.codes[k]].clone()
            scores.fill_(float("-inf"))
            scores[:, self.codes[k]] = keep
        return scores


class Recorder:
    """Hooks the official model: per talker forward the last position's logits and hidden state,
    per code-predictor forward its last logits; optionally forces codes and the frame count."""

    def __init__(self, m, frames, forced=None):
        self.m, self.frames, self.forced = m, frames, forced
        self.talker_logits, self.talker_hidden, self.cp_logits = [], [], []
        self.model_kwargs = None
        self.cp_calls = 0
        self.hooks = [m.talker.register_forward_hook(self._talker),
                      m.talker.code_predictor.register_forward_hook(self._cp)]
        orig_talker, orig_cp, orig_model = m.talker.generate, m.talker.code_predictor.generate, m.generate
        rec = self

        def talker_generate(*a, **kw):
            # F frames need F + 1 talker steps (the last frame's code predictor runs in the step
            # that samples the next first code); EOS is masked throughout.
            kw["max_new_tokens"] = kw["min_new_tokens"] = frames + 1
            if forced is not None:
                kw["logits_processor"] = LogitsProcessorList([KeepOnly([f[0] for f in forced] + [None])])
            return orig_talker(*a, **kw)

        def cp_generate(*a, **kw):
            if forced is not None and rec.cp_calls < len(forced):
                kw["logits_processor"] = LogitsProcessorList([KeepOnly(list(forced[rec.cp_calls][1:]))])
            rec.cp_calls += 1
            return orig_cp(*a, **kw)

        def model_generate(*a, **kw):
            rec.model_kwargs = kw
            rec.result = orig_model(*a, **kw)
            return rec.result

        m.talker.generate, m.talker.code_predictor.generate, m.generate = talker_generate, cp_generate, model_generate

    def _talker(self, mod, args, out):
        self.talker_logits.append(out.logits[0, -1].detach().float().cpu())
        self.talker_hidden.append(out.past_hidden[0, -1].detach().float().cpu())

    def _cp(self, mod, args, out):
        self.cp_logits.append(out.logits[0, -1].detach().float().cpu())


def run(ckpt, dtype, device, frames, text, speaker, language, forced=None):
    wrapper = Qwen3TTSModel.from_pretrained(ckpt, device_map=device, dtype=dtype, attn_implementation="sdpa")
    rec = Recorder(wrapper.model, frames, forced)
    # The user's path: the wrapper merges the checkpoint's generation defaults (repetition
    # penalty) with these arguments.
    with torch.inference_mode():
        wrapper.generate_custom_voice(text=text, language=language, speaker=speaker, non_streaming_mode=True,
                                      do_sample=False, subtalker_dosample=False, max_new_tokens=frames + 1)
    codes = rec.result[0][0].detach().cpu().to(torch.int64)
    assert codes.shape == (frames, 16), codes.shape
    n = frames
    out = {"codes": codes, "talker_logits": torch.stack(rec.talker_logits[:n]),
           "talker_hidden": torch.stack(rec.talker_hidden[:n]),
           "cp_logits": torch.stack(rec.cp_logits[:15 * n])}
    ids = rec.model_kwargs["input_ids"][0][0].detach().cpu().to(torch.int64)
    del wrapper
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--text", default=TEXT)
    ap.add_argument("--speaker")
    ap.add_argument("--language", default="english")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.speaker is None:
        with open(os.path.join(a.ckpt, "config.json")) as f:
            a.speaker = sorted(json.load(f)["talker_config"]["spk_id"])[0]
    f32, ids = run(a.ckpt, torch.float32, a.device, a.frames, a.text, a.speaker, a.language)
    save_file({k: v.contiguous() for k, v in f32.items()}, os.path.join(a.out, "official_f32.safetensors"))
    forced = [[int(c) for c in row] for row in f32["codes"]]
    bf16, _ = run(a.ckpt, torch.bfloat16, a.device, a.frames, a.text, a.speaker, a.language, forced)
    assert torch.equal(bf16["codes"], f32["codes"]), "teacher forcing held the bf16 run on the f32 codes"
    save_file({k: v.contiguous() for k, v in bf16.items()}, os.path.join(a.out, "official_bf16.safetensors"))
    case = {"text": a.text, "speaker": a.speaker, "language": a.language, "frames": a.frames,
            "input_ids": ids.tolist(), "codes": forced}
    with open(os.path.join(a.out, "case.json"), "w") as f:
        json.dump(case, f)
    print(f"official: {a.frames} frames, prompt {len(ids)} ids, speaker {a.speaker}")


if __name__ == "__main__":
    main()
