"""`LyreTTSService` in a real Pipecat pipeline (no transport, no outside service): LLM-like text
frames in, audio frames out, against the real server."""

import asyncio

import httpx
from pipecat.frames.frames import (
    EndFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import TTSSettings
from pipecat.workers.runner import WorkerRunner

from lyre_client.pipecat import LyreTTSService

RATE = 16000
REPLY = ["Hello world, ", "this is ", "the first reply."]
NEXT = ["And now ", "the next one."]


class Recorder(FrameProcessor):
    """The pipeline's last processor: keeps every downstream frame, in order."""

    def __init__(self):
        super().__init__()
        self.frames = []
        self.changed = asyncio.Event()

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            self.frames.append(frame)
            self.changed.set()
        await self.push_frame(frame, direction)

    async def wait_for(self, predicate, timeout=120):
        async def poll():
            while not predicate(self.frames):
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(poll(), timeout)


def service(server, **synthesis):
    return LyreTTSService(url=server.ws_url, settings=TTSSettings(voice="ryan"), seed=13,
                          synthesis={"ignore_eos": True, **synthesis})


async def run_pipeline(tts, script):
    recorder = Recorder()
    worker = PipelineWorker(Pipeline([tts, recorder]), params=PipelineParams(audio_out_sample_rate=RATE),
                            cancel_on_idle_timeout=False)
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(worker, frame):
        started.set()

    async def drive():
        await asyncio.wait_for(started.wait(), 60)
        await script(worker, recorder)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), drive())
    return recorder.frames


async def say(worker, pieces):
    await worker.queue_frames([LLMFullResponseStartFrame(), *[LLMTextFrame(p) for p in pieces],
                               LLMFullResponseEndFrame()])


def audio_frames(frames, context_id=None):
    return [f for f in frames if isinstance(f, TTSAudioRawFrame) and context_id in (None, f.context_id)]


def test_llm_text_in_audio_out_equal_to_the_server_s_audio(server):
    async def script(worker, recorder):
        await say(worker, REPLY)
        await recorder.wait_for(lambda fs: any(isinstance(f, TTSStoppedFrame) for f in fs))

    frames = asyncio.run(run_pipeline(service(server, max_frames=25), script))
    audio = audio_frames(frames)
    assert audio and all(f.sample_rate == RATE and f.num_channels == 1 for f in audio)
    # One frame per 80 ms at the pipeline's rate, then the resampler's last 10 ms.
    assert [len(f.audio) for f in audio] == [2 * RATE * 80 // 1000] * 25 + [2 * RATE // 100]
    same = httpx.post(server.url + "/v1/tts", timeout=300, json={
        "text": "".join(REPLY), "voice": "ryan", "seed": 13, "ignore_eos": True, "max_frames": 25,
        "format": "pcm", "sample_rate": RATE, "text_mode": "streaming"})
    assert same.status_code == 200
    assert b"".join(f.audio for f in audio) == same.content


def test_an_interruption_stops_the_audio_within_two_frames_and_the_next_reply_plays(server):
    # Each reply's frame limit: the first is interrupted long before it, the second plays to it.
    LIMIT = 80
    marks = {}

    async def script(worker, recorder):
        await say(worker, REPLY)
        await recorder.wait_for(lambda fs: len(audio_frames(fs)) >= 3)
        first = audio_frames(recorder.frames)[0].context_id
        marks["first"] = first
        await worker.queue_frame(InterruptionFrame())
        await recorder.wait_for(lambda fs: any(isinstance(f, InterruptionFrame) for f in fs))
        await asyncio.sleep(1.0)  # anything still on its way for the first reply would arrive now
        await say(worker, NEXT)
        await recorder.wait_for(lambda fs: any(isinstance(f, TTSStoppedFrame) and f.context_id != first for f in fs))

    frames = asyncio.run(run_pipeline(service(server, max_frames=LIMIT), script))
    first = marks["first"]
    cut = next(i for i, f in enumerate(frames) if isinstance(f, InterruptionFrame))
    late = audio_frames(frames[cut:], first)
    assert len(late) <= 2, f"{len(late)} frames of the interrupted reply after the interruption"
    assert len(audio_frames(frames[:cut], first)) < LIMIT, "the first reply was cut short"
    second = [f for f in audio_frames(frames[cut:]) if f.context_id != first]
    assert len(second) >= 10, "the next reply plays"
