#!/usr/bin/env python3
"""Soak test: starts `lyre serve` on the fixture model (loopback, port 0), drives mixed traffic for
`--minutes` (WebSocket streams, streams dropped mid-way, whole clips, OpenAI streaming, bad
requests) with `--concurrency` clients, and samples the server's memory each minute. On lavapipe
the "GPU" buffers live in the process, so RSS covers them. Fails (exit 1) if RSS grows more than
`--max-growth` between the first minute's sample (after allocator warm-up) and the last, if any
well-formed session fails, or if the server ends unready or with live sessions.

    python3 scripts/soak.py --minutes 30 --json bench/results/soak-lavapipe.json
"""
import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from loadgen import http_session, ws_session, ws_url  # noqa: E402
from conftest import Server  # noqa: E402


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def bad_requests(client, url):
    """Requests that must be refused with a 4xx or an `error` message."""
    r = await client.post(url + "/v1/tts", content=b"{not json", timeout=30)
    assert 400 <= r.status_code < 500, r.status_code
    r = await client.post(url + "/v1/tts", json={"text": "Hi.", "voice": "nobody"}, timeout=30)
    assert r.status_code == 400, r.status_code
    async with websockets.connect(ws_url(url), subprotocols=["lyre"]) as ws:
        await ws.send(b"\xff\xfe")
        assert json.loads(await ws.recv())["type"] == "error"
        await ws.send(json.dumps({"type": "text", "text": "before start"}))
        assert json.loads(await ws.recv())["code"] == "no_session"


async def openai_stream(client, url, seed):
    body = {"model": "lyre", "input": "Hello there.", "voice": "ryan", "response_format": "pcm",
            "max_frames": 6, "ignore_eos": True, "seed": seed}
    async with client.stream("POST", url + "/v1/audio/speech", json=body, timeout=300) as r:
        n = 0
        async for chunk in r.aiter_bytes():
            n += len(chunk)
    assert r.status_code == 200 and n == 6 * 3840, (r.status_code, n)


async def client_loop(url, deadline, rng, counts, errors):
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            kind = rng.choices(["ws", "drop", "http", "openai", "bad"], [40, 15, 20, 10, 15])[0]
            seed = rng.randrange(1 << 30)
            try:
                if kind == "ws":
                    r = await ws_session(url, seed, rng.randint(4, 24))
                    assert r["ok"], r["problems"]
                elif kind == "drop":
                    await ws_session(url, seed, 200, close_after=rng.randint(1, 6))
                elif kind == "http":
                    r = await http_session(client, url, seed, rng.randint(2, 12))
                    assert r["ok"], r["problems"]
                elif kind == "openai":
                    await openai_stream(client, url, seed)
                else:
                    await bad_requests(client, url)
                counts[kind] = counts.get(kind, 0) + 1
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                errors.append(f"{kind}: {e!r}"[:300])


async def soak(server, minutes, concurrency, seed):
    rng = random.Random(seed)
    counts, errors, samples = {}, [], []
    t0 = time.monotonic()
    deadline = t0 + minutes * 60
    clients = [asyncio.create_task(client_loop(server.url, deadline, random.Random(rng.random()), counts, errors))
               for _ in range(concurrency)]

    def sample():
        m = httpx.get(server.url + "/metrics", timeout=30).text
        s = {"minute": round((time.monotonic() - t0) / 60, 2), "rss_kib": rss_kib(server.proc.pid),
             "frames_total": int(metric(m, "lyre_frames_total")), "live": server.live_sessions(),
             "requests": sum(counts.values()), "errors": len(errors)}
        samples.append(s)
        print(json.dumps(s), flush=True)

    sample()
    for minute in range(1, int(minutes) + 1):
        await asyncio.sleep(max(0.0, t0 + minute * 60 - time.monotonic()))
        sample()
    await asyncio.gather(*clients)
    await asyncio.sleep(1.0)
    sample()
    return counts, errors, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-growth", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    server = Server(env={"LYRE_LOG": "warn"})
    try:
        counts, errors, samples = asyncio.run(soak(server, args.minutes, args.concurrency, args.seed))
        ready = httpx.get(server.url + "/readyz", timeout=30).status_code == 200
        live = server.live_sessions()
    finally:
        code = server.stop()
    base = samples[1] if len(samples) > 2 else samples[0]
    growth = samples[-1]["rss_kib"] / base["rss_kib"] - 1
    result = {"minutes": args.minutes, "concurrency": args.concurrency, "requests": counts,
              "errors": errors[:20], "error_count": len(errors), "rss_growth": round(growth, 4),
              "ready_after": ready, "live_after": live, "exit_code": code, "samples": samples}
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    ok = growth < args.max_growth and not errors and ready and live == 0 and code == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
