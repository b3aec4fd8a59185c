"""Point 3 against the real server: a corpus of well over 1,000 malformed requests (HTTP bodies
and WebSocket messages), each answered by a 4xx or an `error` message, zero 5xx, no panic, and
the server ready afterwards; extreme but legal text synthesises or is refused clearly; a frame
limit proportional to the text ends every session."""

import asyncio
import itertools
import json
import random
import socket

import httpx
import websockets

from conftest import TEXT, Server, no_panics

SAMPLING = ["temperature", "top_k", "top_p", "repetition_penalty", "seed", "max_frames"]
BAD_NUMBERS = ["-1", "-0.5", "1e39", "-1e39", "1e400", "18446744073709551616", "-9223372036854775809",
               "\"NaN\"", "\"inf\"", "\"-Infinity\"", "NaN", "Infinity", "[]", "{}", "true", "\"1\"", "0x10",
               "1e-400", "-0", "00", "1.", ".5", "+1", "99999999999999999999999999999999"]


def still_a_request(body):
    """A mutation that left a valid request (e.g. a changed letter inside the text)."""
    try:
        v = json.loads(body)
    except ValueError:
        return False
    return isinstance(v, dict) and isinstance(v.get("text"), str) and v.get("voice") == "ryan" and len(v) == 2


