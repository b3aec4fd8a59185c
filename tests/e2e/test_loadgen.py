"""The open-loop load generator (scripts/openloop.py) against the real server: every request it
sends is accounted for, over both transports, with client-side TTFA and playback figures."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import openloop  # noqa: E402


def test_corpus_is_english_sentences_of_8_to_30_words():
    corpus = openloop.load_corpus()
    assert len(corpus) >= 50
    for line in corpus:
        assert 8 <= len(line.split()) <= 30, line
        assert line[-1] in ".?!", line
    # 0.4 s of speech per word, in 80 ms frames.
    assert openloop.frames_for("one two three four five six seven eight nine ten") == 50


def test_open_loop_mixed_transports_accounts_for_every_request(server):
    row = asyncio.run(openloop.run_rate(server.url, rate=3.0, duration=2.0, transport="mixed", voice="vivian",
                                        seed=7, max_frames=3))
    assert row["requests"] >= 2, row
    assert row["errors"] == 0, row["error_samples"]
    assert row["ttfa_p50_ms"] is not None and row["ttfa_p50_ms"] > 0
    assert row["ttfa_p50_ms"] <= row["ttfa_p95_ms"] <= row["ttfa_p99_ms"]
    # Each request asked for 3 frames of 80 ms and got exactly that much audio.
    assert abs(row["audio_s"] - row["requests"] * 0.24) < 1e-6, row
    assert row["rtf_p50"] is not None


def test_playback_counts_chunks_that_arrive_after_their_play_time():
    play = openloop.Playback(t_sent=0.0)
    play.chunk(3840, 1.00)   # first frame: playback starts, 80 ms of audio
    play.chunk(3840, 1.05)   # due at 1.08: on time
    play.chunk(3840, 1.20)   # due at 1.16: 40 ms late
    res = play.result(3, [])
    assert res["ttfa_ms"] == 1000.0
    assert res["underruns"] == 1
    assert abs(res["worst_late_ms"] - 40.0) < 1e-6
    assert openloop.best_rate([{"rate_rps": 5, "errors": 0, "underruns": 0, "ttfa_p95_ms": 50},
                               {"rate_rps": 10, "errors": 0, "underruns": 2, "ttfa_p95_ms": 60}]) == 5


def test_text_mode_reaches_the_server_over_both_transports(server):
    """`text_mode` is sent with each request: a name the server does not know comes back as a
    request error naming the field, and `streaming` over HTTP (whose default puts the whole text
    in the prompt) is served in full."""
    import httpx

    async def go():
        async with httpx.AsyncClient() as client:
            bad_http = await openloop.http_request(client, server.url, "Hello there.", 2, 1, "vivian",
                                                   text_mode="sideways")
            good_http = await openloop.http_request(client, server.url, "Hello there.", 2, 1, "vivian",
                                                    text_mode="streaming")
        bad_ws = await openloop.ws_request(server.url, "Hello there.", 2, 1, "vivian", text_mode="sideways")
        return bad_http, good_http, bad_ws

    bad_http, good_http, bad_ws = asyncio.run(go())
    assert any("HTTP 400" in p and "text_mode" in p for p in bad_http["problems"]), bad_http
    assert any("text_mode" in p for p in bad_ws["problems"]), bad_ws
    assert good_http["ok"] and good_http["audio_s"] == 0.16, good_http
    row = asyncio.run(openloop.run_rate(server.url, rate=2.0, duration=1.0, transport="http", voice="vivian",
                                        seed=3, max_frames=2, text_mode="streaming"))
    assert row["text_mode"] == "streaming" and row["errors"] == 0, row


def test_ttfa_modes_times_every_transport_and_text_mode(server):
    import ttfa_modes

    rows, problems = asyncio.run(ttfa_modes.measure(server.url, requests=2, warmup=1, voice="vivian",
                                                    pause_s=0.0))
    assert problems == []
    assert [(r["transport"], r["text_mode"]) for r in rows] == [
        ("ws", "default"), ("ws", "whole"), ("http", "default"), ("http", "streaming")]
    for r in rows:
        assert r["requests"] == 1 and r["ttfa_median_ms"] > 0 and r["ttfa_min_ms"] == r["ttfa_median_ms"], r
