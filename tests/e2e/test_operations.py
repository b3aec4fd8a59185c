"""Day-two operations against the real server: request ids through the access log and the GPU
worker's lines, JSON logs, metrics an operator can use, the slow-client defences, and listening
(with /readyz progress) while the model downloads from a Hugging Face endpoint."""

import asyncio
import http.server
import json
import re
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import websockets

from conftest import FIXTURE, TEXT, Server

HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def wait_for_line(server, *needles, timeout=10):
    """The first log line containing every needle (the access line comes when the body is done)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in list(server.log):
            if all(n in line for n in needles):
                return line
        time.sleep(0.05)
    raise AssertionError(f"no log line with {needles}:\n" + "".join(server.log[-30:]))


def field(line, name):
    m = re.search(rf"\b{name}=(\S+)", line)
    assert m, f"no {name}= in {line}"
    return m.group(1).strip('"')


def test_every_response_carries_a_request_id(server):
    given = httpx.get(server.url + "/healthz", headers={"x-request-id": "probe-7"})
    assert given.headers["x-request-id"] == "probe-7"
    for method, path in [("GET", "/readyz"), ("GET", "/nowhere"), ("POST", "/v1/tts"), ("PUT", "/v1/voices")]:
        r = httpx.request(method, server.url + path, content=b"{", headers={"x-request-id": "has space"})
        assert HEX_ID.match(r.headers["x-request-id"]), (path, r.status_code, r.headers)
    assert httpx.get(server.url + "/nowhere").json()["error"]["code"] == "not_found"


def test_a_clip_request_id_reaches_the_access_line_and_the_worker(server):
    r = httpx.post(server.url + "/v1/tts?token=secret-in-query", headers={"x-request-id": "clip-42"},
                   json={"text": TEXT, "voice": "vivian", "max_frames": 4, "ignore_eos": True}, timeout=60)
    assert r.status_code == 200 and r.headers["x-request-id"] == "clip-42"
    access = wait_for_line(server, "lyre::access", "request_id=clip-42")
    assert field(access, "method") == "POST" and field(access, "path") == "/v1/tts"
    assert field(access, "status") == "200" and field(access, "frames") == "4"
    assert int(field(access, "bytes")) == len(r.content)
    assert float(field(access, "latency_ms")) > 0
    assert "secret-in-query" not in "".join(server.log), "the query (it may hold a key) is never logged"
    worker = wait_for_line(server, "session finished", "clip-42")
    assert "scheduler::worker" in worker and "frames=4" in worker
    # Logs that go to a pipe carry no colour codes.
    assert not any("\x1b[" in line for line in server.log)


def test_a_streamed_response_is_logged_when_its_last_byte_is_sent(server):
    body = {"model": "lyre", "input": TEXT, "voice": "ryan", "response_format": "pcm",
            "max_frames": 5, "ignore_eos": True}
    with httpx.stream("POST", server.url + "/v1/audio/speech", json=body, timeout=60,
                      headers={"x-request-id": "stream-9"}) as r:
        audio = r.read()
    access = wait_for_line(server, "lyre::access", "request_id=stream-9")
    assert field(access, "status") == "200" and field(access, "frames") == "5"
    assert int(field(access, "bytes")) == len(audio) == 5 * 3840


def test_websocket_lines_carry_the_request_id_and_its_access_line_counts_frames(server):
    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"],
                                      additional_headers={"x-request-id": "ws-5"}) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": TEXT, "max_frames": 3,
                                      "ignore_eos": True}))
            await ws.send(json.dumps({"type": "end"}))
            while True:
                msg = await ws.recv()
                if isinstance(msg, str) and json.loads(msg)["type"] in ("done", "error"):
                    return json.loads(msg)
    assert asyncio.run(go())["type"] == "done"
    started = wait_for_line(server, "WebSocket session started", "ws-5")
    done = wait_for_line(server, "WebSocket session done", "ws-5")
    assert "frames=3" in done and started
    wait_for_line(server, "session finished", "ws-5")
    access = wait_for_line(server, "lyre::access", "request_id=ws-5")
    assert field(access, "status") == "101" and field(access, "frames") == "3"


def parse_metrics(text):
    helps, types, samples = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split()
            types[name] = kind
        elif line and not line.startswith("#"):
            name_labels, value = line.rsplit(" ", 1)
            samples[name_labels] = float(value)
    return helps, types, samples


def series_name(sample, types):
    """The series a sample belongs to (a histogram's `_bucket`, `_sum` and `_count` are its own)."""
    name = sample.split("{")[0]
    for suffix in ("_bucket", "_sum", "_count"):
        if name not in types and name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def test_metrics_describe_every_series(server):
    httpx.post(server.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "max_frames": 2}, timeout=60)
    helps, types, samples = parse_metrics(server.metrics())
    names = {series_name(s, types) for s in samples if s.startswith("lyre_")}
    missing = sorted(n for n in names if n not in helps)
    assert not missing, f"series without # HELP: {missing}"
    assert all(helps[n].strip() for n in names)
    for name in ("lyre_max_sessions", "lyre_live_sessions", "lyre_queue_depth"):
        assert types[name] == "gauge", name
    assert samples["lyre_max_sessions"] == 16  # the fixture server's engine.max_sessions
    for name in ("lyre_audio_seconds_total", "lyre_frames_total"):
        assert types[name] == "counter", name
    assert samples["lyre_audio_seconds_total"] == pytest.approx(samples["lyre_frames_total"] * 0.08)
    for name in ("lyre_queue_wait_seconds", "lyre_request_duration_seconds", "lyre_ttfa_seconds"):
        assert types[name] == "histogram", name
    assert any(s.startswith('lyre_request_duration_seconds_count{route="/v1/tts",status="2xx"')
               for s in samples), [s for s in samples if "request_duration" in s][:5]
    (info,) = [s for s in samples if s.startswith("lyre_build_info{")]
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info))
    assert set(labels) == {"version", "adapter", "model"} and all(labels.values()), labels
    assert samples[info] == 1


