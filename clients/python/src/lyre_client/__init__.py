"""Typed asyncio client for the Lyre text-to-speech server.

`LyreClient` speaks to one server: whole clips, OpenAI-style streams and realtime WebSocket
contexts. `lyre_client.pipecat.LyreTTSService` (extra `pipecat`) is a Pipecat TTS service.
"""

from .client import Clip, LyreClient
from .errors import LyreError
from .protocol import Audio, Cancelled, Codes, Done, ErrorMessage, Event, Flushed, Segment, Started
from .realtime import Context, RealtimeConnection

__all__ = [
    "Audio",
    "Cancelled",
    "Clip",
    "Codes",
    "Context",
    "Done",
    "ErrorMessage",
    "Event",
    "Flushed",
    "LyreClient",
    "LyreError",
    "RealtimeConnection",
    "Segment",
    "Started",
]
