"""The WebSocket protocol's messages (`docs/protocol.md`), as the client and the Pipecat service
send and read them."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Union

JSON = dict[str, Any]


def start_message(context_id: str | None, *, multiplex: bool | None, fields: JSON) -> str:
    """A `start`: the context's voice, output and sampling fields (`None` values left out)."""
    msg: JSON = {"type": "start"}
    if context_id is not None:
        msg["context_id"] = context_id
    if multiplex is not None:
        msg["multiplex"] = multiplex
    msg.update({k: v for k, v in fields.items() if v is not None})
    return json.dumps(msg)


def context_message(kind: str, context_id: str | None, **extra: Any) -> str:
    """A `text`, `flush`, `end` or `cancel` for one context."""
    msg: JSON = {"type": kind, **extra}
    if context_id is not None:
        msg["context_id"] = context_id
    return json.dumps(msg)


@dataclass(frozen=True)
class Started:
    """The context has a GPU slot; its audio format and frame size."""

    context_id: str
    format: str
    sample_rate: int
    samples_per_frame: int
    bytes_per_frame: int | None
    speed: float
    queued_ms: float


@dataclass(frozen=True)
class Audio:
    """One frame's audio (encoded as the context's format asked)."""

    context_id: str
    frame: int
    data: bytes


@dataclass(frozen=True)
class Codes:
    """One frame's 16 codec codes (when the context asked for them)."""

    context_id: str
    frame: int
    codes: list[int]


@dataclass(frozen=True)
class Segment:
    """The audio that follows starts segment `index` of the context (a flush or a long text's
    seam); the stream goes on."""

    context_id: str
    index: int


@dataclass(frozen=True)
class Flushed:
    """The text before a flush has been spoken; the context stays open."""

    context_id: str
    frames: int


@dataclass(frozen=True)
class Done:
    """The context ended normally (its last utterance's figures)."""

    context_id: str
    frames: int
    audio_ms: float
    ttfa_ms: float
    rtf: float
    finish_reason: str


@dataclass(frozen=True)
class Cancelled:
    """The context was cancelled by the client."""

    context_id: str


@dataclass(frozen=True)
class ErrorMessage:
    """A failure: of one context (which then ends), or of a message (`context_id` None)."""

    code: str
    message: str
    context_id: str | None = None
    field: str | None = None
    retry_after_s: int | None = None
    extra: JSON = dataclass_field(default_factory=dict)


Event = Union[Started, Audio, Codes, Segment, Flushed, Done, Cancelled, ErrorMessage]

#: Events after which a context has ended.
FINAL = (Done, Cancelled, ErrorMessage)


def parse_event(raw: str | bytes, only_context: str | None) -> Event | None:
    """One server message as an event. A binary message is audio of `only_context` (sockets that
    are not multiplexed carry one context at a time). Unknown message types give `None`."""
    if isinstance(raw, bytes):
        return Audio(context_id=only_context or "default", frame=-1, data=raw)
    msg: JSON = json.loads(raw)
    kind = msg.get("type")
    named = msg.get("context_id")
    ctx = str(named) if named is not None else "default"
    if kind == "started":
        return Started(ctx, msg["format"], msg["sample_rate"], msg["samples_per_frame"], msg.get("bytes_per_frame"),
                       msg.get("speed", 1.0), msg.get("queued_ms", 0.0))
    if kind == "audio":
        return Audio(ctx, msg["frame"], base64.b64decode(msg["data"]))
    if kind == "codes":
        return Codes(ctx, msg["frame"], list(msg["codes"]))
    if kind == "segment":
        return Segment(ctx, msg["index"])
    if kind == "flushed":
        return Flushed(ctx, msg["frames"])
    if kind == "done":
        return Done(ctx, msg["frames"], msg["audio_ms"], msg["ttfa_ms"], msg["rtf"], msg["finish_reason"])
    if kind == "cancelled":
        return Cancelled(ctx)
    if kind == "error":
        known = {"type", "code", "message", "context_id", "field", "retry_after_s"}
        return ErrorMessage(msg["code"], msg["message"], named, msg.get("field"), msg.get("retry_after_s"),
                            {k: v for k, v in msg.items() if k not in known})
    return None
