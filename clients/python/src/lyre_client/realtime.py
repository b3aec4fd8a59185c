"""The realtime WebSocket (`/v1/tts/stream`): contexts that take text as it comes, speak it, flush
it and can be cancelled, each with its own stream of events."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from .errors import LyreError
from .protocol import (
    FINAL,
    Audio,
    Cancelled,
    Done,
    ErrorMessage,
    Event,
    Flushed,
    Started,
    context_message,
    parse_event,
    start_message,
)


class RealtimeConnection:
    """One WebSocket. Multiplexed (the default), it holds several contexts at once; otherwise one
    at a time, with audio in binary messages. Use as `async with await client.realtime() as rt`."""

    def __init__(self, ws: ClientConnection, *, multiplex: bool) -> None:
        self._ws = ws
        self.multiplex = multiplex
        self._contexts: dict[str, Context] = {}
        self._started_any = False
        self._frames = 0
        #: Errors about messages that named no open context (kept for inspection).
        self.errors: list[ErrorMessage] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, url: str, *, api_key: str | None = None, multiplex: bool = True,
                      open_timeout: float = 30.0) -> RealtimeConnection:
        """Opens the socket at `url` (`ws://host:port/v1/tts/stream`)."""
        protocols: list[Any] = ["lyre"] + ([f"lyre.token.{api_key}"] if api_key else [])
        ws = await websockets.connect(url, subprotocols=protocols, max_size=None, open_timeout=open_timeout)
        return cls(ws, multiplex=multiplex)

    async def __aenter__(self) -> RealtimeConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open_context(self, context_id: str | None = None, *, voice: str | None = None,
                           text: str | None = None, format: str = "pcm16", sample_rate: int | None = None,
                           speed: float | None = None, encoding: str | None = None, codes: bool = False,
                           **fields: Any) -> Context:
        """Starts a context (`start`). `fields` are Lyre's synthesis fields (`language`, `seed`,
        `temperature`, ...). Its events arrive on the returned context."""
        ctx_id = context_id or "default"
        if ctx_id in self._contexts:
            raise LyreError("context_active", f"context `{ctx_id}` is already open", field="context_id")
        context = Context(self, ctx_id)
        self._contexts[ctx_id] = context
        self._frames = 0
        first = not self._started_any
        self._started_any = True
        message = start_message(context_id, multiplex=self.multiplex if first else None, fields={
            "voice": voice, "text": text, "format": format, "sample_rate": sample_rate, "speed": speed,
            "encoding": encoding, "codes": codes or None, **fields})
        await self._ws.send(message)
        return context

    async def close(self) -> None:
        """Closes the socket; the server cancels every open context."""
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _send(self, message: str) -> None:
        await self._ws.send(message)

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                only = next(iter(self._contexts), None)
                event = parse_event(raw, only)
                if isinstance(event, Audio) and event.frame < 0:
                    event = Audio(event.context_id, self._frames, event.data)
                    self._frames += 1
                if event is None:
                    continue
                context = self._contexts.get(event.context_id or "")
                if context is None:
                    if isinstance(event, ErrorMessage):
                        self.errors.append(event)
                    continue
                if isinstance(event, FINAL):
                    del self._contexts[context.id]
                context._deliver(event)
        except websockets.ConnectionClosed:
            pass
        finally:
            closed = ErrorMessage("connection_closed", "the WebSocket closed")
            for context in list(self._contexts.values()):
                context._deliver(ErrorMessage(closed.code, closed.message, context.id))
            self._contexts.clear()


class Context:
    """One context: send it text, `flush`, `end` or `cancel`; iterate it for its events (audio,
    `flushed`, ..., up to `done` or `cancelled`; an error raises `LyreError`)."""

    def __init__(self, connection: RealtimeConnection, context_id: str) -> None:
        self._connection = connection
        self.id = context_id
        self.started: Started | None = None
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._named = context_id if connection.multiplex else None

    async def send_text(self, text: str) -> None:
        """More text; it may arrive while audio is already playing."""
        await self._connection._send(context_message("text", self._named, text=text))

    async def flush(self) -> None:
        """Speak all text sent so far; `Flushed` follows its last frame, and the context stays
        open for more text."""
        await self._connection._send(context_message("flush", self._named))

    async def end(self) -> None:
        """No more text: the context ends (`Done`) once it is spoken."""
        await self._connection._send(context_message("end", self._named))

    async def cancel(self) -> None:
        """Stop now: answered by `Cancelled` (multiplexed sockets) or a `cancelled` error."""
        await self._connection._send(context_message("cancel", self._named))

    def _deliver(self, event: Event) -> None:
        if isinstance(event, Started):
            self.started = event
        self._events.put_nowait(event)

    async def next_event(self) -> Event:
        """The next event; an error of this context raises `LyreError`."""
        event = await self._events.get()
        if isinstance(event, ErrorMessage):
            raise LyreError(event.code, event.message, field=event.field, retry_after_s=event.retry_after_s,
                            context_id=event.context_id)
        return event

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            event = await self.next_event()
            yield event
            if isinstance(event, FINAL):
                return

    async def audio_until(self, *kinds: type) -> tuple[bytes, Event]:
        """Every audio byte up to the first event of one of `kinds` (e.g. `Flushed`, `Done`),
        and that event."""
        chunks: list[bytes] = []
        while True:
            event = await self.next_event()
            if isinstance(event, Audio):
                chunks.append(event.data)
            elif isinstance(event, kinds):
                return b"".join(chunks), event
            elif isinstance(event, Cancelled):
                raise LyreError("cancelled", "the context was cancelled", context_id=self.id)

    async def audio(self) -> tuple[bytes, Done]:
        """The context's whole audio, up to its `Done`."""
        data, done = await self.audio_until(Done)
        assert isinstance(done, Done)
        return data, done

    async def flushed_audio(self) -> tuple[bytes, Flushed]:
        """The audio up to the next `Flushed`."""
        data, flushed = await self.audio_until(Flushed)
        assert isinstance(flushed, Flushed)
        return data, flushed
