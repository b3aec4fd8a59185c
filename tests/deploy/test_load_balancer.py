"""Two `lyre serve` processes with the fixture model behind nginx (deploy/nginx/lyre.conf)."""

import asyncio
import json
import re
import signal
import time

import httpx
import pytest
import websockets

from nginx_lb import TEXT, Nginx, Server

FRAMES = 12
PCM_FRAME_BYTES = 3840


@pytest.fixture(scope="module")
def lb(tmp_path_factory):
    """nginx and two replicas. The drain test, last in this file, stops replica `a`."""
    a, b = Server(), Server()
    nginx = Nginx(tmp_path_factory.mktemp("nginx"), [hostport(a), hostport(b)])
    yield nginx, a, b
    nginx.stop()
    for s in (a, b):
        s.stop(signal.SIGKILL)


def hostport(server):
    return server.url.removeprefix("http://")


def sessions_total(server):
    """Sessions the replica has finished, any outcome (from its /metrics)."""
    total = 0.0
    for line in server.metrics().splitlines():
        if line.startswith("lyre_sessions_total{") or line.startswith("lyre_sessions_total "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_for(cond, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def start_message(seed, frames=FRAMES, **extra):
    return {"type": "start", "voice": "ryan", "seed": seed, "max_frames": frames, "ignore_eos": True,
            "text": TEXT, "format": "pcm16", **extra}


async def read_to_done(ws):
    audio, started = [], None
    async for msg in ws:
        if isinstance(msg, bytes):
            audio.append(msg)
            continue
        m = json.loads(msg)
        if m["type"] == "started":
            started = m
        if m["type"] in ("done", "error"):
            return started, audio, m
    raise AssertionError("socket closed without done")


async def ws_session(url, seed, frames=FRAMES):
    async with websockets.connect(url, subprotocols=["lyre"], max_size=None) as ws:
        await ws.send(json.dumps(start_message(seed, frames)))
        await ws.send(json.dumps({"type": "end"}))
        started, audio, done = await read_to_done(ws)
    assert started is not None and done["type"] == "done", done
    assert done["frames"] == frames and len(audio) == frames, done
    assert all(len(f) == PCM_FRAME_BYTES for f in audio)


async def post_tts(client, url, seed, frames=FRAMES):
    body = {"text": TEXT, "voice": "ryan", "seed": seed, "max_frames": frames, "ignore_eos": True,
            "format": "pcm"}
    r = await client.post(url + "/v1/tts", json=body, timeout=300)
    assert r.status_code == 200, r.text
    assert r.headers["x-lyre-frames"] == str(frames)
    assert len(r.content) == frames * PCM_FRAME_BYTES


async def mixed_load(nginx, n_ws, n_post, seed0=0):
    async with httpx.AsyncClient() as client:
        await asyncio.gather(
            *[ws_session(nginx.ws_url, seed0 + i) for i in range(n_ws)],
            *[post_tts(client, nginx.url, seed0 + 100 + i) for i in range(n_post)],
        )


def test_nginx_serves_20_streams_and_20_clips_from_both_replicas(lb):
    nginx, a, b = lb
    before = {s.url: sessions_total(s) for s in (a, b)}
    asyncio.run(mixed_load(nginx, 20, 20))

    def served():
        return {s.url: sessions_total(s) - before[s.url] for s in (a, b)}

    wait_for(lambda: sum(served().values()) == 40, "both replicas to count the 40 sessions")
    assert all(n > 0 for n in served().values()), served()
    # The gauges the HPA scales on (deploy/k8s/hpa.yaml) are in each replica's /metrics.
    for s in (a, b):
        text = s.metrics()
        assert "# TYPE lyre_live_sessions gauge" in text and "# TYPE lyre_queue_depth gauge" in text
    log = nginx.access_log()
    assert sorted((m, u, st) for m, u, st, _, _ in log) == sorted(
        [("GET", "/v1/tts/stream", 101)] * 20 + [("POST", "/v1/tts", 200)] * 20), log
    used = {addrs[-1] for _, _, _, addrs, _ in log}
    assert used == {hostport(a), hostport(b)}, used


def test_sigterm_to_one_replica_mid_stream_loses_nothing(lb):
    nginx, a, b = lb
    held_frames = 30

    async def go():
        # Streams whose text has not ended: they stay live until `end`, across the SIGTERM.
        held = [await websockets.connect(nginx.ws_url, subprotocols=["lyre"], max_size=None)
                for _ in range(6)]
        for i, ws in enumerate(held):
            await ws.send(json.dumps(start_message(500 + i, held_frames)))
        wait_for(lambda: a.live_sessions() + b.live_sessions() == 6, "6 live sessions")
        on_a = a.live_sessions()
        assert on_a > 0 and b.live_sessions() > 0, "least_conn should spread the streams"
        log_mark = len(nginx.access_log())

        a.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: httpx.get(a.url + "/readyz").json()["draining"], "replica a to drain")
        # A draining replica refuses the WebSocket upgrade itself, so nginx can go elsewhere.
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(a.ws_url, subprotocols=["lyre"])
        assert refused.value.response.status_code == 503
        assert b"draining" in refused.value.response.body

        # New sessions through nginx while a's streams still run: all succeed, all on b.
        await mixed_load(nginx, 6, 6, seed0=700)
        assert a.live_sessions() == on_a, "a's live streams must still be running"

        for ws in held:
            await ws.send(json.dumps({"type": "end"}))
        for ws in held:
            _, audio, done = await read_to_done(ws)
            assert done["type"] == "done" and done["frames"] == held_frames, done
            assert len(audio) == held_frames
            await ws.close()
        return log_mark, on_a

    log_mark, on_a = asyncio.run(go())
    assert a.proc.wait(60) == 0
    assert any(re.search(r"\bdrained\b", line) for line in a.log), "".join(a.log[-20:])
    after = nginx.access_log()[log_mark:]
    new = [row for row in after if row[1] in ("/v1/tts", "/v1/tts/stream")]
    # 12 new sessions; the 6 held streams are logged when they close.
    assert sum(1 for _, _, st, _, _ in new if st in (101, 200)) == len(new) == 18, new
    for method, uri, status, addrs, statuses in new:
        if addrs[-1] != hostport(b):
            # Only the held streams, opened before the SIGTERM, may have ended on a.
            assert (method, status) == ("GET", 101) and len(addrs) == 1, (method, uri, addrs)
    assert sum(1 for row in new if row[3][-1] == hostport(a)) == on_a
    retried = [row for row in new if len(row[3]) > 1]
    assert all(row[3][0] == hostport(a) and row[4][0] in ("503", "502") for row in retried), retried
    print(f"held on a: {on_a}; new sessions first tried on a and retried on b: {len(retried)}")
