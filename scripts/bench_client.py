#!/usr/bin/env python3
"""Load generator for a running Lyre server: N concurrent WebSocket sessions, each streaming a
fixed number of frames (EOS disabled), repeated R rounds. Reports time to first audio (p50/p95/p99,
measured at the client from `start` to the first binary message), aggregate frames per second and
per-stream × real time. Needs `pip install websockets`.

    python3 scripts/bench_client.py --url ws://127.0.0.1:8080/v1/tts/stream --sessions 1,4,16 --frames 50
"""
import argparse
import asyncio
import json
import statistics
import time

import websockets


async def one(url, i, frames, voice, text):
    start = {"type": "start", "voice": voice, "text": text, "max_frames": frames, "ignore_eos": True,
             "seed": i, "format": "pcm16"}
    t0 = time.monotonic()
    first = None
    got = 0
    async with websockets.connect(url, subprotocols=["lyre"], max_size=None) as ws:
        await ws.send(json.dumps(start))
        await ws.send(json.dumps({"type": "end"}))
        async for msg in ws:
            if isinstance(msg, bytes):
                got += 1
                first = first if first is not None else time.monotonic() - t0
                continue
            m = json.loads(msg)
            if m["type"] == "done":
                break
            if m["type"] == "error":
                raise RuntimeError(m)
    return first, got, time.monotonic() - t0


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def run(args):
    rows = []
    for n in args.sessions:
        ttfa, fps, xrt = [], [], []
        for r in range(args.rounds):
            t0 = time.monotonic()
            res = await asyncio.gather(*(one(args.url, r * n + i, args.frames, args.voice, args.text)
                                         for i in range(n)))
            wall = time.monotonic() - t0
            assert all(g == args.frames for _, g, _ in res), "every frame arrived"
            ttfa += [f for f, _, _ in res]
            fps.append(n * args.frames / wall)
            xrt += [args.frames * 0.08 / (total - first) * (args.frames - 1) / args.frames for first, _, total in res]
        row = {"sessions": n, "ttfa_ms_p50": pct(ttfa, 50) * 1e3, "ttfa_ms_p95": pct(ttfa, 95) * 1e3,
               "ttfa_ms_p99": pct(ttfa, 99) * 1e3, "frames_per_s": statistics.median(fps),
               "x_real_time_per_stream_median": statistics.median(xrt)}
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="ws://127.0.0.1:8080/v1/tts/stream")
    ap.add_argument("--sessions", default="1,4,16", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--voice", default="ryan")
    ap.add_argument("--text", default="Hello world, this is a test of the streaming server.")
    ap.add_argument("--json")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
