"""Shared helpers for the reliability suite: the e2e `Server` (real `lyre serve` on port 0 with
the tiny fixture model), the e2e reference clips and throw-away PostgreSQL, and the load
generator in scripts/loadgen.py."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("lyre_e2e_support", ROOT / "tests" / "e2e" / "conftest.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)
sys.path.insert(0, str(ROOT / "scripts"))
import loadgen  # noqa: E402

Server = e2e.Server
TEXT = e2e.TEXT
LYRE = e2e.LYRE
SHARED = e2e.SHARED  # for clips.py, which takes it from `conftest`
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import clips  # noqa: E402
from postgres import Postgres  # noqa: E402,F401


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def metric(text, name, labels=""):
    """The value of one Prometheus sample, e.g. metric(m, "lyre_errors_total", 'code="busy"')."""
    for line in text.splitlines():
        if line.startswith(name) and labels in line and not line.startswith("#"):
            head = line.rsplit(" ", 1)[0]
            if head == name or head.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def no_panics(server):
    log = "".join(server.log)
    assert "panicked" not in log and "RUST_BACKTRACE" not in log, log[-3000:]
