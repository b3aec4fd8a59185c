"""A throw-away PostgreSQL server for the tests: Debian's `postgresql` package (the suites install
it), a cluster initialised in a temporary directory, started on loopback, stopped after. The
server refuses to run as root, so as root its tools run as the package's `postgres` user.

    pg = Postgres(); pg.url  ->  postgres://lyre@127.0.0.1:PORT/lyre
    pg.stop(); pg.start()            # a database outage and its end (same data, same port)
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql); the suites install it")
    return Path(found[-1]).parent


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self):
        self.bin = _bin()
        # Under the system temp dir: a short path (the socket's must fit in 107 bytes) that the
        # `postgres` user can reach (pytest's tmp_path is private to root).
        self.dir = Path(tempfile.mkdtemp(prefix="lyre-pg-"))
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres")
        self.port = _free_port()
        self.data = self.dir / "data"
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "lyre", "--no-sync")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "lyre", "lyre")
        self.url = f"postgres://lyre@127.0.0.1:{self.port}/lyre"

    def _run(self, tool, *args):
        cmd = [str(self.bin / tool), *args]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
        if r.returncode != 0:
            raise RuntimeError(f"{tool} failed: {r.stdout}{r.stderr}")
        return r.stdout

    def start(self):
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-o", opts, "start")

    def stop(self, mode="fast"):
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def psql(self, sql):
        return self._run(*self._psql(sql))

    def psql_background(self, sql):
        """`sql` in a psql of its own (e.g. a transaction that holds a lock); wait() on it."""
        tool, *args = self._psql(sql)
        cmd = [str(self.bin / tool), *args]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")

    def _psql(self, sql):
        return ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "lyre", "-d", "lyre", "-At", "-c", sql]

    def close(self):
        try:
            self.stop("immediate")
        except RuntimeError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
