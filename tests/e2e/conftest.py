"""Fixtures for the end-to-end tests: the real `lyre` binary on port 0 with the tiny fixture model."""

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LYRE_SHARED", ROOT.parent / "shared"))
FIXTURE = SHARED / "fixtures" / "tiny-custom-voice"
LYRE = os.environ.get("LYRE_BIN", str(ROOT / "target" / "debug" / "lyre"))
TEXT = "Hello world, this is a test."


class Server:
    """One `lyre serve` process; its stderr is kept in `self.log`."""

    def __init__(self, env=None, args=(), fixture=FIXTURE, wait=True):
        full_env = dict(os.environ)
        full_env.update({
            "LYRE_MODEL_ALLOW_CPU_ADAPTER": "true",
            "LYRE_ENGINE_MAX_SESSIONS": "16",
            "LYRE_ENGINE_MAX_POSITIONS": "512",
            "LYRE_ENGINE_MAX_ROWS_PER_TICK": "256",
            "LYRE_SERVER_DRAIN_TIMEOUT_S": "60",
            "LYRE_LOG": "info",
        })
        full_env.update(env or {})
        # A variable given as None is removed from the server's environment.
        full_env = {k: v for k, v in full_env.items() if v is not None}
        if "LYRE_VOICES_DIR" not in full_env and "LYRE_VOICES_DATABASE" not in full_env:
            # Each server's own voice database, not one in the working directory.
            self._voices = tempfile.TemporaryDirectory(prefix="lyre-voices-")
            full_env["LYRE_VOICES_DIR"] = self._voices.name
        model = [] if "--model" in args else ["--model-dir", str(fixture)]
        self.proc = subprocess.Popen(
            [LYRE, "serve", *model, "--listen", "127.0.0.1:0", *args],
            env=full_env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        self.log = []
        self.url = None
        found = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.log.append(line)
                # The plain banner, or the `listening` line of JSON logs.
                m = re.search(r"lyre listening on (http://\S+)", line)
                j = re.search(r'"message":"listening".*"addr":"([^"]+)"|"addr":"([^"]+)".*"message":"listening"', line)
                if m or j:
                    self.url = m.group(1) if m else "http://" + (j.group(1) or j.group(2))
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(120):
            self.proc.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.log))
        if wait:
            self.wait_ready()

    @property
    def ws_url(self):
        return self.url.replace("http://", "ws://") + "/v1/tts/stream"

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/readyz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        if self.proc.poll() is None:  # a server that never got ready is not left running
            self.proc.kill()
            self.proc.wait(10)
        raise RuntimeError("server never became ready:\n" + "".join(self.log))

    def metrics(self):
        return httpx.get(self.url + "/metrics", timeout=10).text

    def live_sessions(self):
        return httpx.get(self.url + "/readyz", timeout=10).json()["live_sessions"]

    def stop(self, sig=signal.SIGTERM, timeout=120):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


def synth_codes(tmp_path, *args, fixture=FIXTURE):
    """Codes from `lyre synth` on the fixture model."""
    out = tmp_path / "codes.json"
    cmd = [LYRE, "synth", "--model-dir", str(fixture), "--codes-out", str(out), *args]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "LYRE_LOG": "warn"})
    return json.loads(out.read_text())["codes"]


def fnv1a(codes):
    """The `X-Lyre-Codes-Fnv1a` fingerprint of a list of 16-code frames."""
    h = 0xCBF29CE484222325
    for frame in codes:
        for c in frame:
            for b in int(c).to_bytes(2, "little"):
                h ^= b
                h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"
