"""The one exception the client raises for a server's refusal or failure."""

from __future__ import annotations


class LyreError(Exception):
    """A request or context the server refused or could not finish.

    `code` is the server's stable error code (`busy`, `invalid_request`, ...), `field` the request
    field at fault, `status` the HTTP status (or the code's status for WebSocket errors, when
    known), `retry_after_s` how long to wait before retrying, when the server says.
    """

    def __init__(self, code: str, message: str, *, field: str | None = None, status: int | None = None,
                 retry_after_s: int | None = None, context_id: str | None = None) -> None:
        super().__init__(f"{code}: {message}" + (f" ({field})" if field else ""))
        self.code = code
        self.message = message
        self.field = field
        self.status = status
        self.retry_after_s = retry_after_s
        self.context_id = context_id
