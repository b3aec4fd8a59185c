#!/usr/bin/env python3
"""Open-loop load: requests arrive as a Poisson process at a set rate for a set time, whether or
not earlier ones have finished (as users do), over the WebSocket (`/v1/tts/stream`, pcm16) or
streaming `POST /v1/audio/speech` (pcm). Texts are drawn from a fixed corpus of English sentences
(`scripts/corpus/english.txt`); each request asks for `ignore_eos` and a natural number of frames
for its text (0.4 s of speech per word; random weights never stop by themselves). `text_mode`
picks how the text enters the prompt (the server's default per transport when left out: the
WebSocket feeds it one token per frame, `streaming`; HTTP puts all of it in the prompt,
`whole`, which makes the first tick longer).

Per request it measures, at the client:
* time to first audio (TTFA): from sending the request to the first audio byte;
* real-time factor: time from the first to the last audio byte over the audio's duration
  (< 1 is faster than real time);
* underruns: audio that arrives later than it would play. Playback starts when the first audio
  arrives; the sample at offset s then plays at first + s / 24000 s. A chunk whose first sample's
  play time has passed when it arrives is one underrun (counted once per late chunk).

Beside them, per rate: the client's event-loop lag (how late a task sleeping 5 ms wakes: time
the loop spent on other sockets while a first frame may have waited to be read; `--procs`
spreads the arrivals over several client processes when it grows) and the server's own TTFA
percentiles over the same interval, from its `lyre_ttfa_seconds` histogram (request received to
first frame handed to the connection), where `/metrics` answers.

    python3 scripts/loadgen.py --url http://127.0.0.1:8080 --rates 5,10,20,40 --duration 30 \
        --transport ws --json out.json

Needs `pip install websockets httpx`.
"""
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import random
import time

import httpx
import websockets

SAMPLE_RATE = 24000
BYTES_PER_SAMPLE = 2
SECONDS_PER_WORD = 0.4
FRAME_S = 0.08
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "english.txt")


def load_corpus(path=CORPUS):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def frames_for(text):
    """A natural length for the text: 0.4 s per word, in 80 ms frames."""
    return max(1, round(len(text.split()) * SECONDS_PER_WORD / FRAME_S))


def pct(values, p):
    """Nearest-rank percentile (p in 0..100); None for no values."""
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]


class Playback:
    """Audio bytes as they arrive, against a player that starts at the first byte."""

    def __init__(self, t_sent):
        self.t_sent = t_sent
        self.first = None
        self.last = None
        self.bytes = 0
        self.underruns = 0
        self.worst_late_s = 0.0

    def chunk(self, n, now):
        if n == 0:
            return
        if self.first is None:
            self.first = now
        else:
            due = self.first + (self.bytes / BYTES_PER_SAMPLE) / SAMPLE_RATE
            if now > due:
                self.underruns += 1
                self.worst_late_s = max(self.worst_late_s, now - due)
        self.bytes += n
        self.last = now

    def result(self, frames_asked, problems):
        audio_s = self.bytes / BYTES_PER_SAMPLE / SAMPLE_RATE
        res = {"ok": not problems, "problems": problems, "frames_asked": frames_asked,
               "audio_s": round(audio_s, 3), "underruns": self.underruns,
               "worst_late_ms": round(self.worst_late_s * 1e3, 1)}
        if self.first is not None:
            res["ttfa_ms"] = round((self.first - self.t_sent) * 1e3, 2)
            if audio_s > 0:
                res["rtf"] = round((self.last - self.first) / audio_s, 4)
        return res


async def ws_request(url, text, frames, seed, voice, key=None, timeout=600, text_mode=None):
    ws_url = url.replace("http://", "ws://").replace("https://", "wss://").rstrip("/") + "/v1/tts/stream"
    protocols = ["lyre"] + ([f"lyre.token.{key}"] if key else [])
    start = {"type": "start", "voice": voice, "text": text, "max_frames": frames, "ignore_eos": True,
             "seed": seed, "format": "pcm16"}
    if text_mode:
        start["text_mode"] = text_mode
    problems = []
    async with asyncio.timeout(timeout):
        async with websockets.connect(ws_url, subprotocols=protocols, max_size=None) as ws:
            play = Playback(time.monotonic())
            await ws.send(json.dumps(start))
            await ws.send(json.dumps({"type": "end"}))
            done = None
            async for msg in ws:
                if isinstance(msg, bytes):
                    play.chunk(len(msg), time.monotonic())
                    continue
                m = json.loads(msg)
                if m["type"] == "done":
                    done = m
                    break
                if m["type"] == "error":
                    field = f" ({m['field']})" if m.get("field") else ""
                    problems.append(f"error {m.get('code')}{field}: {m.get('message')}")
                    break
    if done is None and not problems:
        problems.append("no done")
    expected = frames * 1920 * BYTES_PER_SAMPLE
    if not problems and play.bytes != expected:
        problems.append(f"{play.bytes} audio bytes, expected {expected}")
    return play.result(frames, problems)


