"""`LyreClient` against the real server: clips, OpenAI-style streams, realtime contexts."""

import asyncio

import pytest

from lyre_client import Audio, Done, Flushed, LyreClient, LyreError, Started

TEXT = "Hello world, this is a test."
FIELDS = {"seed": 5, "max_frames": 20, "ignore_eos": True}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 240))


def test_a_clip_and_the_openai_stream_carry_the_same_audio(server):
    async def go():
        async with LyreClient(server.url) as lyre:
            clip = await lyre.tts(TEXT, voice="ryan", format="pcm", sample_rate=16000, **FIELDS)
            chunks = [c async for c in lyre.speech(TEXT, voice="ryan", response_format="pcm", sample_rate=16000,
                                                   **FIELDS)]
            wav = await lyre.tts(TEXT, voice="ryan", format="wav", encoding="mulaw", **FIELDS)
            voices = await lyre.voices()
            return clip, chunks, wav, voices
    clip, chunks, wav, voices = run(go())
    assert (clip.sample_rate, clip.frames, clip.finish_reason) == (16000, 20, "max_frames")
    assert len(clip.audio) == 20 * 2560 + 320 and len(clip.codes_fnv1a) == 16
    assert len(chunks) > 1 and b"".join(chunks) == clip.audio
    assert wav.audio[:4] == b"RIFF" and wav.sample_rate == 8000
    assert "ryan" in [v["name"] for v in voices["voices"]]


def test_refusals_raise_lyre_errors_naming_the_field(server):
    async def go():
        async with LyreClient(server.url) as lyre:
            with pytest.raises(LyreError) as clip_err:
                await lyre.tts(TEXT, voice="ryan", sample_rate=11025)
            with pytest.raises(LyreError) as stream_err:
                async for _ in lyre.speech(TEXT, voice="ryan", speed=9):
                    pass
            async with await lyre.realtime() as rt:
                ctx = await rt.open_context(voice="nobody")
                with pytest.raises(LyreError) as ws_err:
                    await ctx.audio()
            return clip_err.value, stream_err.value, ws_err.value
    clip_err, stream_err, ws_err = run(go())
    assert (clip_err.status, clip_err.code, clip_err.field) == (400, "invalid_request", "sample_rate")
    assert (stream_err.code, stream_err.field) == ("invalid_request", "speed")
    assert (ws_err.code, ws_err.field, ws_err.context_id) == ("unknown_voice", "voice", "default")


def test_realtime_contexts_stream_flush_and_cancel(server):
    # Each utterance ends at its own limit (the fixture model never says EOS). That a flushed
    # utterance equals the same text alone is the server's promise (tests/e2e/test_contexts.py);
    # here, that the client reads contexts, flushes and cancels as sent.
    async def go():
        async with LyreClient(server.url) as lyre:
            async with await lyre.realtime() as rt:
                other = await rt.open_context("other", voice="vivian", text=TEXT, **{**FIELDS, "max_frames": 400})
                talk = await rt.open_context("talk", voice="ryan", sample_rate=16000, seed=5)
                events = [await other.next_event(), await other.next_event()]
                await other.cancel()
                events += [e async for e in other]
                await talk.send_text("One ")
                await talk.send_text("two.")
                await talk.flush()
                first, flushed = await talk.flushed_audio()
                await talk.send_text("Three.")
                await talk.end()
                second, done = await talk.audio()
                return talk, first, flushed, events, second, done
    talk, first, flushed, events, second, done = run(go())
    assert isinstance(talk.started, Started) and talk.started.bytes_per_frame == 2560
    assert isinstance(flushed, Flushed) and len(first) == flushed.frames * 2560 > 0
    assert isinstance(events[0], Started) and isinstance(events[1], Audio)
    assert type(events[-1]).__name__ == "Cancelled"
    assert all(isinstance(e, Audio) for e in events[1:-1])
    # The resampler's 10 ms tail ends the stream, after the last utterance.
    assert isinstance(done, Done) and done.frames > flushed.frames
    assert len(second) == (done.frames - flushed.frames) * 2560 + 320