def test_json_logs_with_the_global_flag():
    # Without XDG_RUNTIME_DIR (containers, fresh root shells) Mesa's drivers would print a plain
    # error line; every line of stderr must still be JSON.
    s = Server(args=("--log-json",), env={"LYRE_AUTH_TENANTS": "acme: acme-key-0001 acme-key-0002",
                                           "XDG_RUNTIME_DIR": None})
    try:
        r = httpx.post(s.url + "/v1/tts", headers={"x-request-id": "json-1", "authorization": "Bearer acme-key-0002"},
                       json={"text": TEXT, "voice": "vivian", "max_frames": 2}, timeout=60)
        assert r.status_code == 200
        wait_for_line(s, '"request_id":"json-1"', "lyre::access")
        wait_for_line(s, "session finished", '"request_id":"json-1"')
    finally:
        s.stop()
    records = [json.loads(line) for line in s.log if line.strip()]
    access = next(r for r in records if r.get("target") == "lyre::access" and r["fields"]["request_id"] == "json-1")
    assert access["fields"]["status"] == 200 and access["fields"]["frames"] == 2
    assert access["fields"]["caller"] == "acme/key#1", "the key's tenant and index, never the key"
    assert "acme-key-0002" not in "".join(s.log)
    worker = next(r for r in records if r["fields"].get("message") == "session finished")
    assert {"name": "request", "request_id": "json-1"}.items() <= worker["spans"][0].items()


