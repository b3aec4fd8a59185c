"""Several contexts on one multiplexed WebSocket, per-context cancel, and flush, against the real
server and the fixture model."""

import asyncio
import base64
import json
import subprocess
import wave

import websockets

from conftest import TEXT
from test_ws import run, stream

A = {"voice": "ryan", "seed": 3, "max_frames": 24, "ignore_eos": True}
B = {"voice": "vivian", "seed": 4, "max_frames": 20, "ignore_eos": True}
TEXT_A = ["Hello world, ", "this is the ", "first context."]
TEXT_B = ["And here ", "is a second ", "voice speaking."]


async def collect(ws, until):
    """Reads messages until `until(msg)` is true for a JSON message; returns every message."""
    out = []
    async for m in ws:
        out.append(json.loads(m) if isinstance(m, str) else m)
        if isinstance(m, str) and until(out[-1]):
            return out
    raise AssertionError(f"socket closed: {out[-5:]}")


def audio_of(msgs, context_id):
    return b"".join(base64.b64decode(m["data"]) for m in msgs
                    if isinstance(m, dict) and m["type"] == "audio" and m["context_id"] == context_id)


def alone(server, start, pieces):
    """The audio of the same request on a fresh single-context socket."""
    audio, _, done, _ = run(stream(server, start, pieces=pieces))
    assert done["type"] == "done", done
    return b"".join(audio)


def test_two_interleaved_contexts_each_equal_the_same_request_alone(server):

    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "context_id": "a", "multiplex": True, **A}))
            await ws.send(json.dumps({"type": "start", "context_id": "b", **B}))
            for ta, tb in zip(TEXT_A, TEXT_B):
                await ws.send(json.dumps({"type": "text", "context_id": "a", "text": ta}))
                await ws.send(json.dumps({"type": "text", "context_id": "b", "text": tb}))
                await asyncio.sleep(0.2)
            await ws.send(json.dumps({"type": "end", "context_id": "b"}))
            await ws.send(json.dumps({"type": "end", "context_id": "a"}))
            done = set()
            return await collect(ws, lambda m: m["type"] == "done" and (done.add(m["context_id"]) or done == {"a", "b"}))
    msgs = run(go())
    assert not any(isinstance(m, bytes) for m in msgs), "a multiplexed socket sends audio as JSON"
    assert all("context_id" in m for m in msgs)
    frames_a = [m["frame"] for m in msgs if m["type"] == "audio" and m["context_id"] == "a"]
    assert frames_a == list(range(24))
    started = [m for m in msgs if m["type"] == "started"]
    assert sorted(m["context_id"] for m in started) == ["a", "b"]
    assert audio_of(msgs, "a") == alone(server, A, TEXT_A)
    assert audio_of(msgs, "b") == alone(server, B, TEXT_B)


def test_cancelling_one_context_leaves_the_other_to_finish(server):
    long = {**A, "max_frames": 200, "text": TEXT}

    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "context_id": "keep", "multiplex": True, **B, "text": TEXT}))
            await ws.send(json.dumps({"type": "start", "context_id": "drop", **long}))
            await ws.send(json.dumps({"type": "end", "context_id": "keep"}))
            await ws.send(json.dumps({"type": "end", "context_id": "drop"}))
            seen = await collect(ws, lambda m: m["type"] == "audio" and m["context_id"] == "drop" and m["frame"] >= 3)
            await ws.send(json.dumps({"type": "cancel", "context_id": "drop"}))
            rest = await collect(ws, lambda m: m["type"] == "done" and m["context_id"] == "keep")
            return seen, rest
    seen, rest = run(go())
    cancelled = [i for i, m in enumerate(rest) if m["type"] == "cancelled"]
    assert len(cancelled) == 1 and rest[cancelled[0]]["context_id"] == "drop"
    # Audio already on its way when the cancel arrived may still come, but within two frames.
    late = [m for m in rest[:cancelled[0]] if m["type"] == "audio" and m["context_id"] == "drop"]
    assert len(late) <= 2, len(late)
    assert not [m for m in rest[cancelled[0]:] if m.get("context_id") == "drop" and m["type"] != "cancelled"]
    assert rest[-1]["frames"] == 20 and audio_of(seen + rest, "keep") == alone(server, B, [TEXT])


