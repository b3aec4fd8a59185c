"""A Python `websockets` client against /v1/tts/stream."""

import asyncio
import json
import subprocess
import time

import httpx
import websockets

from conftest import TEXT


async def stream(server, start, pieces=(), gap=0.0, end=True, close_after=None):
    """Runs one WebSocket session; returns (audio bytes, codes, done message, timing)."""
    audio, codes, msgs = [], [], []
    t0 = time.monotonic()
    first_audio = None
    async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", **start}))
        for p in pieces:
            await ws.send(json.dumps({"type": "text", "text": p}))
            if gap:
                await asyncio.sleep(gap)
        if end:
            await ws.send(json.dumps({"type": "end"}))
        async for msg in ws:
            if isinstance(msg, bytes):
                first_audio = first_audio or time.monotonic() - t0
                audio.append(msg)
                if close_after and len(audio) >= close_after:
                    return audio, codes, None, first_audio
                continue
            m = json.loads(msg)
            msgs.append(m)
            if m["type"] == "codes":
                codes.append(m["codes"])
            if m["type"] in ("done", "error"):
                return audio, codes, m, (first_audio, time.monotonic() - t0)
    raise AssertionError(f"socket closed without done: {msgs}")


def run(coro):
    return asyncio.run(coro)


def test_150_frames_stream_pcm_and_opus(server, tmp_path):
    start = {"voice": "ryan", "seed": 11, "max_frames": 150, "ignore_eos": True, "text": TEXT}
    pcm, _, done, (first, total) = run(stream(server, {**start, "format": "pcm16"}))
    assert done["type"] == "done" and done["frames"] == 150, done
    assert len(pcm) == 150 and all(len(f) == 3840 for f in pcm)
    assert first < total / 2, f"first audio at {first:.2f}s of {total:.2f}s"
    # The same request over HTTP gives the same samples.
    r = httpx.post(server.url + "/v1/tts", json={**start, "format": "pcm", "text_mode": "streaming"}, timeout=300)
    assert r.status_code == 200 and r.content == b"".join(pcm)
    opus, _, done, _ = run(stream(server, {**start, "format": "opus"}))
    assert done["type"] == "done" and done["frames"] == 150
    path = tmp_path / "a.opus"
    path.write_bytes(b"".join(opus))
    out = tmp_path / "a.wav"
    subprocess.run(["opusdec", "--quiet", "--rate", "24000", str(path), str(out)], check=True)
    import wave
    with wave.open(str(out)) as w:
        assert w.getframerate() == 24000
        assert abs(w.getnframes() - 150 * 1920) <= 1920 // 4, w.getnframes()


def test_text_in_pieces_equals_text_whole(server):
    words = TEXT.split(" ")
    pieces = [" ".join(words[i:i + 2]) + (" " if i + 2 < len(words) else "") for i in range(0, len(words), 2)]
    assert "".join(pieces) == TEXT and len(pieces) >= 3
    pieces = (pieces + [""] * 5)[:5] if len(pieces) < 5 else pieces
    base = {"voice": "ryan", "greedy": True, "codes": True, "max_frames": 40}
    _, streamed, done1, _ = run(stream(server, base, pieces=pieces, gap=0.4))
    _, whole, done2, _ = run(stream(server, {**base, "text": TEXT}))
    assert done1["type"] == done2["type"] == "done"
    assert streamed == whole and len(whole) > 0


def test_a_long_message_is_spoken_as_the_same_text_in_small_pieces(server):
    """A text message of 20 kB (the worker hands it to the engine 2 KiB a turn) starts the same
    audio as the same text sent a few words at a time."""
    long = " ".join([TEXT] * (20_000 // len(TEXT) + 1))
    assert len(long.encode()) > 20_000
    words = long.split(" ")
    pieces = [" ".join(words[i:i + 60]) + " " for i in range(0, len(words), 60)]
    pieces[-1] = pieces[-1].rstrip()
    assert "".join(pieces) == long
    base = {"voice": "ryan", "greedy": True, "codes": True, "max_frames": 12}
    _, at_once, done1, _ = run(stream(server, base, pieces=[long]))
    # Under the socket's 50 messages a second.
    _, in_pieces, done2, _ = run(stream(server, base, pieces=pieces, gap=0.03))
    assert done1["type"] == done2["type"] == "done", (done1, done2)
    assert done1["frames"] == done2["frames"] == 12
    assert at_once == in_pieces and len(at_once) == 12


def test_sixteen_concurrent_sessions_equal_their_solo_runs(server):
    voices = ["vivian", "ryan", "serena", "aiden", "dylan", "eric", "sohee", "ono_anna"]
    starts = [{"voice": voices[i % 8], "greedy": True, "codes": True, "max_frames": 12 + i,
               "text": f"Session number {i} says hello."} for i in range(16)]

    async def together():
        return await asyncio.gather(*(stream(server, s) for s in starts))

    batched = run(together())
    for s, (_, codes, done, _) in zip(starts, batched):
        _, solo, _, _ = run(stream(server, s))
        assert done["type"] == "done"
        assert codes == solo, s
    metrics = server.metrics()
    count = float(next(line.split()[-1] for line in metrics.splitlines() if line.startswith("lyre_batch_size_count")))
    ones = float(next(line.split()[-1] for line in metrics.splitlines()
                      if line.startswith('lyre_batch_size_bucket{le="1"}')))
    assert count > ones, "some ticks carried more than one session"


def test_closing_the_socket_frees_the_slot(server):
    start = {"voice": "ryan", "max_frames": 400, "ignore_eos": True, "text": TEXT}
    audio, _, _, _ = run(stream(server, start, close_after=3))
    assert len(audio) == 3
    deadline = time.time() + 20
    while server.live_sessions() != 0:
        assert time.time() < deadline, "the slot was not freed"
        time.sleep(0.1)


def test_bad_messages_get_errors_and_the_socket_stays_usable(server):
    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"]) as ws:
            replies = []
            for bad in ["not json", json.dumps({"type": "dance"}), json.dumps({"type": "text", "text": "hi"}),
                        json.dumps({"type": "start", "voice": "nobody"})]:
                await ws.send(bad)
                replies.append(json.loads(await ws.recv()))
            await ws.send(b"\x00\x01")
            replies.append(json.loads(await ws.recv()))
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 3, "greedy": True}))
            await ws.send(json.dumps({"type": "end"}))
            while True:
                m = await ws.recv()
                if isinstance(m, str) and json.loads(m)["type"] == "done":
                    return replies
    replies = run(go())
    assert [r["type"] for r in replies] == ["error"] * 5
    assert [r["code"] for r in replies] == ["invalid_message", "invalid_message", "no_session", "unknown_voice",
                                            "invalid_message"]
