#!/usr/bin/env python3
"""Time to first audio of one request at a time, over each transport and text mode: the cost of
the prompt alone, without load. Over the WebSocket the server's default feeds the text one token
per frame (`streaming`); streaming `POST /v1/audio/speech` puts all of it in the prompt (`whole`),
so its first tick runs the talker over every token of the text first.

    python3 scripts/ttfa_modes.py --url http://127.0.0.1:8080 --requests 12 --json out.json

Each combination sends `--requests` requests of the same sentence (3 frames each, EOS ignored),
one after another with a short pause, and reports the median and the lowest TTFA at the client;
the first `--warmup` of each are left out. Needs `pip install websockets httpx`.
"""
import argparse
import asyncio
import json
import statistics

import httpx

import openloop

TEXT = "The quick brown fox jumps over the lazy dog while the birds sing in the tall green trees."
COMBINATIONS = [("ws", None), ("ws", "whole"), ("http", None), ("http", "streaming")]


async def measure(url, requests, warmup=2, voice="ryan", text=TEXT, pause_s=0.3):
    """Rows of transport, text_mode, ttfa_median_ms, ttfa_min_ms, requests; requests in turn
    over every combination, so that a drift of the server's speed touches them all alike."""
    ttfa = {c: [] for c in COMBINATIONS}
    problems = []
    async with httpx.AsyncClient() as client:
        for i in range(requests):
            for transport, mode in COMBINATIONS:
                if transport == "ws":
                    r = await openloop.ws_request(url, text, 3, i, voice, text_mode=mode)
                else:
                    r = await openloop.http_request(client, url, text, 3, i, voice, text_mode=mode)
                problems += r["problems"]
                if "ttfa_ms" in r and i >= warmup:
                    ttfa[(transport, mode)].append(r["ttfa_ms"])
                await asyncio.sleep(pause_s)
    rows = [{"transport": t, "text_mode": m or "default", "requests": len(v),
             "ttfa_median_ms": round(statistics.median(v), 2) if v else None,
             "ttfa_min_ms": min(v, default=None)} for (t, m), v in ttfa.items()]
    return rows, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--requests", type=int, default=12, help="requests per combination")
    ap.add_argument("--warmup", type=int, default=2, help="first requests of each left out")
    ap.add_argument("--voice", default="ryan")
    ap.add_argument("--pause-s", type=float, default=0.3,
                    help="idle time before each request (a GPU lowers its clocks when idle)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows, problems = asyncio.run(measure(args.url, args.requests, args.warmup, args.voice, pause_s=args.pause_s))
    print(f"{'transport':>10} {'text_mode':>10} {'median ms':>10} {'min ms':>8}")
    for r in rows:
        print(f"{r['transport']:>10} {r['text_mode']:>10} {r['ttfa_median_ms']!s:>10} {r['ttfa_min_ms']!s:>8}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"text": TEXT, "rows": rows, "problems": problems}, f, indent=2)
    raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
