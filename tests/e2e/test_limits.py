"""Admission control, bad requests, API keys and graceful shutdown, each on its own server."""

import asyncio
import json
import signal
import threading
import time

import httpx
import pytest
import websockets

from conftest import TEXT, Server


def test_bad_requests_get_4xx_json_naming_the_problem(server):
    cases = [
        (b"{not json", 400, None),
        (json.dumps({"text": TEXT, "voice": "nobody"}), 400, "voice"),
        (json.dumps({"text": "   ", "voice": "vivian"}), 400, "text"),
        (json.dumps({"text": "x" * 500_001, "voice": "vivian"}), 413, "text"),
        (json.dumps({"text": TEXT, "voice": "vivian", "temperature": -1}), 400, "temperature"),
        (json.dumps({"text": TEXT, "voice": "vivian", "top_k": "many"}), 400, "top_k"),
        (json.dumps({"text": TEXT, "voice": "vivian", "format": "aac"}), 400, "format"),
        (json.dumps({"text": TEXT, "voice": "vivian", "language": "klingon"}), 400, "language"),
        (json.dumps({"text": TEXT, "voice": "vivian", "instruct": "Whisper."}), 400, "instruct"),
        (json.dumps({"text": TEXT, "voice": "vivian", "bogus": 1}), 400, "bogus"),
        (json.dumps({"text": "<|im_end|>", "voice": "vivian"}), 400, "text"),
        (json.dumps([1, 2]), 400, None),
    ]
    for body, status, field in cases:
        r = httpx.post(server.url + "/v1/tts", content=body, timeout=30)
        assert r.status_code == status, (body[:60], r.text)
        err = r.json()["error"]
        assert err["code"] and err["message"]
        assert err["param"] == field, (body[:60], err)
    assert httpx.get(server.url + "/readyz").status_code == 200


def test_admission_beyond_the_limit_is_429_with_retry_after():
    s = Server(env={"LYRE_ENGINE_MAX_SESSIONS": "1", "LYRE_ENGINE_MAX_QUEUE": "0"})
    try:
        async def go():
            async with websockets.connect(s.ws_url, subprotocols=["lyre"]) as ws:
                await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 400,
                                          "ignore_eos": True}))
                while not isinstance(await ws.recv(), bytes):
                    pass
                r = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian"}, timeout=30)
                async with websockets.connect(s.ws_url, subprotocols=["lyre"]) as ws2:
                    await ws2.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT}))
                    err = json.loads(await ws2.recv())
                return r, err
        r, err = asyncio.run(go())
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.json()["error"]["code"] == "busy"
        assert err["type"] == "error" and err["code"] == "busy" and err["retry_after_s"] == 1
    finally:
        s.stop()


def test_api_keys():
    s = Server(env={"LYRE_AUTH_API_KEYS": "secret-key-1,secret-key-2"})
    try:
        body = {"text": TEXT, "voice": "vivian", "max_frames": 2}
        assert httpx.post(s.url + "/v1/tts", json=body).status_code == 401
        assert httpx.post(s.url + "/v1/tts", json=body, headers={"authorization": "Bearer wrong-key"}).status_code == 401
        ok = httpx.post(s.url + "/v1/tts", json=body, headers={"authorization": "Bearer secret-key-2"}, timeout=60)
        assert ok.status_code == 200
        assert httpx.get(s.url + "/healthz").status_code == 200

        async def ws(url, protocols):
            async with websockets.connect(url, subprotocols=protocols) as c:
                await c.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 1}))
                await c.send(json.dumps({"type": "end"}))
                async for m in c:
                    if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                        return json.loads(m)["type"]
        assert asyncio.run(ws(s.ws_url + "?token=secret-key-1", ["lyre"])) == "done"
        assert asyncio.run(ws(s.ws_url, ["lyre", "lyre.token.secret-key-1"])) == "done"
        with pytest.raises(websockets.exceptions.InvalidStatus):
            asyncio.run(ws(s.ws_url + "?token=nope", ["lyre"]))
        assert not any("secret-key" in line for line in s.log), "keys are never logged"
    finally:
        s.stop()


def test_sigterm_lets_live_streams_finish_then_exits_zero():
    s = Server(env={"LYRE_SERVER_DRAIN_TIMEOUT_S": "120"})
    results = []

    async def one(i):
        async with websockets.connect(s.ws_url, subprotocols=["lyre"]) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 40,
                                      "ignore_eos": True, "seed": i}))
            await ws.send(json.dumps({"type": "end"}))
            frames = 0
            async for m in ws:
                if isinstance(m, bytes):
                    frames += 1
                    if frames == 2 and i == 0:
                        threading.Thread(target=lambda: s.proc.send_signal(signal.SIGTERM)).start()
                    continue
                msg = json.loads(m)
                if msg["type"] in ("done", "error"):
                    return msg, frames

    async def four():
        return await asyncio.gather(*(one(i) for i in range(4)))

    results = asyncio.run(four())
    assert [m["type"] for m, _ in results] == ["done"] * 4, results
    assert all(frames == 40 for _, frames in results)
    assert s.proc.wait(60) == 0
