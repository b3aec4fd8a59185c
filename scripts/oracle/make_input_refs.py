#!/usr/bin/env python3
"""Official references for real inputs: texts in many scripts, reference clips of 3-60 s at
8-48 kHz in WAV, FLAC, MP3 and Ogg, through the official `qwen-tts` 0.1.1 user paths
(transformers 4.57.3) on the tiny fixture checkpoints.

Run with the oracle environment (`../shared/reference/oracle/setup_env.sh` builds it) and
espeak-ng installed (`apt-get install espeak-ng`):

    . ORACLE/venv/bin/activate
    python scripts/oracle/make_input_refs.py [--fixtures ../shared/fixtures] [--out DIR]

Writes to `crates/lyre-engine/tests/data/official/` by default:

  clips/*.flac, *.mp3, *.ogg  the input clips (speech from espeak-ng). WAV inputs are not stored:
                              the tests write them from the FLAC's 16-bit samples, as this script
                              did (the official loader reads the same samples from both).
  refs.safetensors            official tensors: per clip `<clip>.codes` (T,16) i32 reference codes
                              and `<clip>.xvec` (H,) f32 x-vector; `<file>.decoded@<s>` f32 samples
                              the official loader gets for lossy files (0.25 s from <s>); per text case
                              `<case>.codes` (F,16) i32 greedy codes.
  manifest.json               texts and their official ids, the tokenizer rule's decisions, clip
                              metadata (rate, channels, lengths, checksums of the samples the
                              official loader decodes and resamples), greedy case metadata.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import librosa  # noqa: E402
import soxr  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from qwen_tts import Qwen3TTSModel  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GREEDY = dict(do_sample=False, subtalker_dosample=False)
MAX_NEW_TOKENS = 10
LOSSY_WINDOWS = [0.0, 2.5]  # seconds; each window 0.25 s

# Texts the plain Qwen2 split rule tokenizes differently from the official case-aware one
# (camel case, acronyms, marks inside words, `/` after punctuation), and others that agree.
TEXTS = {
    "camel_brands": "iPhone and McDonald's use JavaScript on an HTTPServer.",
    "acronyms": "NASA, the FBI and OpenAI's GPT-4o met IBM's CEO at HQ; XMLHttpRequest2 failed.",
    "title_case_letters": "\u01c5emal and \u01c8ubica met \u02b0aspirated DŽungla; ŁódźCity, ÅngströmUnit.",
    "thai": "สวัสดีครับ ผมชื่อสมชาย ยินดีที่ได้รู้จักนะครับ วันนี้อากาศดีมาก",
    "devanagari": "नमस्ते, आप कैसे हैं? मैं ठीक हूँ। क्षत्रिय ज्ञान श्रृंखला।",
    "tamil": "வணக்கம், நீங்கள் எப்படி இருக்கிறீர்கள்? தமிழ் மொழி",
    "bengali": "আমি বাংলায় গান গাই। কেমন আছেন?",
    "arabic_harakat": "اَلسَّلَامُ عَلَيْكُمْ وَرَحْمَةُ اللهِ",
    "hebrew_niqqud": "שָׁלוֹם עוֹלָם, מַה שְּׁלוֹמְךָ?",
    "myanmar_khmer": "မင်္ဂလာပါ ខ្ញុំស្រឡាញ់ភាសាខ្មែរ",
    "combining_marks": "q\u0323\u0307 x\u0301y\u0300 ZA\u0308\u0301hl e\u0327\u0306 \u0301alone",
    "slashes_urls": "See https://example.com/docs/API/v2/getUserID?x=1, a/b, (c)/d and C:/Users/McKay/.",
    "vietnamese": "Tiếng Việt: Hà Nội, Đà Nẵng và ThànhPhố Hồ Chí Minh.",
    "plain_english": "Hello world, this is a test.",
}
# Texts also checked as instruct (VoiceDesign-style user turn) and ICL reference transcript.
TEMPLATE_TEXTS = ["camel_brands", "thai", "devanagari"]
# Greedy runs: (case, text key, speaker, language, non_streaming_mode).
GREEDY_CASES = [
    ("camel_brands_stream", "camel_brands", "Vivian", "English", False),
    ("camel_brands_nonstream", "camel_brands", "Vivian", "English", True),
    ("acronyms_stream", "acronyms", "Ryan", "Auto", False),
    ("thai_stream", "thai", "Vivian", "Auto", False),
    ("thai_nonstream", "thai", "Vivian", "Auto", True),
    ("devanagari_stream", "devanagari", "Ryan", "Auto", False),
    ("devanagari_nonstream", "devanagari", "Ryan", "Auto", True),
    ("combining_marks_stream", "combining_marks", "Vivian", "Auto", False),
    ("slashes_urls_nonstream", "slashes_urls", "Vivian", "English", True),
]

SPEECH = [
    ("en-us", "The quick brown fox jumps over the lazy dog. Speech synthesis turns written text into "
              "sound, one phoneme at a time."),
    ("en-gb+f3", "A reference clip carries the timbre of a voice. Longer clips carry more of it, "
                 "but they cost more to encode."),
    ("en-us+m3", "Numbers like twenty-four thousand, forty-four point one, and forty-eight kilohertz "
                 "are common sample rates."),
    ("en-gb-x-rp", "She sells sea shells by the sea shore, and the shells she sells are surely sea "
                   "shells."),
    ("en-us+f2", "Every voice agent must handle interruptions, flushes, and very long books read "
                 "aloud without losing a word."),
]


def espeak(voice, text, speed=150):
    """espeak-ng speech as float32 at 22050 Hz."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", path, text], check=True)
        audio, sr = sf.read(path, dtype="float32")
    assert sr == 22050, sr
    return audio


