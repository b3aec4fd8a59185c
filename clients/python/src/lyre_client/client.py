"""`LyreClient`: whole clips (`POST /v1/tts`), OpenAI-style streams (`POST /v1/audio/speech`) and
realtime WebSocket contexts (`/v1/tts/stream`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import LyreError
from .realtime import RealtimeConnection


@dataclass(frozen=True)
class Clip:
    """A whole clip and what the server said about it."""

    audio: bytes
    content_type: str
    sample_rate: int
    frames: int
    finish_reason: str
    #: FNV-1a-64 of the codec codes: equal for equal requests with the same seed.
    codes_fnv1a: str


class LyreClient:
    """An asyncio client for one Lyre server (or a load balancer in front of several).

    ```python
    async with LyreClient("http://localhost:8080") as lyre:
        clip = await lyre.tts("Hello.", voice="vivian", format="wav")
        async for chunk in lyre.speech("Hello.", voice="ryan", response_format="pcm"):
            ...
        async with await lyre.realtime() as rt:
            ctx = await rt.open_context(voice="ryan", format="pcm16", sample_rate=16000)
            await ctx.send_text("Hello, ")
            await ctx.send_text("world.")
            await ctx.end()
            audio, done = await ctx.audio()
    ```
    """

    def __init__(self, base_url: str = "http://localhost:8080", *, api_key: str | None = None,
                 timeout: float = 300.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout)

    async def __aenter__(self) -> LyreClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def tts(self, text: str, *, voice: str | None = None, format: str = "wav", sample_rate: int | None = None,
                  speed: float | None = None, encoding: str | None = None, **fields: Any) -> Clip:
        """A whole clip (`POST /v1/tts`). `fields` are Lyre's synthesis fields (`language`,
        `seed`, `instruct`, ...)."""
        body = _without_none({"text": text, "voice": voice, "format": format, "sample_rate": sample_rate,
                              "speed": speed, "encoding": encoding, **fields})
        r = await self._http.post("/v1/tts", json=body)
        _raise_for_error(r)
        h = r.headers
        return Clip(r.content, h.get("content-type", ""), int(h.get("x-lyre-sample-rate", 24000)),
                    int(h.get("x-lyre-frames", 0)), h.get("x-lyre-finish-reason", ""), h.get("x-lyre-codes-fnv1a", ""))

    async def speech(self, input: str, *, voice: str, response_format: str = "pcm", model: str = "lyre",
                     instructions: str | None = None, sample_rate: int | None = None, speed: float | None = None,
                     **fields: Any) -> AsyncIterator[bytes]:
        """OpenAI's `POST /v1/audio/speech`, streamed: encoded audio chunks as they are generated."""
        body = _without_none({"model": model, "input": input, "voice": voice, "response_format": response_format,
                              "instructions": instructions, "sample_rate": sample_rate, "speed": speed, **fields})
        async with self._http.stream("POST", "/v1/audio/speech", json=body) as r:
            if r.status_code >= 400:
                await r.aread()
                _raise_for_error(r)
            async for chunk in r.aiter_bytes():
                yield chunk

    async def voices(self) -> dict[str, Any]:
        """`GET /v1/voices`: the model's voices, languages and what it accepts."""
        r = await self._http.get("/v1/voices")
        _raise_for_error(r)
        result: dict[str, Any] = r.json()
        return result

    async def realtime(self, *, multiplex: bool = True) -> RealtimeConnection:
        """Opens a WebSocket for realtime contexts."""
        url = self.base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/v1/tts/stream"
        return await RealtimeConnection.connect(url, api_key=self.api_key, multiplex=multiplex)


def _without_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _raise_for_error(r: httpx.Response) -> None:
    if r.status_code < 400:
        return
    try:
        err = r.json()["error"]
    except (ValueError, KeyError, TypeError):
        raise LyreError("http_error", f"HTTP {r.status_code}: {r.text[:200]}", status=r.status_code) from None
    retry = r.headers.get("retry-after")
    raise LyreError(err.get("code") or "http_error", err.get("message") or "", field=err.get("param"),
                    status=r.status_code, retry_after_s=int(retry) if retry and retry.isdigit() else None)
