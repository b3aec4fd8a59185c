#!/usr/bin/env python3
"""Load generator for a running Lyre server: N concurrent WebSocket streams and M concurrent HTTP
clips (bounded in count and in time), every frame accounted for. Each WebSocket session asks for
the codes too, so the frame indices can be checked (contiguous from 0); audio must be exactly
frames x 1920 samples, and a `done` must arrive. Reports time to first audio (client side, from
`start` to the first binary message) as p50/p95/p99. Needs `pip install websockets httpx`.

    python3 scripts/loadgen.py --url http://127.0.0.1:8080 --ws 64 --http 8 --frames 12

With `--rates`, open-loop load instead (scripts/openloop.py): Poisson arrivals at each rate for
`--duration` seconds, texts from scripts/corpus/english.txt, over `--transport ws|http|mixed`;
reports TTFA p50/p95/p99, per-stream real-time factor and underruns, and the highest rate with
p95 TTFA <= `--ttfa-bound-ms` and no underrun:

    python3 scripts/loadgen.py --url http://127.0.0.1:8080 --rates 5,10,20,40 --duration 30

Also a library: tests/reliability and scripts/soak.py import `ws_session`, `http_session`, `run`.
"""
import argparse
import asyncio
import json
import sys
import time

import httpx
import websockets

import openloop
from openloop import pct

SAMPLES_PER_FRAME = 1920
TEXT = "Hello world, this is a test of the streaming server."


def ws_url(url):
    return url.replace("http://", "ws://").rstrip("/") + "/v1/tts/stream"


async def ws_session(url, seed, frames, text=TEXT, voice="ryan", close_after=None, timeout=600):
    """One WebSocket stream. Returns a dict: ok, frames, ttfa_s, problems (what did not add up).
    `close_after=k` drops the connection after k frames (a client going away mid-stream)."""
    start = {"type": "start", "voice": voice, "text": text, "max_frames": frames, "ignore_eos": True,
             "seed": seed, "format": "pcm16", "codes": True}
    t0 = time.monotonic()
    res = {"ok": False, "frames": 0, "ttfa_s": None, "problems": [], "done": None}
    audio_bytes, indices = 0, []
    async with asyncio.timeout(timeout):
        async with websockets.connect(ws_url(url), subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps(start))
            await ws.send(json.dumps({"type": "end"}))
            async for msg in ws:
                if isinstance(msg, bytes):
                    if res["ttfa_s"] is None:
                        res["ttfa_s"] = time.monotonic() - t0
                    audio_bytes += len(msg)
                    res["frames"] += 1
                    if close_after is not None and res["frames"] >= close_after:
                        res["ok"] = True
                        return res
                    continue
                m = json.loads(msg)
                if m["type"] == "codes":
                    indices.append(m["frame"])
                elif m["type"] == "done":
                    res["done"] = m
                    break
                elif m["type"] == "error":
                    res["problems"].append(f"error {m.get('code')}: {m.get('message')}")
                    return res
    n = res["frames"]
    if res["done"] is None:
        res["problems"].append("no done")
    elif res["done"]["frames"] != n:
        res["problems"].append(f"done says {res['done']['frames']} frames, got {n}")
    if n != frames:
        res["problems"].append(f"{n} frames, asked for {frames}")
    if indices != list(range(n)):
        res["problems"].append(f"frame indices not contiguous: {indices[:5]}...")
    if audio_bytes != n * SAMPLES_PER_FRAME * 2:
        res["problems"].append(f"{audio_bytes} audio bytes for {n} frames")
    res["ok"] = not res["problems"]
    return res


async def http_session(client, url, seed, frames, text=TEXT, voice="vivian"):
    """One whole clip over POST /v1/tts (raw PCM): audio must be X-Lyre-Frames x 1920 samples."""
    body = {"text": text, "voice": voice, "format": "pcm", "max_frames": frames, "ignore_eos": True,
            "seed": seed}
    t0 = time.monotonic()
    r = await client.post(url.rstrip("/") + "/v1/tts", json=body, timeout=600)
    res = {"ok": False, "frames": 0, "ttfa_s": None, "problems": [], "status": r.status_code}
    if r.status_code != 200:
        res["problems"].append(f"HTTP {r.status_code}: {r.text[:200]}")
        return res
    n = int(r.headers["x-lyre-frames"])
    res["frames"] = n
    res["ttfa_s"] = float(r.headers["x-lyre-ttfa-ms"]) / 1e3
    res["wall_s"] = time.monotonic() - t0
    if n != frames:
        res["problems"].append(f"{n} frames, asked for {frames}")
    if len(r.content) != n * SAMPLES_PER_FRAME * 2:
        res["problems"].append(f"{len(r.content)} bytes for {n} frames")
    res["ok"] = not res["problems"]
    return res