def speech_22k(seconds):
    """At least `seconds` of espeak-ng speech at 22050 Hz, voices and texts in turn."""
    parts, total, i = [], 0, 0
    while total < seconds * 22050:
        voice, text = SPEECH[i % len(SPEECH)]
        s = espeak(voice, text, speed=140 + 10 * (i % 4))
        parts.append(s)
        parts.append(np.zeros(int(0.15 * 22050), np.float32))
        total += len(s) + int(0.15 * 22050)
        i += 1
    return np.concatenate(parts)


def to_int16(x):
    peak = float(np.abs(x).max())
    return np.round(x / peak * 0.7 * 32767).astype(np.int16)


def resample_int16(x22k, rate, seconds):
    """Speech at `rate`, `seconds` long, as int16."""
    y = x22k if rate == 22050 else soxr.resample(x22k, 22050, rate, "VHQ")
    n = int(round(seconds * rate))
    assert len(y) >= n, (len(y), n)
    return to_int16(y[:n])


def checksum(x):
    """Sum of each float32's bits times an odd weight (2i + 1)·K, mod 2^64, in hex: any one
    differing sample changes it. The tests compute the same."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    weights = (2 * np.arange(len(bits), dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    return f"{int(np.sum(bits * weights, dtype=np.uint64)):016x}"


# ============================================================================ tokenizer
def split_pattern(tok):
    pre = json.loads(tok.backend_tokenizer.to_str())["pre_tokenizer"]
    return pre["pretokenizers"][0]["pattern"]["Regex"]


def tokenizer_rule_cases(fixture_dir):
    """The split pattern the official loader (AutoTokenizer with `fix_mistral_regex=True`, as the
    wrapper's AutoProcessor passes it) ends up with, for config.json variants."""
    variants = [
        ("as_shipped", "keep"),
        ("no_config_json", None),
        ("version_4_57_2", {"transformers_version": "4.57.2", "model_type": "qwen3_tts"}),
        ("version_4_57_1_mistral", {"transformers_version": "4.57.1", "model_type": "mistral"}),
        ("version_4_57_1_no_model_type", {"transformers_version": "4.57.1"}),
        ("version_4_57_3", {"transformers_version": "4.57.3", "model_type": "qwen3_tts"}),
        ("version_4_58_0_dev0", {"transformers_version": "4.58.0.dev0", "model_type": "qwen3_tts"}),
        ("version_5_0_0rc1", {"transformers_version": "5.0.0rc1", "model_type": "qwen3_tts"}),
        ("version_5_0_0", {"transformers_version": "5.0.0", "model_type": "qwen3_tts"}),
        ("version_4_57_2_post1", {"transformers_version": "4.57.2.post1", "model_type": "qwen3_tts"}),
        ("no_version", {"model_type": "qwen3_tts"}),
    ]
    out = []
    for name, config in variants:
        with tempfile.TemporaryDirectory() as d:
            for f in ["vocab.json", "merges.txt", "tokenizer_config.json", "tokenizer.json"]:
                if os.path.exists(os.path.join(fixture_dir, f)):
                    shutil.copy(os.path.join(fixture_dir, f), d)
            if config == "keep":
                shutil.copy(os.path.join(fixture_dir, "config.json"), d)
                with open(os.path.join(fixture_dir, "config.json")) as f:
                    full = json.load(f)
                config = {k: full[k] for k in ("transformers_version", "model_type") if k in full}
            elif config is not None:
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(config, f)
            tok = AutoTokenizer.from_pretrained(d, fix_mistral_regex=True)
            out.append({"name": name, "config": config, "pattern": split_pattern(tok)})
    return out


def text_refs(wrapper, qwen2_tok):
    tok = wrapper.processor.tokenizer
    texts = {}
    for key, text in TEXTS.items():
        ids = wrapper._tokenize_texts([wrapper._build_assistant_text(text)])[0][0].tolist()
        entry = {"text": text, "assistant_ids": ids,
                 "assistant_ids_qwen2": qwen2_tok(wrapper._build_assistant_text(text))["input_ids"],
                 "pre_tokens": [p for p, _ in tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str(
                     tok.backend_tokenizer.normalizer.normalize_str(text))]}
        if key in TEMPLATE_TEXTS:
            entry["instruct_ids"] = wrapper._tokenize_texts([wrapper._build_instruct_text(text)])[0][0].tolist()
            entry["ref_text_ids"] = wrapper._tokenize_texts([wrapper._build_ref_text(text)])[0][0].tolist()
        texts[key] = entry
    return texts


# ============================================================================ greedy runs
class Capture:
    """Raw talker logits (last position) and code-predictor logits of every forward."""

    def __init__(self, model):
        self.talker, self.cp = [], []
        model.talker.register_forward_hook(lambda m, a, o: self.talker.append(o.logits[0, -1].clone()))
        model.talker.code_predictor.register_forward_hook(lambda m, a, o: self.cp.append(o.logits[0, -1].clone()))
        orig = model.generate

        def generate(*a, **kw):
            self.kwargs = kw
            out = orig(*a, **kw)
            self.codes = out[0][0]
            return out

        model.generate = generate

    def reset(self):
        self.talker, self.cp, self.kwargs, self.codes = [], [], None, None


def top2_gap(scores):
    s = scores.float().flatten()
    s = s[torch.isfinite(s)]
    top = torch.topk(s, 2).values
    return float(top[0] - top[1])


def processed_talker_gaps(cap, cfg_t, rep):
    """Top-2 margins after HF's processors (repetition penalty, min_new_tokens 2, suppression)."""
    V, eos = cfg_t.vocab_size, cfg_t.codec_eos_token_id
    prev, gaps, toks = [], [], []
    for k, raw in enumerate(cap.talker):
        s = raw.clone().float()
        if rep != 1.0 and prev:
            idx = torch.tensor(sorted(set(prev)))
            sc = s[idx]
            s[idx] = torch.where(sc < 0, sc * rep, sc / rep)
        if k < 2:
            s[eos] = -float("inf")
        s[[i for i in range(V - 1024, V) if i != eos]] = -float("inf")
        t = int(s.argmax())
        gaps.append(top2_gap(s))
        toks.append(t)
        prev.append(t)
    return gaps, toks


def record_greedy(cap, wrapper, call):
    cap.reset()
    call()
    cfg_t = wrapper.model.config.talker_config
    rep = float(cap.kwargs["repetition_penalty"])
    gaps, toks = processed_talker_gaps(cap, cfg_t, rep)
    codes = cap.codes.numpy().astype(np.int32)
    meta = {"frames": int(codes.shape[0]), "hit_eos": bool(toks and toks[-1] == cfg_t.codec_eos_token_id),
            "talker_top2_gaps": gaps, "cp_top2_gaps": [top2_gap(x) for x in cap.cp],
            "repetition_penalty": rep, "input_ids": cap.kwargs["input_ids"][0][0].tolist()}
    if cap.kwargs.get("ref_ids") is not None and cap.kwargs["ref_ids"][0] is not None:
        meta["ref_ids"] = cap.kwargs["ref_ids"][0][0].tolist()
    return codes, meta


# ============================================================================ clips
BYTES_VS_PATH = {}


def official_decode(path):
    """What the wrapper gets for a file path (librosa.load, mono), compared with what it gets for
    the same bytes sent as base64 (soundfile, mean of the channels): equal for PCM; for lossy
    files libsndfile's decodes of the two differ in the last bit (recorded)."""
    a, sr = librosa.load(path, sr=None, mono=True)
    with open(path, "rb") as f:
        b, sr2 = sf.read(f, dtype="float32", always_2d=False)
    if b.ndim > 1:
        b = np.mean(b, axis=-1)
    assert sr == sr2 and len(a) == len(b), path
    diff = float(np.abs(a - b.astype(np.float32)).max())
    assert diff == 0 or not path.endswith((".wav", ".flac")), path
    BYTES_VS_PATH[os.path.basename(path)] = diff
    return a.astype(np.float32), int(sr)


def official_clip(wrapper, audio, ref_text="Okay. Yeah."):
    item = wrapper.create_voice_clone_prompt(ref_audio=audio, ref_text=ref_text, x_vector_only_mode=False)[0]
    return item.ref_code.numpy().astype(np.int32), item.ref_spk_embedding.float().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(ROOT), "shared", "fixtures"))
    ap.add_argument("--out", default=os.path.join(ROOT, "crates", "lyre-engine", "tests", "data", "official"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.manual_seed(0)
    clips_dir = os.path.join(args.out, "clips")
    os.makedirs(clips_dir, exist_ok=True)
    tensors, manifest = {}, {"versions": {"transformers": transformers.__version__, "qwen_tts": "0.1.1",
                                          "librosa": librosa.__version__, "soxr": soxr.__version__,
                                          "libsoxr": soxr.__libsoxr_version__,
                                          "soundfile": sf.__version__, "libsndfile": sf.__libsndfile_version__,
                                          "torch": torch.__version__}}

    # ---- texts (CustomVoice fixture: speakers; the tokenizer files are the same in both)
    cv_dir = os.path.join(args.fixtures, "tiny-custom-voice")
    cv = Qwen3TTSModel.from_pretrained(cv_dir, dtype=torch.float32, attn_implementation="eager")
    manifest["official_pattern"] = split_pattern(cv.processor.tokenizer)
    manifest["tokenizer_rule"] = tokenizer_rule_cases(cv_dir)
    with tempfile.TemporaryDirectory() as d:
        for f in ["vocab.json", "merges.txt", "tokenizer_config.json", "tokenizer.json"]:
            if os.path.exists(os.path.join(cv_dir, f)):
                shutil.copy(os.path.join(cv_dir, f), d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"transformers_version": "4.57.1", "model_type": "qwen3_tts"}, f)
        qwen2_tok = AutoTokenizer.from_pretrained(d, fix_mistral_regex=True)
    manifest["texts"] = text_refs(cv, qwen2_tok)
    cap = Capture(cv.model)
    manifest["greedy"] = {}
    for case, key, speaker, language, non_streaming in GREEDY_CASES:
        codes, meta = record_greedy(cap, cv, lambda: cv.generate_custom_voice(
            text=TEXTS[key], speaker=speaker, language=language, non_streaming_mode=non_streaming,
            max_new_tokens=MAX_NEW_TOKENS, **GREEDY))
        tensors[f"{case}.codes"] = codes
        meta.update({"text": key, "speaker": speaker.lower(), "language": language.lower(),
                     "non_streaming_mode": non_streaming, "max_new_tokens": MAX_NEW_TOKENS})
        manifest["greedy"][case] = meta
        print(case, meta["frames"], "frames, min gaps", min(meta["talker_top2_gaps"]), min(meta["cp_top2_gaps"]))
    del cv

    # ---- clips (Base fixture)
    base = Qwen3TTSModel.from_pretrained(os.path.join(args.fixtures, "tiny-base"), dtype=torch.float32,
                                         attn_implementation="eager")
    speech = speech_22k(62)
    manifest["clips"] = {}

    def add_clip(name, path, fmt, rate, channels, decoded, seconds):
        codes, xvec = official_clip(base, (decoded, rate))
        from_file = official_clip(base, path)
        assert np.array_equal(codes, from_file[0]) and np.array_equal(xvec, from_file[1]), name
        resampled = decoded if rate == 24000 else librosa.resample(decoded, orig_sr=rate, target_sr=24000)
        tensors[f"{name}.codes"] = codes
        tensors[f"{name}.xvec"] = xvec
        manifest["clips"][name] = {
            "file": os.path.relpath(path, args.out) if path.startswith(args.out) else None,
            "format": fmt, "rate": rate, "channels": channels, "seconds": seconds,
            "decoded_len": len(decoded), "decoded_checksum": checksum(decoded),
            "resampled_len": len(resampled), "resampled_checksum": checksum(resampled),
            "frames": int(codes.shape[0])}
        print(name, fmt, rate, channels, len(decoded), codes.shape)

    def store_windows(name, decoded, rate):
        """Two 0.25 s windows of a lossy decode (the start, where delay trimming shows, and
        from 2.5 s): enough to measure the decoders' difference without storing whole clips."""
        for start in LOSSY_WINDOWS:
            a = int(start * rate)
            tensors[f"{name}.decoded@{start}"] = decoded[a:a + rate // 4]

    # 24 kHz clips: prefixes of one 60 s master.
    master = resample_int16(speech, 24000, 60.0)
    master_path = os.path.join(clips_dir, "speech-24000-mono-60s.flac")
    sf.write(master_path, master, 24000, format="FLAC", subtype="PCM_16")
    full, _ = official_decode(master_path)
    assert np.array_equal(full, master.astype(np.float32) / 32768)
    for seconds in [3, 15, 45, 60]:
        n = seconds * 24000
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "clip.flac")
            sf.write(p, master[:n], 24000, format="FLAC", subtype="PCM_16")
            add_clip(f"s24000_{seconds}s", p, "flac-prefix", 24000, 1, full[:n], seconds)

    # 5 s clips at other rates, mono and stereo, in FLAC (stored), WAV (written by the tests from
    # the FLAC's samples) and MP3 (stored).
    for rate in [8000, 16000, 22050, 44100, 48000]:
        mono = resample_int16(speech[5 * 22050:], rate, 5.0)
        # The right channel: other speech, quieter, so the mix differs from either side.
        right = resample_int16(speech[23 * 22050:], rate, 5.0)
        right = np.round(right.astype(np.float32) * 0.6).astype(np.int16)
        for channels, data in [(1, mono), (2, np.stack([mono, right], axis=1))]:
            stem = f"speech-{rate}-{'mono' if channels == 1 else 'stereo'}-5s"
            flac = os.path.join(clips_dir, stem + ".flac")
            sf.write(flac, data, rate, format="FLAC", subtype="PCM_16")
            decoded, sr = official_decode(flac)
            assert sr == rate
            with tempfile.TemporaryDirectory() as d:
                wav = os.path.join(d, stem + ".wav")
                sf.write(wav, data, rate, format="WAV", subtype="PCM_16")
                from_wav, _ = official_decode(wav)
                assert np.array_equal(decoded, from_wav), stem
            add_clip(f"{stem}.flac", flac, "flac", rate, channels, decoded, 5)
            manifest["clips"][f"{stem}.flac"]["wav_same_samples"] = True
            mp3 = os.path.join(clips_dir, stem + ".mp3")
            sf.write(mp3, data.astype(np.float32) / 32768, rate, format="MP3", subtype="MPEG_LAYER_III")
            decoded, sr = official_decode(mp3)
            assert sr == rate
            add_clip(f"{stem}.mp3", mp3, "mp3", rate, channels, decoded, 5)
            store_windows(f"{stem}.mp3", decoded, rate)

    # Ogg Vorbis, 3 s mono at 16 kHz.
    ogg_data = resample_int16(speech[11 * 22050:], 16000, 3.0)
    ogg = os.path.join(clips_dir, "speech-16000-mono-3s.ogg")
    sf.write(ogg, ogg_data.astype(np.float32) / 32768, 16000, format="OGG", subtype="VORBIS")
    decoded, _ = official_decode(ogg)
    add_clip("speech-16000-mono-3s.ogg", ogg, "ogg", 16000, 1, decoded, 3)
    store_windows("speech-16000-mono-3s.ogg", decoded, 16000)

    # ---- every PCM sample format, 0.25 s at 16 kHz: the samples the official loader decodes.
    fmt_data = resample_int16(speech[2 * 22050:], 16000, 0.25)
    three = np.stack([fmt_data, np.round(fmt_data * 0.5).astype(np.int16), -fmt_data], axis=1)
    manifest["formats"] = {}
    for container, subtype, data in [("WAV", "PCM_U8", fmt_data), ("WAV", "PCM_16", fmt_data),
                                     ("WAV", "PCM_24", fmt_data), ("WAV", "PCM_32", fmt_data),
                                     ("WAV", "FLOAT", fmt_data), ("WAV", "DOUBLE", fmt_data),
                                     ("WAV", "PCM_16", three), ("FLAC", "PCM_S8", fmt_data),
                                     ("FLAC", "PCM_24", fmt_data), ("FLAC", "PCM_16", three)]:
            channels = 1 if data.ndim == 1 else data.shape[1]
            name = f"format-{subtype.lower()}-{channels}ch.{container.lower()}"
            path = os.path.join(clips_dir, name)
            # A dithered quiet-and-loud mix so every bit of the wider formats is used.
            ripple = 1e-4 * np.sin(np.arange(len(data)) * 0.37)
            x = data.astype(np.float64) / 32768 * 1.3 + (ripple[:, None] if data.ndim > 1 else ripple)
            x = np.clip(x, -0.999, 0.999)
            sf.write(path, x, 16000, format=container, subtype=subtype)
            decoded, sr = official_decode(path)
            manifest["formats"][name] = {"rate": sr, "channels": channels, "decoded_len": len(decoded),
                                         "decoded_checksum": checksum(decoded)}

    # ---- ICL synthesis with a 45 s, 48 kHz reference (FLAC).
    icl_data = resample_int16(speech, 48000, 45.0)
    icl_path = os.path.join(clips_dir, "speech-48000-mono-45s.flac")
    sf.write(icl_path, icl_data, 48000, format="FLAC", subtype="PCM_16")
    decoded, _ = official_decode(icl_path)
    ref_text = " ".join(t for _, t in SPEECH)
    add_clip("speech-48000-mono-45s.flac", icl_path, "flac", 48000, 1, decoded, 45)
    bcap = Capture(base.model)
    text = TEXTS["camel_brands"]
    codes, meta = record_greedy(bcap, base, lambda: base.generate_voice_clone(
        text=text, language="English", ref_audio=icl_path, ref_text=ref_text, x_vector_only_mode=False,
        non_streaming_mode=False, max_new_tokens=MAX_NEW_TOKENS, **GREEDY))
    tensors["icl_48k_45s.codes"] = codes
    meta.update({"text": "camel_brands", "ref_text": ref_text, "clip": "speech-48000-mono-45s.flac",
                 "language": "english", "non_streaming_mode": False, "max_new_tokens": MAX_NEW_TOKENS})
    manifest["greedy_icl"] = {"icl_48k_45s": meta}
    print("icl_48k_45s", meta["frames"], "frames, min gaps", min(meta["talker_top2_gaps"]),
          min(meta["cp_top2_gaps"]))

    manifest["lossy_windows"] = LOSSY_WINDOWS
    manifest["lossy_bytes_vs_path_max_abs"] = {k: v for k, v in BYTES_VS_PATH.items() if v}
    # Row-major copies: torch hands some codes over as transposed views.
    tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    save_file(tensors, os.path.join(args.out, "refs.safetensors"), metadata={"made_by": "make_input_refs.py"})
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(args.out) for f in fs)
    print(f"wrote {args.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    sys.exit(main())