async def http_request(client, url, text, frames, seed, voice, key=None, timeout=600, text_mode=None):
    body = {"model": "lyre", "input": text, "voice": voice, "response_format": "pcm",
            "max_frames": frames, "ignore_eos": True, "seed": seed}
    if text_mode:
        body["text_mode"] = text_mode
    headers = {"authorization": f"Bearer {key}"} if key else {}
    problems = []
    play = Playback(time.monotonic())
    async with client.stream("POST", url.rstrip("/") + "/v1/audio/speech", json=body, headers=headers,
                             timeout=timeout) as r:
        if r.status_code != 200:
            problems.append(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
            return play.result(frames, problems)
        async for chunk in r.aiter_raw():
            play.chunk(len(chunk), time.monotonic())
    expected = frames * 1920 * BYTES_PER_SAMPLE
    if play.bytes != expected:
        problems.append(f"{play.bytes} audio bytes, expected {expected}")
    return play.result(frames, problems)


async def run_rate(url, rate, duration, transport="ws", voice="ryan", seed=0, key=None, corpus=None,
                   timeout=600, max_frames=None, text_mode=None, procs=1):
    """Poisson arrivals at `rate` per second for `duration` seconds; waits for every request.
    `max_frames` caps each request's length (tests on slow adapters). `procs` > 1 splits the
    arrivals over that many client processes (each a Poisson process of rate / procs, so
    together one of `rate`), for rates at which one Python event loop would be late to read
    its sockets. The row also gives the client's event-loop lag and, where the server's
    `/metrics` answers, the server's own TTFA percentiles over the same requests."""
    before = await server_ttfa_buckets(url, key)

    def args(process):
        """`_arrivals`' arguments for client process `process` (0: the one-process arrivals)."""
        return (url, rate / max(procs, 1), duration, transport, voice, seed + PROC_SEED_STEP * process, key, corpus,
                timeout, max_frames, text_mode)

    if procs <= 1:
        results, wall, lags = await _arrivals(*args(0))
    else:
        loop = asyncio.get_running_loop()
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(procs, mp_context=ctx) as pool:
            parts = await asyncio.gather(*(loop.run_in_executor(pool, _arrivals_in_process, args(p))
                                           for p in range(procs)))
        results = [r for part in parts for r in part[0]]
        wall = max(part[1] for part in parts)
        lags = [lag for part in parts for lag in part[2]]
    after = await server_ttfa_buckets(url, key)
    row = summarize(results, rate, duration, transport, wall, text_mode)
    row["procs"] = max(procs, 1)
    lags_ms = [lag * 1e3 for lag in lags]
    row["loop_lag_p99_ms"] = round(pct(lags_ms, 99), 2) if lags_ms else None
    row["loop_lag_max_ms"] = round(max(lags_ms), 2) if lags_ms else None
    for p in (50, 95, 99):
        q = bucket_quantile(before, after, p / 100)
        row[f"server_ttfa_p{p}_ms"] = None if q is None else round(q * 1e3, 2)
    return row


# Seeds of the client processes after the first (whose arrivals are those of one process).
PROC_SEED_STEP = 7919
# How often the lag monitor wakes, in seconds.
LAG_PROBE_S = 0.005


async def _arrivals(url, rate, duration, transport, voice, seed, key, corpus, timeout, max_frames, text_mode):
    """Sends one Poisson process of requests; returns (results, wall seconds, event-loop lags)."""
    corpus = corpus or load_corpus()
    arrivals, texts = random.Random(seed), random.Random(seed + 1)
    tasks = []
    lags = []
    stop = asyncio.Event()
    monitor = asyncio.create_task(_loop_lag(lags, stop))
    t0 = time.monotonic()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits) as client:
        next_at = arrivals.expovariate(rate)
        i = 0
        while next_at < duration:
            delay = t0 + next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            text = texts.choice(corpus)
            frames = frames_for(text) if max_frames is None else min(frames_for(text), max_frames)
            use_ws = transport == "ws" or (transport == "mixed" and i % 2 == 0)
            if use_ws:
                coro = ws_request(url, text, frames, seed * 100003 + i, voice, key, timeout, text_mode)
            else:
                coro = http_request(client, url, text, frames, seed * 100003 + i, voice, key, timeout, text_mode)
            tasks.append(asyncio.create_task(coro))
            i += 1
            next_at += arrivals.expovariate(rate)
        results = await asyncio.gather(*tasks, return_exceptions=True)
    wall = time.monotonic() - t0
    stop.set()
    await monitor
    return results, wall, lags