async def run(url, ws=64, http=0, frames=12, seed0=0, timeout=600):
    """`ws` WebSocket streams and `http` clips, all at once. Returns a summary dict."""
    t0 = time.monotonic()
    async with httpx.AsyncClient() as client:
        tasks = [ws_session(url, seed0 + i, frames, timeout=timeout) for i in range(ws)]
        tasks += [http_session(client, url, seed0 + ws + i, frames) for i in range(http)]
        results = await asyncio.gather(*tasks, return_exceptions=True)
    wall = time.monotonic() - t0
    failed = [r if isinstance(r, Exception) else r["problems"] for r in results
              if isinstance(r, Exception) or not r["ok"]]
    ws_ttfa = [r["ttfa_s"] for r in results[:ws] if isinstance(r, dict) and r["ttfa_s"] is not None]
    total = sum(r["frames"] for r in results if isinstance(r, dict))
    summary = {"ws_sessions": ws, "http_sessions": http, "frames_each": frames, "frames_total": total,
               "failed": len(failed), "failures": [str(f) for f in failed[:5]], "wall_s": round(wall, 2),
               "frames_per_s": round(total / wall, 2)}
    if ws_ttfa:
        summary.update({f"ttfa_ms_p{p}": round(pct(ws_ttfa, p) * 1e3, 1) for p in (50, 95, 99)})
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--ws", type=int, default=64, help="concurrent WebSocket streams")
    ap.add_argument("--http", type=int, default=0, help="concurrent POST /v1/tts clips")
    ap.add_argument("--frames", type=int, default=12, help="frames per session (EOS ignored)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a session may take")
    ap.add_argument("--json", help="also write the summary here")
    ap.add_argument("--rates", help="open-loop mode: comma-separated arrival rates (requests/s)")
    ap.add_argument("--duration", type=float, default=30, help="open-loop: seconds of arrivals per rate")
    ap.add_argument("--transport", choices=["ws", "http", "mixed"], default="ws", help="open-loop transport")
    ap.add_argument("--text-mode", choices=["whole", "streaming"],
                    help="open-loop: how the text enters the prompt (default: the server's for each transport)")
    ap.add_argument("--voice", default="ryan", help="open-loop: the voice every request uses")
    ap.add_argument("--procs", type=int, default=1,
                    help="open-loop: client processes the arrivals are spread over (one Poisson process each)")
    ap.add_argument("--key", help="open-loop: API key")
    ap.add_argument("--seed", type=int, default=0, help="open-loop: arrivals and texts")
    ap.add_argument("--ttfa-bound-ms", type=float, default=100, help="open-loop: the p95 TTFA bound")
    args = ap.parse_args()
    if args.rates:
        return open_loop(args)
    summary = asyncio.run(run(args.url, args.ws, args.http, args.frames, timeout=args.timeout))
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    sys.exit(1 if summary["failed"] else 0)


def open_loop(args):
    rates = [float(r) for r in args.rates.split(",")]
    rows = asyncio.run(openloop.sweep(args.url, rates, args.duration, args.transport, args.voice, args.seed,
                                      args.key, text_mode=args.text_mode, procs=args.procs))
    best = openloop.best_rate(rows, args.ttfa_bound_ms)
    print(openloop.table(rows))
    print(f"highest rate with p95 TTFA <= {args.ttfa_bound_ms:g} ms and no underrun: {best}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "best_rate_rps": best, "ttfa_bound_ms": args.ttfa_bound_ms}, f, indent=2)
    sys.exit(1 if any(r["errors"] for r in rows) else 0)


if __name__ == "__main__":
    main()
