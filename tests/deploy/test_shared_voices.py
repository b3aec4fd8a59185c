"""Two Base-model replicas behind nginx (deploy/nginx/lyre.conf) on one PostgreSQL: a voice
uploaded through the balancer is usable whichever replica serves a request, listed by both, and
gone from both within a second of a delete through either."""

import importlib.util
import time

import httpx
import pytest

from nginx_lb import ROOT, Nginx, Server

_spec = importlib.util.spec_from_file_location("lyre_pg", ROOT / "tests" / "e2e" / "postgres.py")
_pg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_pg)
# clips.py imports the e2e conftest by name.
import sys  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from clips import BASE, REF_TEXT, reference_wav, wav16  # noqa: E402

TEXT = "Hello world, this is a test."


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    pg = _pg.Postgres()
    env = {"LYRE_VOICES_DATABASE": pg.url}
    a = b = nginx = None
    try:
        a = Server(fixture=BASE, env={**env, "LYRE_VOICES_DIR": str(tmp_path_factory.mktemp("va"))})
        b = Server(fixture=BASE, env={**env, "LYRE_VOICES_DIR": str(tmp_path_factory.mktemp("vb"))})
        nginx = Nginx(tmp_path_factory.mktemp("nginx"), [hostport(a), hostport(b)])
        yield nginx, a, b, pg
    finally:
        for s in (nginx, a, b):
            if s is not None:
                s.stop()
        pg.close()


def hostport(server):
    return server.url.removeprefix("http://")


def names(url):
    r = httpx.get(url + "/v1/voices", timeout=10)
    assert r.status_code == 200, r.text
    return {v["name"] for v in r.json()["voices"]}


def tts(url, voice):
    return httpx.post(url + "/v1/tts", timeout=120, json={
        "text": TEXT, "voice": voice, "greedy": True, "max_frames": 2, "format": "pcm"})


def gone_within(replicas, voice, seconds):
    """Seconds until `voice` is unknown to every replica (listing and synthesis)."""
    start = time.monotonic()
    while True:
        gone = all(voice not in names(s.url) and tts(s.url, voice).status_code == 400 for s in replicas)
        elapsed = time.monotonic() - start
        if gone or elapsed > seconds:
            return elapsed if gone else None
        time.sleep(0.05)


def test_a_voice_uploaded_through_the_balancer_is_every_replicas(shared):
    nginx, a, b, pg = shared
    clip = wav16(reference_wav())
    r = httpx.post(nginx.url + "/v1/voices", data={"name": "shared", "transcript": REF_TEXT},
                   files={"audio": ("clip.wav", clip)}, timeout=300)
    assert r.status_code == 201, r.text
    mark = len(nginx.access_log())
    for i in range(20):
        r = tts(nginx.url, "shared")
        assert r.status_code == 200, f"request {i}: {r.text}"
    served = {row[3][-1] for row in nginx.access_log()[mark:] if row[1] == "/v1/tts"}
    assert served == {hostport(a), hostport(b)}, f"both replicas served the voice: {served}"
    assert "shared" in names(a.url) and "shared" in names(b.url)
    assert pg.psql("SELECT tenant || '/' || name FROM voices").split() == ["default/shared"]

    # Deleted through one replica: gone from both at once (no cache to expire).
    for deleter in (a, b):
        voice = f"gone-{deleter.url[-5:]}"
        assert httpx.post(deleter.url + "/v1/voices", data={"name": voice},
                          files={"audio": ("clip.wav", clip)}, timeout=300).status_code == 201
        other = b if deleter is a else a
        assert tts(other.url, voice).status_code == 200, "uploaded on one, usable on the other"
        assert httpx.delete(deleter.url + f"/v1/voices/{voice}", timeout=10).status_code == 204
        took = gone_within((a, b), voice, 1.0)
        assert took is not None, f"{voice} still known a second after its delete"
        print(f"{voice}: checked gone from both replicas {took * 1000:.0f} ms after the delete")
    assert tts(nginx.url, "shared").status_code == 200, "the other voice stays"
