"""A GPU host that silently falls back to a CPU adapter is an outage: without
`model.allow_cpu_adapter` the server must never report ready on one."""

import asyncio
import os
import re
import subprocess
import tempfile
import threading
import time

import httpx
import pytest
import websockets

from nginx_lb import e2e

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_cpu_adapter_is_refused_unless_allowed():
    env = {**os.environ, "LYRE_MODEL_ALLOW_CPU_ADAPTER": "false", "LYRE_ENGINE_MAX_SESSIONS": "2",
           "LYRE_ENGINE_MAX_POSITIONS": "256", "LYRE_LOG": "info",
           "LYRE_VOICES_DIR": tempfile.mkdtemp(prefix="lyre-voices-")}
    proc = subprocess.Popen(
        [e2e.LYRE, "serve", "--model-dir", str(e2e.FIXTURE), "--listen", "127.0.0.1:0"],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    log, found = [], threading.Event()
    url = {}

    def pump():
        for line in proc.stderr:
            line = ANSI.sub("", line)
            log.append(line)
            m = re.search(r"lyre listening on (http://\S+)", line)
            if m:
                url["base"] = m.group(1)
                found.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert found.wait(120), "".join(log)
        base = url["base"]
        deadline = time.time() + 120
        while time.time() < deadline and not any("GPU ready" in line for line in log):
            time.sleep(0.1)
        adapter = next((line for line in log if "GPU ready" in line), None)
        assert adapter, "wgpu found no adapter at all:\n" + "".join(log)
        if "kind=Cpu" not in adapter:
            # A real GPU: the rule does not apply, the server must turn ready.
            deadline = time.time() + 120
            while time.time() < deadline and httpx.get(base + "/readyz").status_code != 200:
                time.sleep(0.2)
            assert httpx.get(base + "/readyz").status_code == 200, "".join(log)
            return
        deadline = time.time() + 60
        while time.time() < deadline and httpx.get(base + "/healthz").status_code == 200:
            time.sleep(0.1)
        health = httpx.get(base + "/healthz")
        assert health.status_code == 503, health.text
        assert "CPU adapter" in health.json()["reason"] and "allow_cpu_adapter" in health.json()["reason"]
        ready = httpx.get(base + "/readyz")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        r = httpx.post(base + "/v1/tts", json={"text": "Hello.", "voice": "ryan"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "not_ready", r.text
        async def connect():
            async with websockets.connect(base.replace("http", "ws") + "/v1/tts/stream"):
                pass

        with pytest.raises(websockets.InvalidStatus) as refused:
            asyncio.run(connect())
        assert refused.value.response.status_code == 503
        # The process stays up (and says why), rather than crash-looping.
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(30)