def http_corpus(rng):
    """(path, body bytes) pairs, none of them a valid request."""
    out = []
    base = {"text": TEXT, "voice": "ryan"}
    for path in ("/v1/tts", "/v1/audio/speech"):
        text_key = "text" if path == "/v1/tts" else "input"
        extra = '"model":"lyre",' if path != "/v1/tts" else ""
        ok_head = f'{{{extra}"{text_key}":"Hello.","voice":"ryan",'
        # Every sampling field with every bad number.
        for field, value in itertools.product(SAMPLING, BAD_NUMBERS):
            if field == "seed" and value in ("-0", "00"):
                continue
            if field in ("max_frames",) and value in ("-0",):
                continue
            out.append((path, (ok_head + f'"{field}":{value}}}').encode()))
        # Invalid UTF-8 in strings, keys and structure.
        for junk in [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80\x80", b"\xfe\xfe\xff"]:
            out.append((path, ok_head.encode()[:-1] + b',"voice":"' + junk + b'"}'))
            out.append((path, b'{"' + junk + b'":1}'))
            out.append((path, junk * 10))
        # Wrong types for every field.
        for field in ["voice", "language", "instruct", "text_mode", "greedy", "ignore_eos", "format", text_key,
                      "response_format", "stream_format", "speed", "model"]:
            for value in ["1", "[\"a\"]", "{\"a\":1}", "true" if field not in ("greedy", "ignore_eos") else "\"yes\""]:
                if field == "speed" and value == "1":
                    continue  # a legal speed
                out.append((path, (ok_head + f'"{field}":{value}}}').encode()))
        # Unknown fields, missing fields, bad values.
        for k in ["bogus", "Voice", "TEXT", "__proto__", "", " ", "max-frames"]:
            out.append((path, (ok_head + json.dumps(k) + ":1}").encode()))
        for body in [{}, {"voice": "ryan"}, {text_key: "Hello."}, {text_key: "", "voice": "ryan"},
                     {text_key: "   \n\t", "voice": "ryan"}, {text_key: "Hello.", "voice": "nobody"},
                     {text_key: "Hello.", "voice": "../../etc/passwd"}, {text_key: "Hello.", "voice": "ryan",
                     "language": "klingon"}, {text_key: "<|im_start|>", "voice": "ryan"},
                     {text_key: "x" * 500_001, "voice": "ryan"}, {text_key: "Hello.", "voice": "ryan", "max_frames": 0},
                     {text_key: "Hello.", "voice": "ryan", "text_mode": "sideways"}]:
            if path != "/v1/tts":
                body = {"model": "lyre", **body}
            out.append((path, json.dumps(body).encode()))
        # Not JSON objects at all; truncated JSON; deeply nested JSON.
        for body in [b"", b"null", b"[]", b"[1,2]", b"\"text\"", b"42", b"{", b"{\"text\":", b"{\"text\":\"a\"",
                     b"{'text':'a'}", b"{\"text\":\"a\",}", b"\x00" * 8, b"\xef\xbb\xbf{}"]:
            out.append((path, body))
        for depth in (64, 200, 5000, 100_000):
            out.append((path, b"[" * depth + b"]" * depth))
            out.append((path, (ok_head + '"voice2":' + "{\"a\":" * depth + "1" + "}" * depth + "}").encode()))
    # Random bytes and random mutations of a valid body.
    valid = json.dumps(base).encode()
    for _ in range(150):
        b = bytearray(valid)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        if not still_a_request(bytes(b)):
            out.append(("/v1/tts", bytes(b)))
        out.append(("/v1/tts", bytes(rng.randrange(256) for _ in range(rng.randint(1, 80)))))
    return out


async def check_http(client, url, corpus):
    bad = []
    for path, body in corpus:
        r = await client.post(url + path, content=body, headers={"content-type": "application/json"}, timeout=60)
        if not (400 <= r.status_code < 500) or "error" not in r.json():
            bad.append((path, body[:80], r.status_code, r.text[:200]))
    return bad


def ws_corpus(rng):
    """Lists of messages, each list for one socket; every message must be answered by `error`."""
    start = {"type": "start", "voice": "ryan", "max_frames": 2}
    single = []
    single += [b"\x00\x01", b"{\"type\":\"start\"}", b"\xff" * 100]  # binary where text is expected
    single += ["", "null", "[]", "42", "{", "not json", "{\"type\":1}", "{\"type\":null}", "{\"no_type\":1}"]
    single += [json.dumps({"type": t}) for t in ["pause", "START", "resume", "", "stop", "audio", "done", "error"]]
    single += [json.dumps({"type": "text"}), json.dumps({"type": "text", "text": 5}),
               json.dumps({"type": "text", "text": ["a"]}), json.dumps({"type": "end", "now": True})]
    # Out of order: text/end before any start (each answered by `no_session`).
    single += [json.dumps({"type": "text", "text": "early"}), json.dumps({"type": "end"})]
    # Bad starts (invalid fields).
    for field, value in itertools.product(SAMPLING, BAD_NUMBERS):
        single.append("{\"type\":\"start\",\"voice\":\"ryan\",\"" + field + "\":" + value + "}")
    for field, value in [("voice", "\"nobody\""), ("voice", "\"../../etc/passwd\""), ("language", "\"klingon\""),
                         ("format", "\"aac\""), ("text_mode", "\"x\""), ("codes", "\"yes\""), ("bogus", "1"),
                         ("instruct", "\"Whisper.\""), ("text", "\"<|im_end|>\""), ("text", "1")]:
        single.append("{\"type\":\"start\",\"voice\":\"ryan\",\"" + field + "\":" + value + "}")
    for depth in (200, 5000):
        single.append("{\"type\":\"text\",\"text\":" + "[" * depth + "]" * depth + "}")
    for _ in range(60):
        m = bytearray(json.dumps(start).encode())
        for _ in range(rng.randint(1, 4)):
            m[rng.randrange(len(m))] = rng.randrange(32, 127)
        s = m.decode()
        try:
            if json.loads(s) == start or (isinstance(json.loads(s), dict) and json.loads(s).get("type") == "start"):
                continue
        except ValueError:
            pass
        single.append(s)
    sockets = [single[i:i + 30] for i in range(0, len(single), 30)]
    # Out of order within a live session: a second start, text after end.
    sockets.append([("start", json.dumps({**start, "text": "Hi."})), json.dumps(start),
                    ("end", json.dumps({"type": "end"})), json.dumps({"type": "text", "text": "late"})])
    return sockets


async def check_ws(url, sockets):
    bad, count = [], 0
    for msgs in sockets:
        async with websockets.connect(url, subprotocols=["lyre"], max_size=None) as ws:
            for m in msgs:
                if isinstance(m, tuple):  # a legal message: sent, no error expected from it alone
                    await ws.send(m[1])
                    continue
                await ws.send(m)
                count += 1
                while True:
                    reply = await asyncio.wait_for(ws.recv(), 60)
                    if isinstance(reply, bytes):
                        continue
                    r = json.loads(reply)
                    if r["type"] in ("started", "codes", "done"):
                        continue
                    break
                if r["type"] != "error" or r["code"] in ("cancelled",):
                    bad.append((m[:80] if isinstance(m, str) else m[:20], r))
    return bad, count


def ten_megabyte_body(url):
    """Announces a 10 MB body and starts sending it: the server answers 413 from the headers
    without reading the rest (a client that insisted on writing all 10 MB first would see the
    connection reset instead, as from any server that refuses a body early)."""
    host, port = url.replace("http://", "").split(":")
    body_len = 10 << 20
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(f"POST /v1/tts HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
                     f"content-length: {body_len}\r\n\r\n".encode() + b'{"text":"' + b"a" * 65536)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def test_a_thousand_malformed_requests_get_4xx_or_error_never_5xx():
    s = Server()
    try:
        rng = random.Random(6)
        corpus = http_corpus(rng)
        sockets = ws_corpus(rng)

        async def go():
            async with httpx.AsyncClient() as client:
                http_bad = await check_http(client, s.url, corpus)
            ws_bad, ws_count = await check_ws(s.ws_url, sockets)
            return http_bad, ws_bad, ws_count

        http_bad, ws_bad, ws_count = asyncio.run(go())
        big_status, big_body = ten_megabyte_body(s.url)
        total = len(corpus) + 1 + ws_count
        print(f"\nmalformed corpus: {len(corpus) + 1} HTTP + {ws_count} WebSocket = {total}")
        assert total >= 1000
        assert not http_bad, http_bad[:10]
        assert big_status == 413 and json.loads(big_body)["error"]["code"] == "body_too_large", big_body
        assert not ws_bad, ws_bad[:10]
        assert "lyre_errors_total" in s.metrics()
        assert httpx.get(s.url + "/readyz").status_code == 200
        no_panics(s)
    finally:
        assert s.stop() == 0


EXTREME = {
    "only emoji": "😀🎉🚀🔥💯" * 20,
    "4096 characters": ("Hello world. " * 400)[:4096],
    "mixed scripts": "Hello 你好 Привет مرحبا שלום こんにちは 안녕하세요 नमस्ते Γειά σου",
    "control characters": "Hello\x00\x01\x07\x1b[31m world\r\n\t\x7f\u200b\u202e done.",
    "combining marks": "Z\u0351\u0352\u0353a\u0300\u0301\u0302\u0303l\u0361g\u0489o" * 10,
}


def test_extreme_but_legal_text_synthesises_or_is_refused_clearly(server_extreme):
    s = server_extreme
    for name, text in EXTREME.items():
        r = httpx.post(s.url + "/v1/tts", json={"text": text, "voice": "ryan", "max_frames": 3, "format": "pcm"},
                       timeout=300)
        if r.status_code == 200:
            assert 1 <= int(r.headers["x-lyre-frames"]) <= 3 and len(r.content) % 3840 == 0, name
        else:
            assert 400 <= r.status_code < 500, (name, r.status_code, r.text)
            err = r.json()["error"]
            assert err["param"] == "text" and err["message"], (name, err)
        print(f"\n{name}: {r.status_code} {r.headers.get('x-lyre-frames') or r.json()['error']['message'][:80]}")

        async def ws():
            async with websockets.connect(s.ws_url, subprotocols=["lyre"], max_size=None) as c:
                await c.send(json.dumps({"type": "start", "voice": "ryan", "max_frames": 3}))
                for i in range(0, len(text), 1000):
                    await c.send(json.dumps({"type": "text", "text": text[i:i + 1000]}))
                await c.send(json.dumps({"type": "end"}))
                async for m in c:
                    if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                        return json.loads(m)
        msg = asyncio.run(ws())
        assert msg["type"] == "done" or (msg["code"] and msg["message"]), (name, msg)
    assert httpx.get(s.url + "/readyz").status_code == 200
    no_panics(s)


def test_generation_is_capped_in_proportion_to_the_text(server_extreme):
    s = server_extreme
    # Whole text over HTTP: "Hi." is a couple of tokens, so the cap is (5 + tokens) s of audio.
    r = httpx.post(s.url + "/v1/tts", json={"text": "Hi.", "voice": "ryan", "max_frames": 100000,
                                            "ignore_eos": True, "format": "pcm"}, timeout=300)
    assert r.status_code == 200, r.text
    http_frames = int(r.headers["x-lyre-frames"])
    assert 62 < http_frames <= 12.5 * (5 + 4) and r.headers["x-lyre-finish-reason"] == "max_frames"

    # Streamed text: counted when it ends; a session that never says `end` is bounded by the
    # idle timeout instead (test_limits / protocol.md).
    async def ws():
        async with websockets.connect(s.ws_url, subprotocols=["lyre"], max_size=None) as c:
            await c.send(json.dumps({"type": "start", "voice": "ryan", "text": "Hi.", "max_frames": 100000,
                                     "ignore_eos": True}))
            await c.send(json.dumps({"type": "end"}))
            async for m in c:
                if isinstance(m, str) and json.loads(m)["type"] in ("done", "error"):
                    return json.loads(m)
    done = asyncio.run(ws())
    assert done["type"] == "done" and done["finish_reason"] == "max_frames", done
    assert 62 < done["frames"] <= 12.5 * (5 + 4), done


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def server_extreme():
    s = Server(env={"LYRE_ENGINE_MAX_POSITIONS": "8192", "LYRE_ENGINE_MAX_ROWS_PER_TICK": "8192"})
    yield s
    assert s.stop() == 0
