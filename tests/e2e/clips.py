"""Reference clips and stored-voice files for the voice-cloning tests, made from the tiny Base
fixture's reference tensors (no numpy: safetensors and WAV are simple enough to write here)."""

import json
import math
import struct
import wave
from array import array

from conftest import SHARED

BASE = SHARED / "fixtures" / "tiny-base"
REFS = BASE / "refs"
REF_TEXT = "Okay. Yeah."


def tensor(group, name):
    """One tensor of refs/GROUP.safetensors as a flat list (f32 or i64)."""
    raw = (REFS / f"{group}.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    t = header[name]
    lo, hi = t["data_offsets"]
    data = raw[8 + n + lo:8 + n + hi]
    code = {"F32": "f", "I64": "q"}[t["dtype"]]
    return list(array(code, data)), t["shape"]


def meta(group):
    return json.loads((REFS / "manifest.json").read_text())[group]["meta"]


def ref_codes(case):
    v, _ = tensor(case, "codes")
    return [v[i:i + 16] for i in range(0, len(v), 16)]


def reference_wav():
    """The 25000-sample 24 kHz clip the fixture's encoder references were made from."""
    v, shape = tensor("speaker_encoder", "wav")
    assert shape == [25000]
    return v


def wav16(samples, rate=24000):
    """A 16-bit PCM mono WAV file."""
    import io
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(array("h", (max(-32768, min(32767, round(s * 32767))) for s in samples)).tobytes())
    return buf.getvalue()


def wav_float(samples, rate=24000):
    """A 32-bit float mono WAV file (format tag 3)."""
    data = array("f", samples).tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def tone(seconds, rate):
    n = int(seconds * rate)
    return [0.3 * math.sin(2 * math.pi * 220 * i / rate) for i in range(n)]


def model_stamp():
    cfg = json.loads((BASE / "config.json").read_text())
    return {"type": cfg["tts_model_type"], "size": cfg["tts_model_size"],
            "hidden_size": cfg["talker_config"]["hidden_size"]}


def write_voice(voices_dir, name, case, icl=True):
    """A stored voice made from a reference case's stored encoder outputs (what POST /v1/voices
    would compute from the clip), written where `lyre serve` reads `voices.dir`."""
    x, _ = tensor(case, "ref_spk_embedding")
    voice = {"lyre_voice": 1, "name": name, "model": model_stamp(), "x_vector": x,
             "seconds": 25000 / 24000, "created_unix_s": 0}
    if icl:
        c, _ = tensor(case, "ref_code")
        voice["ref_text"] = meta(case)["ref_text"]
        voice["ref_codes"] = [c[i:i + 16] for i in range(0, len(c), 16)]
    voices_dir.mkdir(parents=True, exist_ok=True)
    (voices_dir / f"{name}.json").write_text(json.dumps(voice))
    return voice
