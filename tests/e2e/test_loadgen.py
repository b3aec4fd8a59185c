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


def test_client_processes_and_the_servers_own_ttfa(server):
    """Arrivals spread over two client processes still account for every request, and the row
    carries the server's TTFA percentiles over the same requests (from `/metrics`, read before and
    after) and the clients' event-loop lag."""
    row = asyncio.run(openloop.run_rate(server.url, rate=3.0, duration=2.0, transport="ws", voice="vivian",
                                        seed=11, max_frames=2, procs=2))
    assert row["procs"] == 2 and row["requests"] >= 2 and row["errors"] == 0, row
    assert abs(row["audio_s"] - row["requests"] * 0.16) < 1e-6, row
    assert 0 < row["server_ttfa_p50_ms"] <= row["server_ttfa_p95_ms"] <= row["server_ttfa_p99_ms"], row
    # The server hands a frame over before the client reads it: its median is no later than the
    # client's slowest (the buckets' interpolation is within one bucket).
    assert row["server_ttfa_p50_ms"] <= row["ttfa_p99_ms"] + 2.5, row
    assert row["loop_lag_p99_ms"] is not None and row["loop_lag_max_ms"] >= row["loop_lag_p99_ms"] >= 0, row


def test_histogram_quantile_between_two_scrapes():
    before = {0.01: 0, 0.02: 1, 0.05: 2, float("inf"): 2}
    after = {0.01: 1, 0.02: 5, 0.05: 10, float("inf"): 10}
    # Eight observations between the scrapes: 1 under 10 ms, 3 in 10-20, 4 in 20-50.
    assert openloop.bucket_quantile(before, after, 0.5) == 0.02
    assert abs(openloop.bucket_quantile(before, after, 0.75) - 0.035) < 1e-12
    assert openloop.bucket_quantile(after, after, 0.5) is None, "nothing observed between them"
    assert openloop.bucket_quantile(None, None, 0.5) is None
    text = 'lyre_ttfa_seconds_bucket{le="0.005"} 3\nlyre_ttfa_seconds_bucket{le="+Inf"} 4\nlyre_ttfa_seconds_sum 1\n'
    assert openloop.parse_buckets(text, "lyre_ttfa_seconds") == {0.005: 3.0, float("inf"): 4.0}


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
