"""Point 1: 64 concurrent WebSocket streams (plus a few HTTP clips) on the fixture model, every
frame accounted for; time to first audio reported."""

import asyncio
import json
import os

from conftest import Server, loadgen, no_panics

STREAMS = int(os.environ.get("LYRE_REL_STREAMS", "64"))
FRAMES = int(os.environ.get("LYRE_REL_FRAMES", "12"))


def test_64_concurrent_streams_every_frame_accounted_for():
    s = Server(env={"LYRE_ENGINE_MAX_SESSIONS": "64", "LYRE_ENGINE_MAX_ROWS_PER_TICK": "1024"})
    try:
        summary = asyncio.run(loadgen.run(s.url, ws=STREAMS, http=4, frames=FRAMES, timeout=300))
        print("\nload:", json.dumps(summary))
        assert summary["failed"] == 0, summary["failures"]
        assert summary["frames_total"] == (STREAMS + 4) * FRAMES
        assert summary["ttfa_ms_p50"] <= summary["ttfa_ms_p95"] <= summary["ttfa_ms_p99"]
        assert s.live_sessions() == 0
        no_panics(s)
    finally:
        assert s.stop() == 0