def test_slow_headers_are_cut_off_and_connections_are_capped():
    s = Server(env={"LYRE_SERVER_HEADER_READ_TIMEOUT_S": "2", "LYRE_SERVER_MAX_CONNECTIONS": "4"})
    host, port = s.url.removeprefix("http://").split(":")
    try:
        # Slowloris: a request whose headers never end is closed after the header deadline.
        started = time.time()
        slow = socket.create_connection((host, int(port)))
        slow.sendall(b"POST /v1/tts HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
        slow.settimeout(30)
        assert slow.recv(1024) == b"", "the half-sent request must be dropped, not answered"
        assert 1.5 < time.time() - started < 8
        slow.close()
        # The cap: four idle connections fill it; the fifth is told so at once and closed.
        idle = [socket.create_connection((host, int(port))) for _ in range(4)]
        time.sleep(0.3)
        extra = socket.create_connection((host, int(port)))
        extra.settimeout(10)
        reply = b""
        while chunk := extra.recv(4096):
            reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower(), head
        assert re.search(rb"(?i)x-request-id: [0-9a-f]{32}\r", head + b"\r"), head
        assert json.loads(body)["error"]["code"] == "too_many_connections"
        for sock in idle:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(s.url + "/healthz").status_code == 200
        assert "lyre_rejected_total{code=\"too_many_connections\"} 1" in httpx.get(s.url + "/metrics").text
    finally:
        s.stop()


class SlowHub(http.server.ThreadingHTTPServer):
    """A Hugging Face endpoint on loopback serving the fixture checkpoint, the large file slowly
    (the protocol hf-hub speaks: ranged GETs answered with etag, x-repo-commit, content-range)."""

    daemon_threads = True

    def __init__(self, root: Path, seconds: float):
        self.root, self.seconds = root, seconds
        super().__init__(("127.0.0.1", 0), SlowHubHandler)


class SlowHubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        m = re.match(r"^/[^/]+/[^/]+/resolve/main/(.+)$", self.path)
        path = self.server.root / m.group(1) if m else None
        if path is None or not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = int(re.match(r"bytes=(\d+)-", self.headers.get("Range", "bytes=0-")).group(1))
        end = len(data) - 1 if self.headers.get("Range") != "bytes=0-0" else 0
        self.send_response(206)
        self.send_header("etag", f'"{hash(path.name) & 0xFFFFFFFF:08x}{len(data)}"')
        self.send_header("x-repo-commit", "0" * 40)
        self.send_header("content-range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("content-length", str(end - start + 1))
        self.end_headers()
        body = data[start:end + 1]
        slow = path.name == "model.safetensors" and len(body) > 1 and "speech_tokenizer" not in str(path)
        pieces = 20 if slow else 1
        step = -(-len(body) // pieces)
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            if slow:
                time.sleep(self.server.seconds / pieces)


def test_the_server_listens_while_the_model_downloads(tmp_path):
    hub = SlowHub(FIXTURE, seconds=6)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{hub.server_address[1]}", "HF_HOME": str(tmp_path / "hf")}
    s = Server(env=env, args=("--model", "Qwen/Qwen3-TTS-12Hz-tiny"), wait=False)
    try:
        seen, refused = [], None
        deadline = time.time() + 60
        while time.time() < deadline:
            ready = httpx.get(s.url + "/readyz", timeout=5)
            assert httpx.get(s.url + "/healthz", timeout=5).status_code == 200
            if ready.status_code == 200:
                break
            assert ready.status_code == 503 and ready.headers["x-request-id"]
            seen.append(ready.json())
            if refused is None and seen[-1]["status"] == "loading":
                refused = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian"})
            time.sleep(0.2)
        downloading = [r for r in seen if r["status"] == "loading" and r["loading"]["stage"] == "downloading"]
        assert downloading, seen[:3]
        mid = downloading[len(downloading) // 2]["loading"]
        assert mid["repo"] == "Qwen/Qwen3-TTS-12Hz-tiny" and mid["files_total"] == 9
        assert mid["files_done"] < mid["files_total"]
        assert any(0 < r["loading"]["file_bytes_done"] < r["loading"]["file_bytes_total"] for r in downloading)
        # A request during the download gets the 503 the API gives while loading.
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "not_ready"
        s.wait_ready()
        r = httpx.post(s.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "max_frames": 2}, timeout=60)
        assert r.status_code == 200
    finally:
        s.stop()
        hub.shutdown()
