"""The served OpenAPI document against the real server: it is the file in the repository, a valid
OpenAPI 3.1 document, and the server's real messages match it (the WebSocket's and the SSE events,
which Schemathesis does not see; scripts/suites/25-schemathesis.sh fuzzes the HTTP operations)."""

import asyncio
import base64
import json
from pathlib import Path

import httpx
import jsonschema
import websockets
from openapi_spec_validator import validate

from conftest import ROOT, TEXT

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