def _arrivals_in_process(args):
    """`_arrivals` in a client process of its own; exceptions come back as their repr."""
    results, wall, lags = asyncio.run(_arrivals(*args))
    return [r if isinstance(r, dict) else repr(r) for r in results], wall, lags


async def _loop_lag(lags, stop):
    """How late the event loop wakes a task that sleeps LAG_PROBE_S: time the loop spent on
    other work (reading sockets, parsing) while a frame may have waited to be read."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(LAG_PROBE_S)
        lags.append(max(0.0, time.monotonic() - t - LAG_PROBE_S))


async def server_ttfa_buckets(url, key=None):
    """The server's `lyre_ttfa_seconds` histogram as {upper bound: cumulative count}, or None
    where `/metrics` does not answer."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient() as client:
            r = await client.get(url.rstrip("/") + "/metrics", headers=headers, timeout=10)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    return parse_buckets(r.text, "lyre_ttfa_seconds")


def parse_buckets(text, name):
    buckets = {}
    for line in text.splitlines():
        if not line.startswith(name + "_bucket{"):
            continue
        labels, value = line.rsplit(" ", 1)
        le = labels.split('le="', 1)[1].split('"', 1)[0]
        buckets[float(le)] = float(value)
    return buckets or None


def bucket_quantile(before, after, q):
    """The q-quantile of the observations between two scrapes of a cumulative histogram, found
    as Prometheus's histogram_quantile does: linear within the bucket it falls in."""
    if not after:
        return None
    bounds = sorted(after)
    counts = [after[b] - (before or {}).get(b, 0.0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts):
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = bound, count
    return lower


def summarize(results, rate, duration, transport, wall, text_mode=None):
    errors = [r if isinstance(r, str) else repr(r) for r in results if not isinstance(r, dict)]
    ok = [r for r in results if isinstance(r, dict)]
    errors += [";".join(r["problems"]) for r in ok if r["problems"]]
    ttfa = [r["ttfa_ms"] for r in ok if "ttfa_ms" in r]
    rtf = [r["rtf"] for r in ok if "rtf" in r]
    late = [r for r in ok if r["underruns"]]
    audio = sum(r["audio_s"] for r in ok)
    out = {"transport": transport, "text_mode": text_mode or "default", "rate_rps": rate, "duration_s": duration, "requests": len(results),
           "errors": len(errors), "error_samples": errors[:5], "wall_s": round(wall, 2),
           "audio_s": round(audio, 3),
           "underruns": sum(r["underruns"] for r in ok), "streams_with_underrun": len(late),
           "worst_late_ms": max((r["worst_late_ms"] for r in ok), default=0.0)}
    for p in (50, 95, 99):
        out[f"ttfa_p{p}_ms"] = pct(ttfa, p)
        out[f"rtf_p{p}"] = pct(rtf, p)
    out["rtf_max"] = max(rtf, default=None)
    return out


def table(rows):
    head = ("rps", "transport", "text_mode", "requests", "errors", "ttfa_p50", "ttfa_p95", "ttfa_p99", "rtf_p50",
            "rtf_p99", "underruns", "late_streams", "srv_p95", "srv_p99", "lag_p99")
    lines = ["  ".join(f"{h:>10}" for h in head)]
    for r in rows:
        vals = (r["rate_rps"], r["transport"], r.get("text_mode", "default"), r["requests"], r["errors"], r["ttfa_p50_ms"], r["ttfa_p95_ms"],
                r["ttfa_p99_ms"], r["rtf_p50"], r["rtf_p99"], r["underruns"], r["streams_with_underrun"],
                r.get("server_ttfa_p95_ms"), r.get("server_ttfa_p99_ms"), r.get("loop_lag_p99_ms"))
        lines.append("  ".join(f"{v if v is not None else '-':>10}" for v in vals))
    return "\n".join(lines)


async def sweep(url, rates, duration, transport="ws", voice="ryan", seed=0, key=None, pause_s=2.0, text_mode=None,
                procs=1):
    rows = []
    for k, rate in enumerate(rates):
        rows.append(await run_rate(url, rate, duration, transport, voice, seed + k, key, text_mode=text_mode,
                                   procs=procs))
        await asyncio.sleep(pause_s)
    return rows


def best_rate(rows, ttfa_p95_ms=100.0):
    """The highest rate with p95 TTFA within the bound, no error and no underrun."""
    good = [r["rate_rps"] for r in rows
            if not r["errors"] and not r["underruns"] and r["ttfa_p95_ms"] is not None
            and r["ttfa_p95_ms"] <= ttfa_p95_ms]
    return max(good, default=None)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run_rate("http://127.0.0.1:8080", 1.0, 3.0)), indent=2))
