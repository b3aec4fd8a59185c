"""Point 4, one test per rule (tests/e2e/test_limits.py already covers: wrong/missing keys are
401, each key form works, keys absent from the info-level log, 413 for a long text). Constant-
time comparison is tested in Rust (`keys_are_compared_in_constant_time` in http/auth.rs)."""

import asyncio
import json

import httpx
import pytest
import websockets

from conftest import TEXT, Server, no_panics

KEY_A, KEY_B = "sekrit-key-aaaa-1234", "sekrit-key-bbbb-5678"


@pytest.fixture(scope="module")
def keyed():
    s = Server(env={"LYRE_AUTH_API_KEYS": f"{KEY_A},{KEY_B}", "LYRE_AUTH_MAX_SESSIONS_PER_KEY": "1",
                    "LYRE_LOG": "trace,wgpu_core=warn,wgpu_hal=warn,naga=warn,lyre_engine=debug", "LYRE_LIMITS_MAX_WS_MESSAGE_BYTES": "4096"})
    yield s
    assert s.stop() == 0


async def ws_start(url, protocols, frames=1, end=True):
    async with websockets.connect(url, subprotocols=protocols) as c:
        await c.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": frames}))
        if end:
            await c.send(json.dumps({"type": "end"}))
        async for m in c:
            if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                return json.loads(m)


def test_keys_never_appear_in_the_log_even_at_trace_level(keyed):
    s = keyed
    body = {"text": TEXT, "voice": "vivian", "max_frames": 1}
    assert httpx.post(s.url + "/v1/tts", json=body, headers={"authorization": f"Bearer {KEY_A}"},
                      timeout=120).status_code == 200
    assert httpx.post(s.url + "/v1/tts?token=" + KEY_B, json=body, timeout=120).status_code == 200
    assert httpx.post(s.url + "/v1/tts", json=body, headers={"authorization": "Bearer sekrit-wrong-key"},
                      timeout=60).status_code == 401
    assert asyncio.run(ws_start(s.ws_url + "?token=" + KEY_B, ["lyre"]))["type"] == "done"
    assert asyncio.run(ws_start(s.ws_url, ["lyre", "lyre.token." + KEY_A]))["type"] == "done"
    log = "".join(s.log)
    assert "DEBUG" in log or "TRACE" in log, "the log really is verbose"
    for secret in (KEY_A, KEY_B, "sekrit-wrong-key", "sekrit"):
        assert secret not in log, f"{secret} leaked into the log"


def test_each_key_holds_at_most_its_session_limit(keyed):
    s = keyed

    async def go():
        url_a = s.ws_url + "?token=" + KEY_A
        async with websockets.connect(url_a, subprotocols=["lyre"]) as first:
            await first.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 100}))
            assert json.loads(await first.recv())["type"] == "started"
            second = await ws_start(url_a, ["lyre"])
            other_key = await ws_start(s.ws_url + "?token=" + KEY_B, ["lyre"])
            http = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "max_frames": 1},
                              headers={"authorization": f"Bearer {KEY_A}"}, timeout=60)
        # The first socket closed: its slot is free again.
        again = await ws_start(url_a, ["lyre"])
        return second, other_key, http, again

    second, other_key, http, again = asyncio.run(go())
    assert second["type"] == "error" and second["code"] == "key_busy" and second["retry_after_s"] == 1, second
    assert http.status_code == 429 and http.json()["error"]["code"] == "key_busy"
    assert other_key["type"] == "done", other_key
    assert again["type"] == "done", again


def test_websocket_messages_beyond_the_size_limit_close_the_socket(keyed):
    s = keyed

    async def go():
        async with websockets.connect(s.ws_url + "?token=" + KEY_B, subprotocols=["lyre"]) as c:
            await c.send(json.dumps({"type": "text", "text": "x" * 8000}))
            told = json.loads(await asyncio.wait_for(c.recv(), 30))
            with pytest.raises(websockets.exceptions.ConnectionClosed) as e:
                await asyncio.wait_for(c.recv(), 30)
            return told, e.value.rcvd.code if e.value.rcvd else None
    told, code = asyncio.run(go())
    assert told["type"] == "error" and told["code"] == "message_too_large", told
    assert code == 1009  # "message too big"
    assert httpx.get(s.url + "/readyz").status_code == 200


def test_request_bodies_beyond_the_size_limit_are_413():
    s = Server(env={"LYRE_SERVER_MAX_BODY_BYTES": "2048"})
    try:
        r = httpx.post(s.url + "/v1/tts", content=json.dumps({"text": "a" * 3000, "voice": "ryan"}), timeout=60)
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
        r = httpx.post(s.url + "/v1/audio/speech", content=b"{" + b" " * 4096 + b"}", timeout=60)
        assert r.status_code == 413
    finally:
        assert s.stop() == 0


def test_no_request_reaches_the_file_system(keyed):
    s = keyed
    auth = {"authorization": f"Bearer {KEY_A}"}
    hostile = ["../../../../etc/passwd", "/etc/passwd", "..\\..\\windows\\win.ini", "%2e%2e%2fetc%2fpasswd",
               "ryan/../../config.json", "ryan\x00.json", "file:///etc/passwd", "~root", "CON", "ryan.safetensors",
               "speech_tokenizer", "config", "."]
    for voice in hostile:
        r = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": voice}, headers=auth, timeout=60)
        assert r.status_code == 400, (voice, r.status_code)
        assert r.json()["error"]["code"] == "unknown_voice" and r.json()["error"]["param"] == "voice", voice
        assert "root:" not in r.text
    for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/v1/../../etc/passwd", "/config.json",
                 "/model.safetensors", "/static/../../etc/passwd", "//etc/passwd"]:
        r = httpx.get(s.url + path, headers=auth, timeout=30)
        assert r.status_code in (400, 404), (path, r.status_code)
        assert "root:" not in r.text and "talker_config" not in r.text, path
    no_panics(s)
