"""The voice store under faults: a server SIGKILLed while uploads are in flight (SQLite and
PostgreSQL), and the voice database going away and coming back (PostgreSQL)."""

import asyncio
import base64
import json
import signal
import subprocess
import time

import httpx
import pytest
import websockets

from conftest import LYRE, TEXT, Postgres, Server, clips, no_panics

XVEC_CASE = "e2e_base_xvec_stream_english"


def base_server(env):
    return Server(fixture=clips.BASE, env=env)


def listed(url):
    r = httpx.get(url + "/v1/voices", timeout=30)
    assert r.status_code == 200, r.text
    return [v["name"] for v in r.json()["voices"]]


def tts(url, voice, **extra):
    return httpx.post(url + "/v1/tts", timeout=120, json={
        "text": TEXT, "voice": voice, "greedy": True, "max_frames": 1, "format": "pcm", **extra})


async def ws_first(url, start):
    """The session's last JSON message (`done` or `error`)."""
    ws_url = url.replace("http://", "ws://") + "/v1/tts/stream"
    async with websockets.connect(ws_url, subprotocols=["lyre"], max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", **start}))
        await ws.send(json.dumps({"type": "end"}))
        async for msg in ws:
            if isinstance(msg, str):
                m = json.loads(msg)
                if m["type"] in ("done", "error"):
                    return m
    raise AssertionError("socket closed without done or error")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_during_uploads_loses_no_acknowledged_voice(tmp_path, backend):
    pg = Postgres() if backend == "postgres" else None
    env = {"LYRE_VOICES_DIR": str(tmp_path / "voices")}
    if pg:
        env["LYRE_VOICES_DATABASE"] = pg.url
    try:
        s = base_server(env)
        clip = clips.wav16(clips.reference_wav())
        acked, refused = [], []

        async def upload(client, i):
            fields = {"name": f"v{i:02d}"}
            if i % 2:
                fields["transcript"] = clips.REF_TEXT
            try:
                r = await client.post(s.url + "/v1/voices", data=fields, files={"audio": ("clip.wav", clip)},
                                      timeout=300)
            except httpx.HTTPError:
                refused.append(i)  # cut off by the kill: not acknowledged
                return
            assert r.status_code == 201, r.text
            acked.append(fields["name"])

        async def run():
            async with httpx.AsyncClient() as client:
                tasks = [asyncio.create_task(upload(client, i)) for i in range(20)]
                deadline = time.monotonic() + 300
                while len(acked) < 3 and time.monotonic() < deadline:
                    await asyncio.sleep(0.005)
                s.proc.send_signal(signal.SIGKILL)
                await asyncio.gather(*tasks)

        asyncio.run(run())
        s.proc.wait(30)
        assert len(acked) >= 3 and refused, f"the kill must land mid-batch: {len(acked)} acknowledged"
        s = base_server(env)  # the same database after the crash
        try:
            names = listed(s.url)
            missing = set(acked) - set(names)
            assert not missing, f"acknowledged but lost: {missing}"
            for name in names:  # nothing half-written: every listed voice speaks
                r = tts(s.url, name)
                assert r.status_code == 200, (name, r.text)
            print(f"{backend}: {len(acked)} acknowledged before the kill, {len(names)} listed after")
        finally:
            s.stop()
        no_panics(s)
    finally:
        if pg:
            pg.close()


def test_a_database_outage_is_503_for_voice_operations_only_and_heals_itself(tmp_path):
    pg = Postgres()
    files = tmp_path / "files"
    clips.write_voice(files, "keep", XVEC_CASE, icl=False)
    # An operator's import, with the server's database URL.
    out = subprocess.run([LYRE, "voices", "import", str(files), "--database", pg.url],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and "1 imported" in out.stdout, out.stdout + out.stderr
    env = {"LYRE_VOICES_DATABASE": pg.url, "LYRE_VOICES_DATABASE_TIMEOUT_MS": "500",
           "LYRE_VOICES_DIR": str(tmp_path / "none"), "LYRE_LIMITS_MAX_WS_MESSAGE_BYTES": "1000000"}
    base = cv = None
    try:
        base = base_server(env)
        cv = Server(env=env)  # a CustomVoice model on the same database
        assert listed(base.url) == ["keep"] and tts(base.url, "keep").status_code == 200

        # A slow database (a transaction holding the table): voice operations give up after
        # voices.database_timeout_ms; presets never wait for it.
        locker = pg.psql_background("BEGIN; LOCK TABLE voices IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT;")
        held = "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = 'voices'::regclass"
        deadline = time.monotonic() + 10
        while pg.psql(held).strip() != "1" and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        r = httpx.get(base.url + "/v1/voices", timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "store_unavailable", r.text
        assert time.monotonic() - started < 3, "bounded by the timeout, not by the lock"
        started = time.monotonic()
        assert tts(cv.url, "ryan").status_code == 200
        assert httpx.get(base.url + "/readyz", timeout=10).status_code == 200
        print(f"preset while the voice table was locked: {time.monotonic() - started:.2f} s")
        assert locker.poll() is None, "the lock was held throughout"
        locker.wait(30)
        assert listed(base.url) == ["keep"], "back once the transaction ends"

        pg.stop()
        clip = clips.wav16(clips.reference_wav())
        outage = [
            ("list", lambda: httpx.get(base.url + "/v1/voices", timeout=30)),
            ("list (OpenAI path)", lambda: httpx.get(base.url + "/v1/audio/voices", timeout=30)),
            ("upload", lambda: httpx.post(base.url + "/v1/voices", data={"name": "new"},
                                          files={"audio": ("clip.wav", clip)}, timeout=30)),
            ("delete", lambda: httpx.delete(base.url + "/v1/voices/keep", timeout=30)),
            ("stored voice", lambda: tts(base.url, "keep")),
            ("stored voice, OpenAI", lambda: httpx.post(base.url + "/v1/audio/speech", timeout=30, json={
                "model": "x", "input": TEXT, "voice": "keep", "response_format": "pcm"})),
        ]
        for what, op in outage:
            started = time.monotonic()
            r = op()
            took = time.monotonic() - started
            assert r.status_code == 503, (what, r.status_code, r.text)
            assert r.json()["error"]["code"] == "store_unavailable", (what, r.text)
            assert r.headers.get("retry-after") == "1", what
            assert took < 5, f"{what}: {took:.1f} s"
        m = asyncio.run(ws_first(base.url, {"voice": "keep", "text": TEXT, "max_frames": 1}))
        assert (m["type"], m["code"], m["retry_after_s"]) == ("error", "store_unavailable", 1), m
        # Inline reference audio needs no database.
        m = asyncio.run(ws_first(base.url, {"ref_audio": base64.b64encode(clip).decode(), "text": TEXT,
                                            "max_frames": 1, "greedy": True}))
        assert m["type"] == "done", m
        # Ready: the GPU and presets are fine; taking the replica out would not bring the database back.
        assert httpx.get(base.url + "/readyz", timeout=10).status_code == 200
        for voice in ("ryan", "alloy"):
            r = tts(cv.url, voice)
            assert r.status_code == 200, (voice, r.text)
        assert httpx.get(cv.url + "/readyz", timeout=10).status_code == 200

        pg.start()
        # The very next voice operation works: no restart.
        assert listed(base.url) == ["keep"]
        assert tts(base.url, "keep").status_code == 200
        assert httpx.delete(base.url + "/v1/voices/keep", timeout=30).status_code == 204
        assert listed(base.url) == []
        for s in (base, cv):
            no_panics(s)
    finally:
        for s in (base, cv):
            if s is not None:
                s.stop()
        pg.close()
