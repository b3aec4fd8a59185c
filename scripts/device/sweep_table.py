#!/usr/bin/env python3
"""The table of `nvidia.sh sweep`: ms per frame of each variant at each batch, and its ratio to
the mean of the two default runs (below 1: faster).

    sweep_table.py OUT_DIR"""
import glob
import json
import os
import sys


def runs(path):
    with open(path) as f:
        return {r["batch"]: r["ms_per_frame"] for r in json.load(f)["runs"]}


out = sys.argv[1]
results = {}
for path in sorted(glob.glob(os.path.join(out, "bench-sweep-*.json"))):
    name = os.path.basename(path)[len("bench-sweep-"):-len(".json")]
    try:
        results[name] = runs(path)
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: unreadable ({e})")
bases = [results[n] for n in ("base", "base_again") if n in results]
if not bases:
    sys.exit("no default run")
batches = sorted(bases[0])
base = {b: sum(r[b] for r in bases) / len(bases) for b in batches}
print(f"{'variant':<18}" + "".join(f"{'b' + str(b) + ' ms':>10}{'ratio':>7}" for b in batches))
for name, r in results.items():
    cells = "".join(f"{r[b]:>10.3f}{r[b] / base[b]:>7.3f}" if b in r else f"{'-':>10}{'':>7}" for b in batches)
    print(f"{name:<18}{cells}")
