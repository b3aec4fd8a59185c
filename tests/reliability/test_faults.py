"""Point 2: clients that vanish mid-stream, a client that never reads, a failed GPU tick, a full
queue and SIGTERM under load. Each on its own server."""

import asyncio
import json
import os
import random
import signal
import socket
import threading
import time

import httpx
import websockets

from conftest import TEXT, Server, loadgen, metric, no_panics, rss_kib

DISCONNECTS = int(os.environ.get("LYRE_REL_DISCONNECTS", "200"))


def wait_for(pred, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


async def vanish(url, rng, seed):
    """Opens a long stream and goes away after a random number of frames (0: right after start)."""
    after = rng.randint(0, 6)
    if after == 0:
        async with websockets.connect(loadgen.ws_url(url), subprotocols=["lyre"]) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 150,
                                      "ignore_eos": True, "seed": seed}))
        return
    r = await loadgen.ws_session(url, seed, 150, close_after=after, timeout=120)
    assert r["ok"], r["problems"]


async def vanish_many(url, n, concurrency, seed):
    rng = random.Random(seed)
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        async with sem:
            await vanish(url, rng, seed * 1000 + i)

    await asyncio.gather(*(one(i) for i in range(n)))


def test_random_mid_stream_disconnects_free_every_slot_and_memory_stays_flat():
    s = Server(env={"LYRE_ENGINE_MAX_SESSIONS": "16"})
    try:
        asyncio.run(vanish_many(s.url, 32, 16, seed=1))  # warm-up: allocator, buffers, caches
        assert wait_for(lambda: s.live_sessions() == 0)
        before = rss_kib(s.proc.pid)
        asyncio.run(vanish_many(s.url, DISCONNECTS, 16, seed=2))
        assert wait_for(lambda: s.live_sessions() == 0), "every slot is freed"
        ready = httpx.get(s.url + "/readyz").json()
        assert ready["live_sessions"] == 0 and ready["queued_sessions"] == 0, ready
        after = rss_kib(s.proc.pid)
        print(f"\n{DISCONNECTS} disconnects: RSS {before} KiB -> {after} KiB ({after / before - 1:+.2%})")
        assert after < before * 1.05, (before, after)
        m = s.metrics()
        assert metric(m, "lyre_sessions_total", 'outcome="cancelled"') >= DISCONNECTS * 0.8
        # The slots really are free: a full batch of new sessions runs to the end.
        summary = asyncio.run(loadgen.run(s.url, ws=16, frames=4))
        assert summary["failed"] == 0, summary["failures"]
        no_panics(s)
    finally:
        assert s.stop() == 0


async def others_rate(url, slow, n_others=4, frames=40):
    """Frames per second each of `n_others` normal streams sees while a fifth client runs:
    a normal reader (`slow=False`) or one that never reads (`slow=True`)."""
    async def timed(i):
        t = []
        async with websockets.connect(loadgen.ws_url(url), subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": frames,
                                      "ignore_eos": True, "seed": i}))
            await ws.send(json.dumps({"type": "end"}))
            async for m in ws:
                if isinstance(m, bytes):
                    t.append(time.monotonic())
                elif json.loads(m)["type"] in ("done", "error"):
                    assert json.loads(m)["type"] == "done", m
                    break
        assert len(t) == frames
        return (frames - 1) / (t[-1] - t[0])

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host, port = url.replace("http://", "").split(":")
    sock.connect((host, int(port)))
    fifth = await websockets.connect(loadgen.ws_url(url), subprotocols=["lyre"], sock=sock, max_size=None,
                                     max_queue=1)
    await fifth.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 150,
                                 "ignore_eos": True, "seed": 99}))
    await fifth.send(json.dumps({"type": "end"}))
    reader = None
    if not slow:
        async def drain():  # until its session ends; the socket stays open for another `start`
            async for m in fifth:
                if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                    return
        reader = asyncio.create_task(drain())
    rates = await asyncio.gather(*(timed(i) for i in range(n_others)))
    return rates, fifth, reader


def test_a_client_that_never_reads_is_cancelled_without_slowing_the_others():
    s = Server(env={"LYRE_LIMITS_MAX_BUFFERED_FRAMES": "8", "LYRE_SERVER_SEND_BUFFER_BYTES": "16384"})
    try:
        async def go():
            base, fifth, reader = await others_rate(s.url, slow=False)
            await reader
            await fifth.close()
            assert wait_for(lambda: s.live_sessions() == 0)
            slow, fifth, _ = await others_rate(s.url, slow=True)
            # The stalled client's session is cancelled by backpressure while its socket is open.
            cancelled = wait_for(lambda: metric(s.metrics(), "lyre_errors_total", 'code="slow_consumer"') >= 1)
            live_after = s.live_sessions()

            # Reading again, the client gets the audio already sent, then why its stream ended.
            async def rest():
                async for m in fifth:
                    if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                        return json.loads(m)
            last = await asyncio.wait_for(rest(), 30)
            await fifth.close()
            return base, slow, cancelled, live_after, last

        base, slow, cancelled, live_after, last = asyncio.run(go())
        b, w = sum(base) / len(base), sum(slow) / len(slow)
        print(f"\nothers' frames/s: {b:.2f} beside a normal reader, {w:.2f} beside one that never reads")
        assert cancelled, "the slow client's session was cancelled"
        assert live_after == 0
        assert last and last["type"] == "error" and last["code"] == "slow_consumer", last
        m = s.metrics()
        assert metric(m, "lyre_errors_total", 'code="slow_consumer"') == 1, "counted once, by the worker"
        assert metric(m, "lyre_errors_total", 'code="session_lost"') == 0, "not counted again as lost"
        assert w >= 0.8 * b, (base, slow)
        assert httpx.get(s.url + "/readyz").status_code == 200
        no_panics(s)
    finally:
        assert s.stop() == 0


