"""Keep-alive, idle sockets and connection caps on /v1/tts/stream, against the real server."""

import asyncio
import base64
import json
import os
import socket
import struct
import time
from urllib.parse import urlparse

import pytest
import websockets

from conftest import TEXT, Server


@pytest.fixture(scope="module")
def quick():
    """Pings every second, idle sockets closed after 4 s, at most 25 sockets."""
    s = Server(env={"LYRE_SERVER_WS_PING_INTERVAL_S": "1", "LYRE_LIMITS_WS_IDLE_TIMEOUT_S": "4",
                    "LYRE_LIMITS_MAX_WS_CONNECTIONS": "25"})
    yield s
    s.stop()


class RawSocket:
    """A WebSocket client that never answers pings (a client that died without closing)."""

    def __init__(self, server):
        url = urlparse(server.url)
        self.sock = socket.create_connection((url.hostname, url.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /v1/tts/stream HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           "Sec-WebSocket-Protocol: lyre\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def frames(self):
        """Every frame until the server's close: [(opcode, payload)]."""
        out = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            out.append((b0 & 0x0F, self._read(n)))
            if out[-1][0] == 0x8:
                return out


def close_of(frames):
    code, reason = struct.unpack(">H", frames[-1][1][:2])[0], frames[-1][1][2:].decode()
    errors = [json.loads(p) for op, p in frames if op == 0x1]
    return code, reason, errors


def test_a_client_that_stops_answering_pings_is_closed(quick):
    raw = RawSocket(quick)
    t0 = time.monotonic()
    frames = raw.frames()
    elapsed = time.monotonic() - t0
    code, reason, errors = close_of(frames)
    assert sum(op == 0x9 for op, _ in frames) == 2, "two pings, then the close"
    assert (code, reason) == (1000, "ping_timeout") and errors[-1]["code"] == "ping_timeout"
    assert 2.5 <= elapsed < 4, elapsed


def test_sockets_that_never_start_are_closed_after_the_idle_timeout(quick):
    async def go():
        sockets = [await websockets.connect(quick.ws_url, subprotocols=["lyre"]) for _ in range(20)]
        t0 = time.monotonic()
        replies = await asyncio.gather(*(ws.recv() for ws in sockets))
        await asyncio.gather(*(ws.wait_closed() for ws in sockets))
        closes = [(ws.close_code, ws.close_reason) for ws in sockets]
        return time.monotonic() - t0, replies, closes
    elapsed, replies, closes = asyncio.run(go())
    # They answered every ping (the library does), yet with no session they are closed.
    assert all(json.loads(r)["code"] == "idle_timeout" for r in replies)
    assert closes == [(1000, "idle_timeout")] * 20
    assert 3 <= elapsed < 7, elapsed


def test_pongs_keep_a_session_waiting_for_text_alive(quick):
    async def go():
        async with websockets.connect(quick.ws_url, subprotocols=["lyre"]) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "greedy": True, "max_frames": 5}))
            assert json.loads(await ws.recv())["type"] == "started"
            # Twice the idle timeout with no message but the pongs to the server's pings.
            try:
                msg = await asyncio.wait_for(ws.recv(), 8)
                raise AssertionError(f"the waiting session ended: {msg}")
            except asyncio.TimeoutError:
                pass
            await ws.send(json.dumps({"type": "text", "text": TEXT}))
            await ws.send(json.dumps({"type": "end"}))
            async for m in ws:
                if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                    return json.loads(m)
    assert asyncio.run(go())["type"] == "done"


def test_sockets_beyond_the_cap_are_refused_with_1013(quick):
    async def go():
        held = [await websockets.connect(quick.ws_url, subprotocols=["lyre"]) for _ in range(25)]
        extra = await websockets.connect(quick.ws_url, subprotocols=["lyre"])
        reply = json.loads(await extra.recv())
        await extra.wait_closed()
        for ws in held:
            await ws.close()
        await asyncio.sleep(0.5)
        again = await websockets.connect(quick.ws_url, subprotocols=["lyre"])
        await again.send(json.dumps({"type": "start", "voice": "ryan", "text": "Hi.", "max_frames": 2}))
        first = json.loads(await again.recv())
        await again.close()
        return reply, (extra.close_code, extra.close_reason), first
    reply, close, first = asyncio.run(go())
    assert reply["code"] == "too_many_connections" and reply["retry_after_s"] >= 1
    assert close == (1013, "too_many_connections")
    assert first["type"] == "started", "closing the others frees their places"


def test_each_api_key_has_its_own_cap():
    s = Server(env={"LYRE_AUTH_API_KEYS": "key-aaaa-1111,key-bbbb-2222", "LYRE_LIMITS_MAX_WS_CONNECTIONS_PER_KEY": "3"})
    try:
        async def go():
            def connect(key):
                return websockets.connect(s.ws_url, subprotocols=["lyre", f"lyre.token.{key}"])
            held = [await connect("key-aaaa-1111") for _ in range(3)]
            extra = await connect("key-aaaa-1111")
            reply = json.loads(await extra.recv())
            await extra.wait_closed()
            other = await connect("key-bbbb-2222")
            await other.send(json.dumps({"type": "start", "voice": "ryan", "text": "Hi.", "max_frames": 2}))
            first = json.loads(await other.recv())
            for ws in held + [other]:
                await ws.close()
            return reply, extra.close_code, first
        reply, code, first = asyncio.run(go())
        assert (reply["code"], code) == ("key_too_many_connections", 1013)
        assert first["type"] == "started"
    finally:
        s.stop()