def test_flush_speaks_the_text_so_far_and_keeps_the_context_for_the_next_utterance(server):
    # No frame limit: each utterance ends at its own (5 s + 1 s per text token; the fixture model
    # never says EOS), as `max_frames` counts the frames of all of a context's utterances.
    start = {"voice": "ryan", "seed": 9}
    first, second = "Hello world,", " bye."

    async def go(fmt):
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "format": fmt, **start}))
            await ws.send(json.dumps({"type": "text", "text": first}))
            await ws.send(json.dumps({"type": "flush"}))
            part1 = await collect(ws, lambda m: m["type"] == "flushed")
            await ws.send(json.dumps({"type": "text", "text": second}))
            await ws.send(json.dumps({"type": "end"}))
            part2 = await collect(ws, lambda m: m["type"] in ("done", "error"))
            return part1, part2

    part1, part2 = run(go("pcm16"))
    flushed = part1[-1]
    assert flushed == {"type": "flushed", "context_id": "default", "frames": flushed["frames"]}
    audio1 = b"".join(m for m in part1 if isinstance(m, bytes))
    assert flushed["frames"] > 0 and len(audio1) == 3840 * flushed["frames"]
    # The flushed utterance is the same text sent whole with `end`.
    assert audio1 == alone(server, start, [first])
    done = part2[-1]
    assert done["type"] == "done" and done["frames"] > flushed["frames"], done
    second_frames = done["frames"] - flushed["frames"]
    assert len(b"".join(m for m in part2 if isinstance(m, bytes))) == 3840 * second_frames
    # The next utterance is the next segment of the same session.
    assert [m["index"] for m in part2 if isinstance(m, dict) and m["type"] == "segment"] == [1]
    assert not [m for m in part2 if isinstance(m, dict) and m["type"] == "started"], "one started per context"


def test_an_opus_stream_across_a_flush_is_one_file(server, tmp_path):
    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "format": "opus", "voice": "ryan", "seed": 2,
                                      "text": "One."}))
            await ws.send(json.dumps({"type": "flush"}))
            part1 = await collect(ws, lambda m: m["type"] == "flushed")
            await ws.send(json.dumps({"type": "text", "text": "Two."}))
            await ws.send(json.dumps({"type": "end"}))
            part2 = await collect(ws, lambda m: m["type"] == "done")
            return part1 + part2
    msgs = run(go())
    frames = msgs[-1]["frames"]
    data = b"".join(m for m in msgs if isinstance(m, bytes))
    assert data.count(b"OpusHead") == 1 and data.count(b"OpusTags") == 1
    path, out = tmp_path / "flush.opus", tmp_path / "flush.wav"
    path.write_bytes(data)
    subprocess.run(["opusdec", "--quiet", "--rate", "24000", str(path), str(out)], check=True)
    with wave.open(str(out)) as w:
        assert abs(w.getnframes() - frames * 1920) <= 1920 // 4, (w.getnframes(), frames)


def test_single_context_sockets_behave_as_before_and_mistakes_are_named(server):
    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            replies = []
            await ws.send(json.dumps({"type": "start", **A, "text": "Hi."}))
            replies.append(json.loads(await ws.recv()))  # started
            for bad in [{"type": "start", **B},
                        {"type": "start", "context_id": "x", "multiplex": True, **B},
                        {"type": "text", "context_id": "nope", "text": "hi"}]:
                await ws.send(json.dumps(bad))
                while True:
                    m = await ws.recv()
                    if isinstance(m, str):
                        replies.append(json.loads(m))
                        break
            await ws.send(json.dumps({"type": "cancel"}))
            while True:
                m = await ws.recv()
                if isinstance(m, str) and json.loads(m)["type"] == "error":
                    replies.append(json.loads(m))
                    return replies
    started, second, mux, unknown, cancelled = run(go())
    assert started["type"] == "started" and started["context_id"] == "default"
    assert second["code"] == "session_active"
    assert mux["code"] == "invalid_request" and mux["field"] == "multiplex"
    assert unknown["code"] == "no_session" and unknown["field"] == "context_id"
    assert cancelled["code"] == "cancelled" and cancelled["context_id"] == "default"
    # A cancel the client asked for is not an error: voice agents that interrupt must not raise
    # the error rate.
    assert 'lyre_errors_total{code="cancelled"}' not in server.metrics()

    async def limits():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "context_id": "x" * 65, "multiplex": True, **A}))
            too_long = json.loads(await ws.recv())
            for i in range(8):
                await ws.send(json.dumps({"type": "start", "context_id": f"c{i}", "multiplex": True, **A}))
            await ws.send(json.dumps({"type": "start", "context_id": "c0", **A}))
            await ws.send(json.dumps({"type": "start", "context_id": "c9", **A}))
            await ws.send(json.dumps({"type": "text", "text": "which one?"}))
            errors = []
            while len(errors) < 3:
                m = json.loads(await ws.recv())
                if m["type"] == "error":
                    errors.append(m)
            return too_long, errors
    too_long, (dup, full, ambiguous) = run(limits())
    assert too_long["field"] == "context_id"
    assert (dup["code"], dup["context_id"]) == ("context_active", "c0")
    assert full["code"] == "too_many_contexts"
    assert ambiguous["field"] == "context_id" and "8 contexts" in ambiguous["message"]
