#!/usr/bin/env python3
"""Writes OUT/latest.json, the summary every GPU run leaves (docs/bench/latest.json in the repo),
from the files scripts/device/nvidia.sh put in OUT: bench-*.json (`lyre bench`), qwen_bench.json
(the official CUDA-graph loop), peer-*.json (scripts/device/peers.py), load-{ws,http}.json
(scripts/loadgen.py --rates) and fidelity.json (scripts/fidelity/). A figure nobody measured in
this run is null; an existing latest.json in OUT of the same card is merged under the new
figures."""
import datetime
import json
import os
import subprocess
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def engine(out, tag):
    """The batch figures of bench-TAG.json: ms per tick at each batch, TTFA at batch 1."""
    b = load(os.path.join(out, f"bench-{tag}.json"))
    res = {k: None for k in ("b1_ms", "b8_ms", "b32_ms", "b64_ms", "b256_ms", "ttfa_ms")}
    if not b:
        return res, None
    for r in b.get("runs", []):
        key = f"b{r['batch']}_ms"
        if key in res:
            res[key] = round(r["ms_per_frame"], 3)
        if r["batch"] == 1:
            res["ttfa_ms"] = round(r["ttfa_ms"], 3)
    return res, b.get("adapter", {}).get("name")


def official(out):
    """bench_qwen.py's `graph` section: one frame captured as a CUDA graph, batch 1 and 32."""
    g = (load(os.path.join(out, "qwen_bench.json")) or {}).get("graph") or {}
    b1 = g.get("b1_sampled") or g.get("b1_greedy") or {}
    b32 = g.get("b32_sampled") or {}
    return {"b1_ms": b1.get("graph_ms_per_frame_wall"), "b32_frames_per_s": b32.get("frames_per_s")}


def peers(out):
    f = load(os.path.join(out, "peer-faster.json")) or {}
    b = load(os.path.join(out, "peer-batched.json")) or {}
    return {"faster_qwen3_tts": {"b1_ms": f.get("b1_ms"), "ttfa_ms": f.get("ttfa_ms")},
            "faster_qwen3_tts_batch": {"b8_frames_per_s": b.get("b8_frames_per_s"),
                                       "b32_frames_per_s": b.get("b32_frames_per_s")}}


def server(out):
    rows = []
    # The default configuration only: A/B runs write load-TRANSPORT-SUFFIX.json beside it.
    for path in [os.path.join(out, f"load-{t}.json") for t in ("ws", "http")]:
        for r in (load(path) or {}).get("rows", []):
            rows.append({"transport": r["transport"], "rps": r["rate_rps"], "ttfa_p50_ms": r["ttfa_p50_ms"],
                         "ttfa_p95_ms": r["ttfa_p95_ms"], "ttfa_p99_ms": r["ttfa_p99_ms"],
                         "underruns": r["underruns"], "errors": r["errors"], "rtf_p50": r["rtf_p50"]})
    return rows


def commit():
    if os.environ.get("LYRE_COMMIT"):
        return os.environ["LYRE_COMMIT"]
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], text=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("LYRE_COMMIT")


def main(out):
    prev = load(os.path.join(out, "latest.json")) or {}
    e06, card06 = engine(out, "0.6b")
    e17, card17 = engine(out, "1.7b")
    gpu = open(os.path.join(out, "gpu.txt")).read().splitlines()[1:2] if os.path.exists(os.path.join(out, "gpu.txt")) else []
    card = card06 or card17 or (gpu[0].split(",")[0] if gpu else None) or prev.get("card")
    fid = load(os.path.join(out, "fidelity.json")) or {}
    new = {
        "card": card,
        "date": datetime.date.today().isoformat(),
        "commit": commit() or prev.get("commit"),
        "engine": {"0.6b": e06, "1.7b": e17},
        "peers": {"official_cuda_graph": official(out), **peers(out)},
        "server_1.7b": server(out),
        "fidelity": {"0.6b_min_cosine": fid.get("0.6b_min_cosine"), "1.7b_min_cosine": fid.get("1.7b_min_cosine")},
    }
    if not measured({k: new[k] for k in ("engine", "peers", "server_1.7b", "fidelity")}):
        # A run that measured nothing (the kernel tests) leaves the summary as it was.
        new.update(card=prev.get("card"), date=prev.get("date"), commit=prev.get("commit"))
    elif prev.get("card") != card:
        # Figures of another card are not this card's: what this run did not measure is null.
        prev = {}
    merged = merge(prev, new)
    merged["server_1.7b"] = merged.get("server_1.7b") or []
    with open(os.path.join(out, "latest.json"), "w") as f:
        json.dump(merged, f, indent=2)
    print(json.dumps(merged))


def measured(figures):
    """Whether any figure in this nest of dicts and lists is there (not null, not empty)."""
    if isinstance(figures, dict):
        return any(measured(v) for v in figures.values())
    if isinstance(figures, list):
        return bool(figures)
    return figures is not None


def merge(old, new):
    """New figures win; a null or empty new figure keeps the old one."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: merge(old.get(k), v) for k, v in new.items()}
    if new is None or new == []:
        return old
    return new


if __name__ == "__main__":
    main(sys.argv[1])
