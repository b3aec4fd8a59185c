"""Voice cloning from audio, end to end: these run the speaker and speech encoders (upload,
`lyre synth --ref-audio`, WebSocket `ref_audio`). The clip is the 25000-sample 24 kHz waveform
the tiny Base fixture's encoder references were made from."""

import asyncio
import base64
import json
import sqlite3

import httpx
import websockets

from clips import BASE, REF_TEXT, reference_wav, tone, wav16, wav_float
from conftest import TEXT, Server, fnv1a, synth_codes


def base_server(voices_dir, **env):
    return Server(fixture=BASE, env={"LYRE_VOICES_DIR": str(voices_dir), **env})


async def ws_codes(server, start):
    codes = []
    async with websockets.connect(server.ws_url, subprotocols=["lyre"], max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", "codes": True, **start}))
        await ws.send(json.dumps({"type": "end"}))
        async for msg in ws:
            if isinstance(msg, bytes):
                continue
            m = json.loads(msg)
            if m["type"] == "codes":
                codes.append(m["codes"])
            if m["type"] in ("done", "error"):
                return codes, m
    raise AssertionError("socket closed without done")


def upload(server, name, clip, transcript=None):
    data = {"name": name}
    if transcript is not None:
        data["transcript"] = transcript
    return httpx.post(server.url + "/v1/voices", data=data, files={"audio": ("clip.wav", clip)}, timeout=120)


def test_upload_restart_and_synthesise_like_lyre_synth(tmp_path):
    clip_path = tmp_path / "clip.wav"
    clip_path.write_bytes(wav16(reference_wav()))
    common = ["--text", TEXT, "--greedy", "--max-frames", "11"]
    want_icl = synth_codes(tmp_path, *common, "--ref-audio", str(clip_path), "--ref-text", REF_TEXT, fixture=BASE)
    want_icl_stream = synth_codes(tmp_path, *common, "--ref-audio", str(clip_path), "--ref-text", REF_TEXT,
                                  "--language", "english", "--streaming-text", fixture=BASE)
    want_xvec = synth_codes(tmp_path, *common, "--ref-audio", str(clip_path), fixture=BASE)
    voices = tmp_path / "voices"
    s = base_server(voices)
    try:
        r = upload(s, "clip", clip_path.read_bytes(), REF_TEXT)
        assert r.status_code == 201, r.text
        assert r.json()["has_transcript"] is True and r.json()["reference_frames"] == 14
        r = upload(s, "clip-xvec", clip_path.read_bytes())
        assert r.status_code == 201 and r.json()["has_transcript"] is False, r.text
        with sqlite3.connect(voices / "voices.db") as db:  # the default database, in voices.dir
            (row,) = db.execute("SELECT voice FROM voices WHERE tenant = 'default' AND name = 'clip'").fetchone()
        stored = json.loads(row)
        assert set(stored) == {"lyre_voice", "name", "model", "x_vector", "ref_text", "ref_codes", "seconds",
                               "created_unix_s"}, "the audio itself is not kept"
    finally:
        s.stop()
    s = base_server(voices)  # after a restart
    try:
        r = httpx.post(s.url + "/v1/tts", timeout=120, json={
            "text": TEXT, "voice": "clip", "greedy": True, "max_frames": 11, "format": "pcm"})
        assert r.status_code == 200 and r.headers["x-lyre-codes-fnv1a"] == fnv1a(want_icl), r.text
        r = httpx.post(s.url + "/v1/audio/speech", timeout=120, json={
            "model": "x", "input": TEXT, "voice": "clip-xvec", "greedy": True, "max_frames": 11,
            "response_format": "pcm"})
        assert r.status_code == 200, r.text
        codes, done = asyncio.run(ws_codes(s, {"voice": "clip", "language": "english", "greedy": True,
                                               "max_frames": 11, "text": TEXT}))
        assert done["type"] == "done" and codes == want_icl_stream, done
        codes, _ = asyncio.run(ws_codes(s, {"voice": "clip-xvec", "language": "auto", "greedy": True,
                                            "max_frames": 11, "text": TEXT, "text_mode": "whole"}))
        assert codes == want_xvec
    finally:
        s.stop()


def test_ws_inline_reference_clones_once(tmp_path):
    clip = wav_float(reference_wav())
    (tmp_path / "clip.wav").write_bytes(clip)
    want = synth_codes(tmp_path, "--text", TEXT, "--greedy", "--max-frames", "11", "--language", "english",
                       "--streaming-text", "--ref-audio", str(tmp_path / "clip.wav"), "--ref-text", REF_TEXT,
                       fixture=BASE)
    s = base_server(tmp_path / "voices", LYRE_LIMITS_MAX_WS_MESSAGE_BYTES="1000000")
    try:
        start = {"ref_audio": base64.b64encode(clip).decode(), "ref_text": REF_TEXT, "language": "english",
                 "greedy": True, "max_frames": 11, "text": TEXT}
        codes, done = asyncio.run(ws_codes(s, start))
        assert done["type"] == "done" and codes == want, done
        assert httpx.get(s.url + "/v1/voices").json()["voices"] == [], "nothing is stored"
    finally:
        s.stop()


def test_bad_audio_is_refused_clearly(tmp_path):
    s = base_server(tmp_path / "voices")
    try:
        for clip, hint in [
            (b"this is not audio at all" * 100, None),
            (wav16(tone(0.1, 24000)), "0.5"),
            (wav16(tone(600, 8000), rate=8000), "60"),
        ]:
            r = upload(s, "bad", clip, REF_TEXT)
            assert r.status_code == 400, r.text
            err = r.json()["error"]
            assert err["code"] == "invalid_reference_audio" and err["param"] == "audio", err
            assert "not built yet" not in err["message"], err
            if hint:
                assert hint in err["message"], err
        assert httpx.get(s.url + "/v1/voices").json()["voices"] == []
    finally:
        s.stop()
