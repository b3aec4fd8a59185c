"""Output formats, rates and speed against the real server: G.711 telephony audio, PCM at every
rate (frame by frame equals the whole clip), `speed`."""

import json
import struct

import httpx
import numpy as np
import websockets

from conftest import TEXT
from test_ws import run, stream

RATES = [8000, 16000, 22050, 24000, 44100, 48000]
BASE = {"voice": "ryan", "seed": 21, "max_frames": 30, "ignore_eos": True, "text": TEXT}


def ulaw_decode(data):
    """ITU-T G.711 mu-law bytes to 16-bit samples (the standard expansion)."""
    u = ~np.frombuffer(data, dtype=np.uint8)
    sign, exponent, mantissa = u & 0x80, (u >> 4) & 0x07, u & 0x0F
    magnitude = ((mantissa.astype(np.int32) << 3) + 0x84) << exponent
    return np.where(sign != 0, 0x84 - magnitude, magnitude - 0x84).astype(np.float64)


def band_limit(x, rate, cutoff, out_rate=None):
    """`x` (at `rate`) keeping only frequencies below `cutoff`, resampled ideally to `out_rate`."""
    out_rate = out_rate or rate
    n_out = len(x) * out_rate // rate
    spectrum = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    spectrum[freqs >= cutoff] = 0
    keep = n_out // 2 + 1
    spectrum = np.concatenate([spectrum[:keep], np.zeros(max(0, keep - len(spectrum)))])
    return np.fft.irfft(spectrum, n_out) * n_out / len(x)


def frames_of(audio):
    return [len(f) for f in audio]


def started_of(server, start):
    """The `started` message of a session (which is then cancelled by closing the socket)."""
    async def go():
        async with websockets.connect(server.ws_url, subprotocols=["lyre"]) as ws:
            await ws.send(json.dumps({"type": "start", **start}))
            while True:
                m = await ws.recv()
                if isinstance(m, str):
                    return json.loads(m)
    return run(go())


def test_mulaw_frames_are_640_bytes_and_decode_to_the_24khz_audio_at_8khz(server):
    started = started_of(server, {**BASE, "format": "mulaw"})
    assert started["type"] == "started", started
    assert (started["format"], started["sample_rate"], started["samples_per_frame"],
            started["bytes_per_frame"]) == ("mulaw", 8000, 640, 640)
    mulaw, _, done, _ = run(stream(server, {**BASE, "format": "mulaw"}))
    assert done["type"] == "done" and done["frames"] == 30
    # One 640-byte message per 80 ms frame, then the resampler's last 10 ms (80 bytes).
    assert frames_of(mulaw) == [640] * 30 + [80]
    pcm, _, _, _ = run(stream(server, {**BASE, "format": "pcm16"}))
    reference = np.frombuffer(b"".join(pcm), dtype="<i2").astype(np.float64)
    decoded = ulaw_decode(b"".join(mulaw))
    # The stated tolerance: below 3.4 kHz (telephony's band, inside the resampler's passband) the
    # decoded 8 kHz audio, 10 ms (80 samples) late, matches the 24 kHz audio ideally resampled to
    # 8 kHz with a signal-to-noise ratio of at least 25 dB (G.711 alone allows ~38 dB).
    want = band_limit(reference, 24000, 3400, 8000)
    got = band_limit(decoded[80:80 + len(want)], 8000, 3400)
    edge = 160
    err = want[edge:-edge] - got[edge:-edge]
    snr = 10 * np.log10(np.sum(want[edge:-edge] ** 2) / np.sum(err ** 2))
    assert snr >= 25, f"{snr:.1f} dB"


