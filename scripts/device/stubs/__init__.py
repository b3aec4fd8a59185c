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


def patch_rope_theta():
    """qwen-tts-hf 0.1.1.post1 registers a default RoPE initialiser that reads `config.rope_theta`;
    newer transformers 5.x configs (Mimi's among them) keep it in `config.rope_parameters`. Hand
    the initialiser a view of the config that has both. Nothing to do under the official qwen-tts
    (transformers 4.57.3), which has no such module."""
    try:
        import qwen_tts._transformers_compat as compat
    except ImportError:
        return []
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    original = compat._default_rope_parameters

    class WithTheta:
        def __init__(self, config, theta):
            self._config, self.rope_theta = config, theta

        def __getattr__(self, name):
            return getattr(self._config, name)

    def rope(config, *args, **kwargs):
        try:
            config.rope_theta
        except AttributeError:
            theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
            config = WithTheta(config, theta)
        return original(config, *args, **kwargs)

    compat._default_rope_parameters = rope
    if ROPE_INIT_FUNCTIONS.get("default") is original:
        ROPE_INIT_FUNCTIONS["default"] = rope
    return ["qwen_tts rope_theta"]
