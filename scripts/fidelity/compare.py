#!/usr/bin/env python3
"""Compares Lyre's traces with the official ones (scripts/fidelity/run.sh).

    compare.py CASE_DIR LYRE.safetensors [LYRE2.safetensors ...] --model 0.6b --json OUT.json

For every position (frame) and every trace — Lyre alone and inside a batched tick, each KV-cache
format given — the cosine and max|Δ| / max|official| of the talker's final-normed hidden state,
its codec-head logits and each of the code predictor's 15 logit rows, against official float32;
official bfloat16 (teacher-forced on the same codes) against official float32 is the bar Lyre's
error must not exceed. For the greedy run: the first frame whose codes differ from official
float32's, and the official top-2 margin at that code (tiny margins are near ties)."""
import argparse
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file

PARTS = ("talker_hidden", "talker_logits", "cp_logits")


def rowwise(a, b):
    """Per row: cosine and max|a - b| / max|b|."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
    rel = np.abs(a - b).max(1) / np.maximum(np.abs(b).max(1), 1e-30)
    return cos, rel


def talker_margins(logits, codes, vocab_eos, penalty):
    """Official greedy's top-2 margin per frame: repetition penalty over earlier first codes,
    EOS masked (min_new_tokens), ids [vocab - 1024, vocab) except EOS suppressed."""
    v = logits.shape[1]
    out = []
    for t in range(logits.shape[0]):
        s = logits[t].astype(np.float64).copy()
        for c in set(int(x) for x in codes[:t, 0]):
            s[c] = s[c] * penalty if s[c] < 0 else s[c] / penalty
        s[v - 1024:] = -np.inf
        s[vocab_eos] = -np.inf
        top = np.sort(s[np.isfinite(s)])[-2:]
        out.append(float(top[1] - top[0]))
    return out


def compare(case_dir, lyre_paths, eos, penalty):
    f32 = load_file(os.path.join(case_dir, "official_f32.safetensors"))
    bf16 = load_file(os.path.join(case_dir, "official_bf16.safetensors"))
    codes = f32["codes"]
    report = {"frames": int(codes.shape[0]), "bf16": {}, "traces": {}, "greedy": {}}
    bar = {}
    for part in PARTS:
        cos, rel = rowwise(bf16[part], f32[part])
        bar[part] = rel
        report["bf16"][part] = {"min_cosine": float(cos.min()), "max_rel": float(rel.max())}
    t_margin = talker_margins(f32["talker_logits"], codes, eos, penalty)
    cp = f32["cp_logits"]
    srt = np.sort(cp, axis=1)
    cp_margin = (srt[:, -1] - srt[:, -2]).reshape(-1, 15)
    for path in lyre_paths:
        lyre = load_file(path)
        kv = os.path.basename(path).replace(".safetensors", "")
        for run in ("alone", "batch"):
            name = f"{kv}/{run}"
            got = lyre[f"{run}_codes"].astype(np.int64)
            assert np.array_equal(got, codes), f"{name}: the forced codes were not followed"
            entry = {}
            for part in PARTS:
                cos, rel = rowwise(lyre[f"{run}_{part}"], f32[part])
                entry[part] = {"min_cosine": float(cos.min()), "max_rel": float(rel.max()),
                               "positions": len(cos),
                               "positions_within_bf16": int((rel <= bar[part]).sum()),
                               "worst_position": int(rel.argmax()),
                               "cosine_per_position": [round(float(c), 8) for c in cos],
                               "rel_per_position": [float(f"{r:.3e}") for r in rel]}
            report["traces"][name] = entry
        g = lyre["greedy_codes"].astype(np.int64)
        diff = np.argwhere(g != codes)
        if len(diff) == 0:
            report["greedy"][kv] = {"first_differing_frame": None}
        else:
            t, k = (int(x) for x in diff[0])
            margin = t_margin[t] if k == 0 else float(cp_margin[t, k - 1])
            report["greedy"][kv] = {"first_differing_frame": t, "codebook": k, "official_top2_margin": margin,
                                    "official_min_margin_before": float(min(
                                        [t_margin[i] for i in range(t + (k > 0))] +
                                        [float(cp_margin[i].min()) for i in range(t)] or [np.inf]))}
    report["min_cosine"] = min(e[p]["min_cosine"] for e in report["traces"].values() for p in PARTS)
    report["within_bf16"] = all(e[p]["max_rel"] <= report["bf16"][p]["max_rel"]
                                for e in report["traces"].values() for p in PARTS)
    return report


def summary(model, r):
    lines = [f"{model}: {r['frames']} frames; official bf16 vs f32: " + ", ".join(
        f"{p} cos {r['bf16'][p]['min_cosine']:.6f} rel {r['bf16'][p]['max_rel']:.2e}" for p in PARTS)]
    for name, e in r["traces"].items():
        lines.append(f"  {name:14s} " + ", ".join(
            f"{p} cos {e[p]['min_cosine']:.6f} rel {e[p]['max_rel']:.2e} ({e[p]['positions_within_bf16']}/"
            f"{e[p]['positions']} within bf16)" for p in PARTS))
    for kv, g in r["greedy"].items():
        lines.append(f"  greedy {kv}: " + ("codes equal to official f32 in every frame" if g["first_differing_frame"]
                                             is None else f"first differs at frame {g['first_differing_frame']} "
                                             f"codebook {g['codebook']}, official top-2 margin "
                                             f"{g['official_top2_margin']:.2e}"))
    lines.append(f"  min cosine {r['min_cosine']:.6f}; every trace within official bf16's error: {r['within_bf16']}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case_dir")
    ap.add_argument("lyre", nargs="+")
    ap.add_argument("--model", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--require-cosine", type=float,
                    help="exit 1 unless every trace's cosine reaches this and its error is within official bf16's")
    ap.add_argument("--require-greedy", action="store_true",
                    help="exit 1 unless every greedy run's codes equal official f32's in every frame")
    a = ap.parse_args()
    with open(os.path.join(a.case_dir, "config.json")) as f:
        cfg = json.load(f)
    eos = cfg["talker_config"]["codec_eos_token_id"]
    with open(os.path.join(a.case_dir, "generation_config.json")) as f:
        penalty = json.load(f).get("repetition_penalty", 1.05)
    r = compare(a.case_dir, a.lyre, eos, penalty)
    out = {}
    if os.path.exists(a.json):
        with open(a.json) as f:
            out = json.load(f)
    out[a.model] = r
    out[f"{a.model}_min_cosine"] = r["min_cosine"]
    with open(a.json, "w") as f:
        json.dump(out, f)
    print(summary(a.model, r))
    failed = []
    if a.require_cosine is not None and not (r["min_cosine"] >= a.require_cosine and r["within_bf16"]):
        failed.append(f"min cosine {r['min_cosine']:.6f} (required {a.require_cosine}), within bf16: {r['within_bf16']}")
    if a.require_greedy:
        failed += [f"greedy {name} differs at frame {g['first_differing_frame']}"
                   for name, g in r["greedy"].items() if g.get("first_differing_frame") is not None]
    if not r["greedy"] and a.require_greedy:
        failed.append("no greedy run to check")
    if failed:
        sys.exit("fidelity check failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