def test_pcm_frames_have_the_rate_s_size_and_equal_the_whole_clip_at_every_rate(server):
    for rate in RATES:
        start = {**BASE, "format": "pcm16", "sample_rate": rate, "max_frames": 10}
        audio, _, done, _ = run(stream(server, start))
        assert done["type"] == "done", (rate, done)
        frame = 2 * rate * 80 // 1000
        tail = [] if rate == 24000 else [2 * (rate // 100)]
        assert frames_of(audio) == [frame] * 10 + tail, rate
        clip = httpx.post(server.url + "/v1/tts", timeout=300, json={
            **start, "format": "pcm", "text_mode": "streaming"})
        assert clip.status_code == 200 and clip.headers["x-lyre-sample-rate"] == str(rate)
        assert clip.content == b"".join(audio), rate
    assert frames_of(run(stream(server, {**BASE, "sample_rate": 16000, "max_frames": 2}))[0])[0] == 2560


def test_the_openai_stream_and_wav_carry_the_same_samples_at_another_rate(server):
    body = {"model": "lyre", "input": TEXT, "voice": "ryan", "seed": 21, "max_frames": 30, "ignore_eos": True,
            "response_format": "pcm", "sample_rate": 16000, "text_mode": "streaming"}
    speech = httpx.post(server.url + "/v1/audio/speech", json=body, timeout=300)
    assert speech.status_code == 200 and speech.headers["x-lyre-sample-rate"] == "16000"
    wav = httpx.post(server.url + "/v1/tts", timeout=300, json={
        **BASE, "format": "wav", "sample_rate": 16000, "text_mode": "streaming"}).content
    assert struct.unpack("<I", wav[24:28])[0] == 16000 and wav[44:] == speech.content


def test_wav_with_g711_encoding_wraps_the_raw_bytes(server):
    raw = httpx.post(server.url + "/v1/tts", json={**BASE, "format": "alaw"}, timeout=300)
    assert raw.status_code == 200 and raw.headers["content-type"] == "audio/x-alaw-basic"
    wav = httpx.post(server.url + "/v1/tts", json={**BASE, "format": "wav", "encoding": "alaw"}, timeout=300)
    assert wav.status_code == 200
    data = wav.content
    tag, channels, rate, _, align, bits = struct.unpack("<HHIIHH", data[20:36])
    assert (tag, channels, rate, align, bits) == (6, 1, 8000, 1, 8)
    assert data[38:42] == b"fact" and struct.unpack("<I", data[46:50])[0] == len(raw.content)
    assert data[50:54] == b"data" and struct.unpack("<I", data[54:58])[0] == len(raw.content)
    assert data[58:] == raw.content and len(raw.content) == 30 * 640 + 80


def test_speed_two_halves_the_duration_and_one_is_byte_identical(server):
    plain, _, _, _ = run(stream(server, BASE))
    one, _, _, _ = run(stream(server, {**BASE, "speed": 1.0}))
    assert b"".join(one) == b"".join(plain)
    fast, _, done, _ = run(stream(server, {**BASE, "speed": 2.0}))
    assert done["type"] == "done" and done["frames"] == 30
    ratio = len(b"".join(fast)) / len(b"".join(plain))
    assert abs(ratio - 0.5) <= 0.02, ratio
    speech = httpx.post(server.url + "/v1/audio/speech", timeout=300, json={
        "model": "lyre", "input": TEXT, "voice": "ryan", "seed": 21, "max_frames": 30, "ignore_eos": True,
        "response_format": "pcm", "speed": 0.5})
    assert speech.status_code == 200
    ratio = len(speech.content) / len(b"".join(plain))
    assert abs(ratio - 2.0) <= 0.04, ratio


def test_bad_output_fields_are_400s_naming_the_field(server):
    for body, field in [({"sample_rate": 11025}, "sample_rate"), ({"format": "mulaw", "sample_rate": 16000}, "sample_rate"),
                        ({"speed": 5}, "speed"), ({"speed": "fast"}, "speed"), ({"format": "mp3", "encoding": "mulaw"}, "encoding")]:
        r = httpx.post(server.url + "/v1/tts", json={**BASE, **body}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == field, (body, r.text)
    started = started_of(server, {**BASE, "sample_rate": 12345})
    assert started["type"] == "error" and started["field"] == "sample_rate", started
