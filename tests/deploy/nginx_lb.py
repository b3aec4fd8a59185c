"""nginx from deploy/nginx/ on loopback in front of `lyre serve` processes (the e2e `Server`).

The shipped `lyre.conf` is used as it is, except for the replica addresses in `upstream lyre`
and the `listen` port, which a test run has to choose; `variant()` checks that nothing else
changed.
"""

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NGINX_DIR = ROOT / "deploy" / "nginx"

_spec = importlib.util.spec_from_file_location("e2e_support", ROOT / "tests" / "e2e" / "conftest.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)
Server = e2e.Server
TEXT = e2e.TEXT

UPSTREAM_SERVER = re.compile(r"^(\s*)server\s+\S+:\d+(\s.*)?;\s*$")
LISTEN = re.compile(r"^(\s*)listen\s+\d+;\s*$")

# Each request's replica(s) and status, one line per request, parsed by `access_log()`.
LOG_FORMAT = "log_format lb '$request_method $uri $status \"$upstream_addr\" \"$upstream_status\"';"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def variant(backends, port):
    """The shipped lyre.conf with `backends` as the upstream servers and `port` to listen on."""
    lines = (NGINX_DIR / "lyre.conf").read_text().splitlines()
    out, in_upstream, replaced, changed = [], False, False, []
    for i, line in enumerate(lines):
        if re.match(r"^\s*upstream\s+lyre\s*\{", line):
            in_upstream = True
        elif in_upstream and line.strip() == "}":
            in_upstream = False
        m = UPSTREAM_SERVER.match(line)
        if in_upstream and m:
            changed.append(i)
            if not replaced:
                out += [f"{m.group(1)}server {b}{m.group(2) or ''};" for b in backends]
                replaced = True
            continue
        m = LISTEN.match(line)
        if m:
            changed.append(i)
            out.append(f"{m.group(1)}listen 127.0.0.1:{port};")
            continue
        out.append(line)
    kept = [l for i, l in enumerate(lines) if i not in changed]
    assert replaced and len(changed) >= 2, "lyre.conf has no upstream servers or no listen line"
    assert all(l in out for l in kept), "the variant must keep every other line of lyre.conf"
    return "\n".join(out) + "\n"


class Nginx:
    """Debian's nginx in the foreground, on a test-generated nginx.conf that includes the variant."""

    def __init__(self, tmp: Path, backends):
        self.dir = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (tmp / sub).mkdir(parents=True, exist_ok=True)
            (tmp / sub).chmod(0o777)
        (tmp / "lyre.conf").write_text(variant(backends, self.port))
        temp_paths = "\n".join(
            f"    {kind}_temp_path {tmp / sub};"
            for kind, sub in [("client_body", "body"), ("proxy", "proxy"), ("fastcgi", "fastcgi"),
                              ("uwsgi", "uwsgi"), ("scgi", "scgi")]
        )
        (tmp / "nginx.conf").write_text(
            # Workers as root when the test is root: large bodies (voice uploads) are buffered
            # under `tmp`, which is private to root.
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"worker_processes 2;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log warn;\n"
            f"events {{ worker_connections 1024; }}\n"
            f"http {{\n    {LOG_FORMAT}\n    access_log {tmp}/access.log lb;\n{temp_paths}\n"
            f"    include lyre.conf;\n}}\n"
        )
        self.proc = subprocess.Popen(
            [nginx_binary(), "-c", str(tmp / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: " + self.proc.stderr.read())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("nginx did not start listening")

    @property
    def ws_url(self):
        return self.url.replace("http://", "ws://") + "/v1/tts/stream"

    def access_log(self):
        """[(method, uri, status, [replica addresses tried], [their statuses])]"""
        rows = []
        path = self.dir / "access.log"
        for line in path.read_text().splitlines() if path.exists() else []:
            m = re.match(r'^(\S+) (\S+) (\d+) "([^"]*)" "([^"]*)"$', line)
            assert m, line
            split = lambda s: [x.strip() for x in s.split(",") if x.strip() and x.strip() != "-"]
            rows.append((m[1], m[2], int(m[3]), split(m[4]), split(m[5])))
        return rows

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def nginx_binary():
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not path:
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx); the suite installs it")
    return path
