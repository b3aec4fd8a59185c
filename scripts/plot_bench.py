#!/usr/bin/env python3
"""Plots `lyre bench --json` results beside the official implementation's.

    python3 -m pip install matplotlib==3.10.7
    python3 scripts/plot_bench.py --lyre "Lyre 0.6B=bench/results/2026-12-04-h200/0.6b.json" \
        --lyre "Lyre 1.7B=bench/results/2026-12-04-h200/1.7b.json" --official bench/results/2026-12-04-h200/official.json \
        --out docs/img/throughput.png

`--official` reads the results file of `../shared/device/baseline/bench_qwen.py` (its
`gen1`, `batch` and `graph` sections). Left: frames per second of all streams together; right:
× real time of each stream (1 = just real time), both against batch size.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FRAME_S = 0.08  # one 12.5 Hz codec frame


def lyre_series(path):
    runs = sorted(json.load(open(path))["runs"], key=lambda r: r["batch"])
    return ([r["batch"] for r in runs], [r["frames_per_s"] for r in runs],
            [r["x_real_time_per_stream"] for r in runs])


def official_series(path):
    """(label, batches, frames/s, × real time per stream) for eager generate and CUDA graphs."""
    res = json.load(open(path))
    out = []
    eager = []
    gen1 = res.get("gen1") or {}
    if gen1.get("ms_per_frame_marginal"):
        eager.append((1, 1e3 / gen1["ms_per_frame_marginal"]))
    for key, d in sorted((res.get("batch") or {}).items()):
        if isinstance(d, dict) and "frames_per_s" in d:
            eager.append((d["B"], d["frames_per_s"]))
    if eager:
        eager.sort()
        out.append(("official eager", [b for b, _ in eager], [f for _, f in eager],
                    [f / b * FRAME_S for b, f in eager]))
    graph = []
    for key, d in (res.get("graph") or {}).items():
        if isinstance(d, dict) and key.endswith("_sampled") and "frames_per_s" in d:
            graph.append((int(key[1:].split("_")[0]), d["frames_per_s"]))
    if graph:
        graph.sort()
        out.append(("official CUDA graph", [b for b, _ in graph], [f for _, f in graph],
                    [f / b * FRAME_S for b, f in graph]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lyre", action="append", default=[], metavar="LABEL=FILE", help="a lyre bench --json file")
    ap.add_argument("--official", help="bench_qwen.py results (qwen_bench.json)")
    ap.add_argument("--title", default="Qwen3-TTS on one NVIDIA H200")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    series = []
    for spec in args.lyre:
        label, _, path = spec.partition("=")
        series.append((label, "o-", *lyre_series(path)))
    if args.official:
        for label, b, f, x in official_series(args.official):
            series.append((label, "s--", b, f, x))
    if not series:
        ap.error("nothing to plot")

    fig, (ax_f, ax_x) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, style, b, f, x in series:
        ax_f.plot(b, f, style, label=label)
        ax_x.plot(b, x, style, label=label)
    for ax in (ax_f, ax_x):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("concurrent streams (batch)")
        ax.grid(True, which="both", alpha=0.3)
    ax_f.set_ylabel("codec frames per second (all streams)")
    ax_x.set_ylabel("× real time per stream")
    ax_x.axhline(1.0, color="gray", lw=1)
    ax_x.text(1, 1.05, "real time", color="gray")
    ax_f.legend(fontsize=8)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
