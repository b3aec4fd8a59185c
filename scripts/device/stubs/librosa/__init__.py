"""The few librosa functions the Qwen3-TTS Python packages call, for a GPU host without librosa
(see ../__init__.py). `filters.mel` is librosa's Slaney mel filterbank (its default);
`load` reads with soundfile; `resample` refuses any change of rate (the benchmarks feed 24 kHz)."""
import numpy as np
import soundfile as sf

from . import filters  # noqa: F401

__version__ = "0.0-lyre-stub"


def load(path, sr=None, mono=True, **_):
    audio, rate = sf.read(str(path), dtype="float32", always_2d=False)
    if mono and audio.ndim > 1:
        audio = audio.mean(axis=1)
    if sr is not None and sr != rate:
        raise ValueError(f"librosa stub: cannot resample {rate} Hz to {sr} Hz")
    return audio, rate


def resample(y, orig_sr, target_sr, **_):
    if orig_sr == target_sr:
        return np.asarray(y)
    raise ValueError(f"librosa stub: cannot resample {orig_sr} Hz to {target_sr} Hz")
