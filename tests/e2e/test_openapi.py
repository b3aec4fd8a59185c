"""The served OpenAPI document against the real server: it is the file in the repository, a valid
OpenAPI 3.1 document, and the server's real messages match it (the WebSocket's and the SSE events,
which Schemathesis does not see, and a long text's segments and streamed clip, which its short
syntheses never reach; scripts/suites/25-schemathesis.sh fuzzes the HTTP operations)."""

import asyncio
import base64
import json
from pathlib import Path

import httpx
import jsonschema
import websockets
import pytest
from openapi_spec_validator import validate

from conftest import ROOT, TEXT, Server

DOC_FILE = ROOT / "crates" / "lyre-server" / "openapi.json"


def document():
    return json.loads(Path(DOC_FILE).read_text())


def check(instance, schema_name):
    """Validates against one component schema (its `$ref`s resolve inside the document)."""
    doc = document()
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": doc["components"]}
    jsonschema.Draft202012Validator(schema).validate(instance)


def test_the_served_document_is_the_repositorys_and_valid(server):
    r = httpx.get(server.url + "/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == document()
    validate(r.json())


def test_websocket_messages_match_their_schemas(server):
    sent = [
        {"type": "start", "voice": "ryan", "format": "opus", "codes": True, "text": TEXT, "max_frames": 3,
         "ignore_eos": True},
        {"type": "text", "text": " More."},
        {"type": "end"},
    ]
    for message in sent + [{"type": "cancel"}]:
        check(message, "WsClientMessage")

    async def go():
        received, audio = [], 0
        async with websockets.connect(server.ws_url, subprotocols=["lyre"]) as ws:
            for message in sent:
                await ws.send(json.dumps(message))
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    audio += 1
                    continue
                received.append(json.loads(msg))
                if received[-1]["type"] in ("done", "error"):
                    break
            await ws.send("not json")
            received.append(json.loads(await ws.recv()))
        return received, audio

    received, audio = asyncio.run(go())
    assert [m["type"] for m in received] == ["started", "codes", "codes", "codes", "done", "error"]
    assert audio == 3 + 1  # one per frame, then the Ogg stream's last page
    for message in received:
        check(message, "WsServerMessage")


def test_sse_events_and_errors_match_their_schemas(server):
    body = {"model": "lyre", "input": TEXT, "voice": "vivian", "stream_format": "sse", "response_format": "pcm",
            "max_frames": 2}
    with httpx.stream("POST", server.url + "/v1/audio/speech", json=body, timeout=60) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    assert [e["type"] for e in events] == ["speech.audio.delta"] * 2 + ["speech.audio.done"]
    assert sum(len(base64.b64decode(e["audio"])) for e in events[:-1]) == 2 * 3840
    for event in events:
        check(event, "SpeechEvent")
    for method, path, payload in [("POST", "/v1/tts", {"text": TEXT, "voice": "nobody"}),
                                  ("POST", "/v1/audio/speech", {"model": "x", "input": TEXT}),
                                  ("GET", "/v1/tts/stream", None), ("DELETE", "/v1/voices/nobody", None)]:
        r = httpx.request(method, server.url + path, json=payload)
        assert 400 <= r.status_code < 500, (path, r.text)
        check(r.json(), "Error")


@pytest.fixture(scope="module")
def segmented_server():
    """One sentence of TEXT is one segment here."""
    s = Server(env={"LYRE_ENGINE_SEGMENT_TOKENS": "10"})
    yield s
    s.stop()


SAY = {"voice": "vivian", "language": "english", "greedy": True}


def check_headers(response, path):
    """The `x-lyre-*` headers of a 200 from `POST path` against the document: each required one is
    sent, each one sent is documented, and its value fits the header's schema."""
    documented = document()["paths"][path]["post"]["responses"]["200"]["headers"]
    for name, header in documented.items():
        if header.get("required"):
            assert name in response.headers, (path, name, dict(response.headers))
    for name, value in response.headers.items():
        if not name.startswith("x-lyre-"):
            continue
        assert name in documented, f"{path} sends {name}, which openapi.json does not document"
        schema = documented[name]["schema"]
        jsonschema.validate(int(value) if schema["type"] == "integer" else value, schema)


def test_long_text_responses_match_the_document(segmented_server):
    url = segmented_server.url
    # One segment: sent whole, with the headers only the end can know.
    r = httpx.post(url + "/v1/tts", json={"text": TEXT, "format": "pcm", **SAY}, timeout=120)
    assert r.status_code == 200 and r.headers["x-lyre-segments"] == "1", r.headers
    check_headers(r, "/v1/tts")
    # Three segments: streamed, with the segment count only.
    with httpx.stream("POST", url + "/v1/tts", json={"text": " ".join([TEXT] * 3), "format": "wav", **SAY},
                      timeout=300) as r:
        assert r.status_code == 200
        assert r.headers["x-lyre-segments"] == "3" and "x-lyre-frames" not in r.headers, r.headers
        check_headers(r, "/v1/tts")
        r.read()

    body = {"model": "lyre", "input": " ".join([TEXT] * 3), "response_format": "pcm", "stream_format": "sse", **SAY}
    with httpx.stream("POST", url + "/v1/audio/speech", json=body, timeout=300) as r:
        events = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    assert [(e["segment"], e["segments"]) for e in events if e["type"] == "speech.progress"] == [(0, 3), (1, 3),
                                                                                                 (2, 3)]
    for event in events:
        check(event, "SpeechEvent")

    async def go():
        received = []
        async with websockets.connect(segmented_server.ws_url, subprotocols=["lyre"]) as ws:
            await ws.send(json.dumps({"type": "start", "text_mode": "whole", "text": " ".join([TEXT] * 3), **SAY}))
            await ws.send(json.dumps({"type": "end"}))
            async for m in ws:
                if isinstance(m, str):
                    received.append(json.loads(m))
                    if received[-1]["type"] in ("done", "error"):
                        return received
    received = asyncio.run(go())
    assert [m["type"] for m in received] == ["started", "segment", "segment", "done"], received
    for message in received:
        check(message, "WsServerMessage")
