"""A Pipecat TTS service for Lyre (`pip install lyre-client[pipecat]`).

Built on Pipecat's `WebsocketTTSService`, whose audio contexts it maps onto Lyre's WebSocket
contexts on one multiplexed socket: each turn's context is a Lyre context (its text streamed in
as the LLM produces it), the end of the LLM's turn is Lyre's `end`, an interruption is Lyre's
`cancel` for the interrupted context, and the audio comes back as `TTSAudioRawFrame`s at the rate
the pipeline asks for (Lyre resamples on the server).

```python
from lyre_client.pipecat import LyreTTSService

tts = LyreTTSService(url="ws://localhost:8080/v1/tts/stream",
                     settings=LyreTTSService.Settings(voice="vivian"))
pipeline = Pipeline([transport.input(), stt, user_agg, llm, tts, transport.output(), assistant_agg])
```
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from loguru import logger
from pipecat.frames.frames import ErrorFrame, Frame, TTSAudioRawFrame, TTSStoppedFrame
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TextAggregationMode, WebsocketTTSService
from pipecat.transcriptions.language import Language
from websockets.protocol import State

from .protocol import Audio, Cancelled, Done, ErrorMessage, Started, context_message, parse_event, start_message

#: Pipecat's language codes, by their primary subtag, as Lyre names the languages.
LANGUAGES = {
    "en": "english", "zh": "chinese", "ja": "japanese", "ko": "korean", "de": "german", "fr": "french",
    "ru": "russian", "pt": "portuguese", "es": "spanish", "it": "italian",
}


class LyreTTSService(WebsocketTTSService):
    """Text to speech with a Lyre server over its realtime WebSocket.

    Args:
        url: The server's WebSocket endpoint, `ws://HOST:PORT/v1/tts/stream`.
        api_key: An API key, when the server requires one.
        settings: `voice` (a preset or stored voice) and `language` (`None`: detected).
        sample_rate: Output rate; by default the pipeline's (8000, 16000, 22050, 24000, 44100 or
            48000 Hz).
        speed: Speaking rate, 0.25 to 4.0 (pitch kept).
        seed: Sampling seed: the same seed and text give the same audio.
        synthesis: Any other Lyre synthesis fields (`instruct`, `temperature`, `top_k`, ...).
        text_aggregation_mode: `TOKEN` (default) streams the LLM's text as it comes; Lyre's
            incremental tokenizer needs no sentence boundaries.
    """

    Settings = TTSSettings
    _settings: TTSSettings

    def __init__(self, *, url: str = "ws://localhost:8080/v1/tts/stream", api_key: str | None = None,
                 settings: TTSSettings | None = None, sample_rate: int | None = None, speed: float | None = None,
                 seed: int | None = None, synthesis: dict[str, Any] | None = None,
                 text_aggregation_mode: TextAggregationMode = TextAggregationMode.TOKEN, **kwargs: Any) -> None:
        store = TTSSettings(model=None, voice=None, language=None)
        if settings is not None:
            store.apply_update(settings)
        super().__init__(text_aggregation_mode=text_aggregation_mode, push_start_frame=True,
                         pause_frame_processing=False, sample_rate=sample_rate, settings=store, **kwargs)
        self._url = url
        self._api_key = api_key
        self._speed = speed
        self._seed = seed
        self._synthesis = dict(synthesis or {})
        self._receive_task: Any = None
        # Contexts open on the server, and whether this socket has had its first `start`.
        self._server_contexts: set[str] = set()
        self._socket_started = False

    def can_generate_metrics(self) -> bool:
        return True

    def language_to_service_language(self, language: Language) -> str | None:
        return LANGUAGES.get(str(language.value).split("-")[0].lower())

    async def setup(self, setup: FrameProcessorSetup) -> None:  # type: ignore[override]
        await super().setup(setup)
        await self._connect()

    async def _connect(self) -> None:
        await super()._connect()
        await self._connect_websocket()
        if self._websocket and not self._receive_task:
            self._receive_task = self.create_task(self._receive_task_handler(self._report_error))

    async def _disconnect(self) -> None:
        await super()._disconnect()
        if self._receive_task:
            await self.cancel_task(self._receive_task, timeout=1.0)
            self._receive_task = None
        await self._disconnect_websocket()

    async def _connect_websocket(self) -> None:
        if self._websocket and self._websocket.state is State.OPEN:
            return
        protocols: list[Any] = ["lyre"] + ([f"lyre.token.{self._api_key}"] if self._api_key else [])
        try:
            self._websocket = await self._websocket_connect(self._url, subprotocols=protocols, max_size=None)
            self._server_contexts.clear()
            self._socket_started = False
            await self._call_event_handler("on_connected")
        except Exception as e:
            self._websocket = None
            await self.push_error(error_msg=f"Lyre: cannot connect to {self._url}: {e}", exception=e)
            await self._call_event_handler("on_connection_error", f"{e}")

    async def _disconnect_websocket(self) -> None:
        try:
            await self.stop_all_metrics()
            if self._websocket:
                await self._websocket.close()
        finally:
            self._websocket = None
            self._server_contexts.clear()
            await self._call_event_handler("on_disconnected")

    async def _send(self, message: str) -> None:
        if self._websocket is None:
            raise ConnectionError("not connected to Lyre")
        await self._websocket.send(message)

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        """Sends `text` to the turn's context, opening it on the server with its first text."""
        try:
            if not self._websocket or self._websocket.state is not State.OPEN:
                await self._connect()
            if context_id in self._server_contexts:
                await self._send(context_message("text", context_id, text=text))
            else:
                await self._send(self._start_message(context_id, text))
                self._server_contexts.add(context_id)
                self._socket_started = True
            await self.start_tts_usage_metrics(text)
        except Exception as e:
            yield ErrorFrame(error=f"Lyre: {e}")
            yield TTSStoppedFrame(context_id=context_id)
            return
        yield None

    def _start_message(self, context_id: str, text: str) -> str:
        language = self._settings.language
        if isinstance(language, Language):
            language = self.language_to_service_language(language)
        elif isinstance(language, str):
            # A code ("en", "en-US") or already Lyre's name ("english").
            language = LANGUAGES.get(language.split("-")[0].lower(), language)
        fields = {
            "voice": self._settings.voice, "language": language, "format": "pcm16",
            "sample_rate": self.sample_rate, "speed": self._speed, "seed": self._seed, "text": text,
            **self._synthesis,
        }
        multiplex = None if self._socket_started else True
        return start_message(context_id, multiplex=multiplex, fields=fields)

    async def flush_audio(self, context_id: str | None = None) -> None:
        """The LLM's turn has ended: the context's text is complete (Lyre `end`)."""
        ctx = context_id or self.get_active_audio_context_id()
        if ctx in self._server_contexts and self._websocket:
            await self._send(context_message("end", ctx))

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """The user interrupted: Lyre stops generating that context at once (`cancel`)."""
        await self.stop_all_metrics()
        if context_id in self._server_contexts and self._websocket:
            self._server_contexts.discard(context_id)
            try:
                await self._send(context_message("cancel", context_id))
            except Exception as e:
                logger.warning(f"{self}: cancel of {context_id} failed: {e}")
        await super().on_audio_context_interrupted(context_id)

    async def _receive_messages(self) -> None:
        assert self._websocket is not None
        async for raw in self._websocket:
            if isinstance(raw, bytes):
                continue  # a multiplexed socket sends audio as JSON
            event = parse_event(raw, None)
            ctx = getattr(event, "context_id", None)
            if isinstance(event, ErrorMessage) and (ctx is None or ctx not in self._server_contexts):
                await self.push_error(error_msg=f"Lyre error {event.code}: {event.message}")
                continue
            if ctx is None or not self.audio_context_available(ctx):
                continue
            if isinstance(event, Started):
                await self.stop_ttfb_metrics()
            elif isinstance(event, Audio):
                frame = TTSAudioRawFrame(audio=event.data, sample_rate=self.sample_rate, num_channels=1,
                                         context_id=ctx)
                await self.append_to_audio_context(ctx, frame)
            elif isinstance(event, (Done, Cancelled)):
                self._server_contexts.discard(ctx)
                await self.append_to_audio_context(ctx, TTSStoppedFrame(context_id=ctx))
                await self.remove_audio_context(ctx)
            elif isinstance(event, ErrorMessage):
                self._server_contexts.discard(ctx)
                await self.push_error(error_msg=f"Lyre error {event.code}: {event.message}")
                await self.append_to_audio_context(ctx, TTSStoppedFrame(context_id=ctx))
                await self.remove_audio_context(ctx)
