"""The official `openai` Python client against /v1/audio/speech."""

import base64
import io
import json
import wave

import httpx
import openai
import pytest

from conftest import TEXT, synth_codes

GREEDY = {"greedy": True, "language": "english", "max_frames": 30}


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="not-needed")


def speech(server, fmt, **extra):
    return client(server).audio.speech.create(
        model="lyre", voice="vivian", input=TEXT, response_format=fmt, extra_body={**GREEDY, **extra}
    )


def test_wav_is_24khz_mono_and_matches_synth(server, tmp_path):
    audio = speech(server, "wav").read()
    with wave.open(io.BytesIO(audio)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
        pcm = w.readframes(10**9)
    # The greedy codes behind the clip are lyre synth's: same frame count, same fingerprint
    # (checked through /v1/tts, which reports it), and the same samples as /v1/tts.
    codes = synth_codes(tmp_path, "--text", TEXT, "--voice", "vivian", "--language", "english",
                        "--greedy", "--max-frames", "30")
    assert len(pcm) == len(codes) * 1920 * 2 and len(codes) > 0
    r = httpx.post(server.url + "/v1/tts", json={"text": TEXT, "voice": "vivian", "format": "pcm", **GREEDY},
                   timeout=120)
    assert r.status_code == 200
    from conftest import fnv1a
    assert r.headers["x-lyre-codes-fnv1a"] == fnv1a(codes)
    assert r.content == pcm


def test_opus_and_pcm(server):
    opus = speech(server, "opus").read()
    assert opus[:4] == b"OggS" and b"OpusHead" in opus[:100]
    pcm = speech(server, "pcm").read()
    assert len(pcm) % 3840 == 0 and len(pcm) > 0


def test_streaming_response_equals_the_whole_response(server):
    whole = speech(server, "pcm").read()
    with client(server).audio.speech.with_streaming_response.create(
        model="lyre", voice="vivian", input=TEXT, response_format="pcm", extra_body=GREEDY
    ) as response:
        assert response.headers["content-type"] == "audio/pcm"
        chunks = list(response.iter_bytes())
    assert b"".join(chunks) == whole


def test_sse_stream(server):
    body = {"model": "lyre", "voice": "vivian", "input": TEXT, "response_format": "pcm", "stream_format": "sse",
            **GREEDY}
    audio, done = b"", None
    with httpx.stream("POST", server.url + "/v1/audio/speech", json=body, timeout=120) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "speech.audio.delta":
                audio += base64.b64decode(event["audio"])
            else:
                done = event
    assert done["type"] == "speech.audio.done" and done["usage"]["input_tokens"] > 0
    assert audio == speech(server, "pcm").read()


@pytest.mark.parametrize("field,value", [("response_format", "aac"), ("speed", 5.0), ("speed", 0.1)])
def test_unsupported_values_name_the_field(server, field, value):
    kwargs = {"response_format": "mp3", "speed": 1.0, field: value}
    with pytest.raises(openai.BadRequestError) as e:
        client(server).audio.speech.create(model="lyre", voice="vivian", input=TEXT, **kwargs)
    assert e.value.body["param"] == field


def test_openai_voice_names_speak_with_their_presets(server):
    """`voices.aliases` maps OpenAI's names onto the CustomVoice presets, so a client written for
    OpenAI works unchanged; `GET /v1/audio/voices` answers like `/v1/voices`."""
    def pcm(voice):
        return client(server).audio.speech.create(
            model="tts-1", voice=voice, input=TEXT, response_format="pcm", extra_body=GREEDY).read()

    listed = httpx.get(server.url + "/v1/audio/voices", timeout=10).json()
    assert listed == httpx.get(server.url + "/v1/voices", timeout=10).json()
    aliases = listed["aliases"]
    assert set(aliases) == {"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage",
                            "shimmer", "verse"}
    alloy = pcm("alloy")
    assert len(alloy) > 0 and len(alloy) % 3840 == 0
    assert alloy == pcm(aliases["alloy"]), "alloy is its preset, greedy sample for sample"
    assert len(pcm("onyx")) > 0