def test_a_failed_gpu_tick_errors_its_sessions_and_the_worker_recovers():
    s = Server(env={"LYRE_DEBUG_FAIL_TICK": "6"})
    try:
        async def one(i):
            async with websockets.connect(s.ws_url, subprotocols=["lyre"]) as ws:
                await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 60,
                                          "ignore_eos": True, "seed": i}))
                await ws.send(json.dumps({"type": "end"}))
                async for m in ws:
                    if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                        return json.loads(m)

        async def three():
            return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(3))), 120)

        results = asyncio.run(three())
        assert [r["type"] for r in results] == ["error"] * 3, results
        assert all(r["code"] == "gpu_error" and "injected" in r["message"] for r in results), results
        assert metric(s.metrics(), "lyre_errors_total", 'code="gpu_error"') == 3, "each error counted once"
        # The worker recovers: ready, and the next sessions run to their end.
        assert httpx.get(s.url + "/readyz").status_code == 200
        summary = asyncio.run(loadgen.run(s.url, ws=3, http=1, frames=5))
        assert summary["failed"] == 0, summary["failures"]
        assert s.live_sessions() == 0
        assert any("DEBUG fault injection" in line for line in s.log)
        no_panics(s)
    finally:
        assert s.stop() == 0


def test_a_failed_http_request_is_answered_503_and_counted_once():
    s = Server(env={"LYRE_DEBUG_FAIL_TICK": "1"})
    try:
        r = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "ryan", "max_frames": 5}, timeout=120)
        assert r.status_code == 503 and r.json()["error"]["code"] == "gpu_error", r.text
        assert r.headers["retry-after"] == "1"
        assert metric(s.metrics(), "lyre_errors_total", 'code="gpu_error"') == 1
        no_panics(s)
    finally:
        assert s.stop() == 0


def test_a_grid_that_loses_a_barrier_is_caught_by_the_warm_up_and_never_reaches_a_client():
    """LYRE_DEBUG_GRID_FAULT=1: the persistent layers' barriers give up, as on a GPU that cannot
    run their grid at once. The warm-up frame's tick catches it, the engine switches to separate
    dispatches, and every client session then runs to its end."""
    s = Server(env={"LYRE_DEBUG_GRID_FAULT": "1"})
    try:
        assert httpx.get(s.url + "/readyz").status_code == 200
        summary = asyncio.run(loadgen.run(s.url, ws=2, http=1, frames=5))
        assert summary["failed"] == 0, summary["failures"]
        assert any("DEBUG fault injection" in line for line in s.log)
        assert any("grid barrier gave up" in line for line in s.log), "the engine saw the lost barrier"
        no_panics(s)
    finally:
        assert s.stop() == 0


def test_full_queue_answers_429_with_retry_after_at_once_never_a_timeout():
    s = Server(env={"LYRE_ENGINE_MAX_SESSIONS": "2", "LYRE_ENGINE_MAX_QUEUE": "2"})
    try:
        async def go():
            async with httpx.AsyncClient() as c:
                async def post(i):
                    t0 = time.monotonic()
                    r = await c.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "max_frames": 30,
                                                              "ignore_eos": True, "seed": i}, timeout=300)
                    return r, time.monotonic() - t0
                return await asyncio.gather(*(post(i) for i in range(12)))

        results = asyncio.run(go())
        codes = sorted(r.status_code for r, _ in results)
        assert set(codes) == {200, 429} and codes.count(200) >= 4, codes
        for r, dt in results:
            if r.status_code == 429:
                assert r.headers["retry-after"] == "1" and r.json()["error"]["code"] == "busy"
                assert dt < 5, f"a refusal took {dt:.1f}s"
        no_panics(s)
    finally:
        assert s.stop() == 0


def test_sigterm_under_load_drains_every_stream_and_refuses_new_ones():
    s = Server(env={"LYRE_SERVER_DRAIN_TIMEOUT_S": "240"})
    try:
        sent = threading.Event()

        async def stream(i):
            async with websockets.connect(s.ws_url, subprotocols=["lyre"], max_size=None) as ws:
                await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 24,
                                          "ignore_eos": True, "seed": i}))
                await ws.send(json.dumps({"type": "end"}))
                frames = 0
                async for m in ws:
                    if isinstance(m, bytes):
                        frames += 1
                        if frames == 2 and i == 0:
                            s.proc.send_signal(signal.SIGTERM)
                            sent.set()
                        continue
                    msg = json.loads(m)
                    if msg["type"] in ("done", "error"):
                        return msg["type"], frames

        async def clip(c, i):
            r = await c.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "max_frames": 24,
                                                      "ignore_eos": True, "seed": i, "format": "pcm"}, timeout=300)
            return r.status_code, len(r.content)

        async def late(c):
            while not sent.is_set():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            return (await c.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian"}, timeout=30)).status_code

        async def go():
            async with httpx.AsyncClient() as c:
                return await asyncio.gather(*(stream(i) for i in range(12)), *(clip(c, i) for i in range(4)),
                                            late(c))

        out = asyncio.run(go())
        streams, clips, late_status = out[:12], out[12:16], out[16]
        assert streams == [("done", 24)] * 12, streams
        assert clips == [(200, 24 * 3840)] * 4, clips
        assert late_status == 503
        assert s.proc.wait(60) == 0
        no_panics(s)
    finally:
        s.stop()
