"""Stand-ins for the audio packages the Qwen3-TTS Python packages import at load time but the
GPU hosts lack (librosa's numba/llvmlite/scikit-learn wheels are too large to carry; sox is only
used by the 25 Hz tokenizer). `install()` puts a stand-in in place only where the real package
does not import."""
import importlib
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def install():
    stubbed = []
    try:
        importlib.import_module("librosa")
    except ImportError:
        sys.path.insert(0, HERE)
        importlib.invalidate_caches()
        importlib.import_module("librosa")
        stubbed.append("librosa")
    for name in ("sox",):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
            stubbed.append(name)
    return stubbed
