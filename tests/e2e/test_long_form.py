"""Long texts on a server with a 64-position cache: a text that needs ten times the cache is
spoken in segments through POST /v1/tts and the WebSocket (no `context_full`), SSE reports each
segment, and the server's memory does not grow with the length of the text.

One sentence is one segment here (`engine.segment_tokens` = 10); greedy, vivian speaks the
fixture's sentence in 8 frames and then EOS (the official reference), so every length is exact.
"""

import asyncio
import base64
import json
import re
import threading
import time

import httpx
import pytest
import websockets

from conftest import TEXT, Server

FRAMES_PER_SENTENCE = 8
FRAME_BYTES = 3840  # 1920 samples of s16le
SAY = {"voice": "vivian", "language": "english", "greedy": True}


@pytest.fixture(scope="module")
def long_server():
    s = Server(env={
        "LYRE_ENGINE_MAX_POSITIONS": "64",
        "LYRE_ENGINE_MAX_SESSIONS": "2",
        "LYRE_ENGINE_SEGMENT_TOKENS": "10",
    })
    yield s
    s.stop()


def sentences(n):
    return " ".join([TEXT] * n)


def rss_kib(server):
    status = open(f"/proc/{server.proc.pid}/status").read()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))


def test_a_text_ten_times_the_cache_streams_whole_through_http(long_server):
    # 40 sentences: 320 text tokens and 320 frames, more than ten times the 64 positions.
    n = 40
    with httpx.stream("POST", long_server.url + "/v1/tts", json={"text": sentences(n), "format": "wav", **SAY},
                      timeout=600) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["x-lyre-segments"] == str(n)
        assert "x-lyre-frames" not in r.headers, "a long clip streams: its length is not known up front"
        wav = b"".join(r.iter_bytes())
    assert wav[:4] == b"RIFF" and wav[40:44] == b"\xff\xff\xff\xff", "a streamed WAV says its size is unknown"
    assert len(wav) - 44 == n * FRAMES_PER_SENTENCE * FRAME_BYTES


def test_a_long_stream_on_the_websocket_ends_with_done(long_server):
    n = 40

    async def go():
        async with websockets.connect(long_server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "text_mode": "whole", **SAY}))
            for _ in range(n):
                await ws.send(json.dumps({"type": "text", "text": TEXT + " "}))
            await ws.send(json.dumps({"type": "end"}))
            audio, seams = [], []
            async for m in ws:
                if isinstance(m, bytes):
                    audio.append(m)
                    continue
                msg = json.loads(m)
                if msg["type"] == "segment":
                    seams.append((msg["index"], len(audio)))
                elif msg["type"] in ("done", "error"):
                    return audio, seams, msg
    audio, seams, done = asyncio.run(go())
    assert done["type"] == "done" and done["finish_reason"] == "eos", done
    assert done["frames"] == n * FRAMES_PER_SENTENCE
    assert len(audio) == done["frames"] and all(len(f) == FRAME_BYTES for f in audio)
    assert seams == [(i, i * FRAMES_PER_SENTENCE) for i in range(1, n)], "one `segment` at each seam"


def test_sse_reports_each_segment(long_server):
    n = 5
    body = {"model": "lyre", "input": sentences(n), "response_format": "pcm", "stream_format": "sse", **SAY}
    events = []
    with httpx.stream("POST", long_server.url + "/v1/audio/speech", json=body, timeout=300) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "speech.audio.done", kinds
    progress = [e for e in events if e["type"] == "speech.progress"]
    assert [(e["segment"], e["segments"]) for e in progress] == [(i, n) for i in range(n)]
    # Each progress event comes before its segment's audio, between audio deltas.
    audio = 0
    for e in events:
        if e["type"] == "speech.progress":
            assert audio == e["segment"] * FRAMES_PER_SENTENCE * FRAME_BYTES
        elif e["type"] == "speech.audio.delta":
            audio += len(base64.b64decode(e["audio"]))
    assert audio == n * FRAMES_PER_SENTENCE * FRAME_BYTES


def test_the_openai_audio_stream_says_its_segments(long_server):
    n = 3
    body = {"model": "lyre", "input": sentences(n), "response_format": "pcm", **SAY}
    with httpx.stream("POST", long_server.url + "/v1/audio/speech", json=body, timeout=300) as r:
        assert r.status_code == 200
        assert r.headers["x-lyre-segments"] == str(n)
        pcm = b"".join(r.iter_bytes())
    assert len(pcm) == n * FRAMES_PER_SENTENCE * FRAME_BYTES
    r = httpx.post(long_server.url + "/v1/audio/speech", json={**body, "input": TEXT}, timeout=300)
    assert r.status_code == 200 and r.headers["x-lyre-segments"] == "1"


def test_memory_does_not_grow_with_the_text(long_server):
    def speak(n):
        """Speaks n sentences; returns the audio bytes and the server's peak RSS meanwhile."""
        peak, done = [rss_kib(long_server)], threading.Event()

        def watch():
            while not done.is_set():
                peak.append(rss_kib(long_server))
                time.sleep(0.01)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with httpx.stream("POST", long_server.url + "/v1/tts",
                              json={"text": sentences(n), "format": "wav", **SAY}, timeout=600) as r:
                assert r.status_code == 200
                size = sum(len(chunk) for chunk in r.iter_bytes())
        finally:
            done.set()
            watcher.join()
        return size, max(peak)

    # Warm up (the first use of each path allocates), then a short text and one 20 times longer.
    speak(2)
    speak(2)
    speak(2)
    before = rss_kib(long_server)
    _, short_peak = speak(2)
    short = rss_kib(long_server)
    size, long_peak = speak(40)
    long = rss_kib(long_server)
    assert size - 44 == 40 * FRAMES_PER_SENTENCE * FRAME_BYTES
    print(f"\nserver RSS (KiB) before: {before}; after 2 sentences: {short} (peak {short_peak}); "
          f"after 40 sentences: {long} (peak {long_peak}); the 40 sentences' WAV: {size // 1024} KiB")
    assert abs(long - short) <= 0.05 * short, (short, long)
    # Holding the clip (f32 samples, or its encoding) would take at least its WAV's size.
    assert long_peak - before < size / 1024, (before, long_peak, size)
