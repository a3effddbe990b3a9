"""The API's error tree, and how every failure becomes a precise JSON answer.

::

    ApiError                  root: an HTTP status, a code, a message, the field at fault
    ├── BadRequest            400: unreadable JSON, malformed query parameters
    ├── Unauthorized          401: no or unknown bearer token
    ├── NotFound              404: a thread never written (or deleted)
    ├── VersionNotReached     409: min_version not reached within the wait
    ├── PoisonEntry           409: at_version reaches a log entry that cannot be folded
    ├── RequestTimeout        408: the request head or body did not arrive in time
    ├── Gone                  410: at_version needs log entries retention has dropped
    ├── PayloadTooLarge       413: body over the configured size
    ├── UnsupportedMediaType  415: not application/json
    ├── Invalid               422: well-formed JSON that is not a valid request
    ├── HeadTooLarge          431: too many headers, or a request head over the size
    └── Unavailable           503: Redis or the broker cannot be reached (retry)
        └── RedisFull         503: Redis is out of memory and refuses writes (retry later)

RequestTimeout and HeadTooLarge are answered by the server's protocol (threadfold.api.guard),
before the application sees the request.

Nothing else reaches a client: an unexpected exception is logged and answered as a
500 without internals, and the tests (schemathesis included) demand that never happens.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from threadfold.core.depth import path_text, pointer


class ApiError(Exception):
    """Raised to answer a request with ``status`` and a JSON error body."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"status": self.status, "code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
            error["pointer"] = pointer(self.field)
        error.update(self.extra)
        return {"error": error}


class BadRequest(ApiError):
    """Raised when the body is not JSON or a query parameter is malformed."""

    status, code = 400, "bad_request"


class Unauthorized(ApiError):
    """Raised when API keys are configured and the request has no valid bearer token."""

    status, code = 401, "unauthorized"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.headers = {"WWW-Authenticate": 'Bearer realm="threadfold"'}


class NotFound(ApiError):
    """Raised when a thread was never written (or was deleted), or a route does not exist."""

    status, code = 404, "not_found"


class VersionNotReached(ApiError):
    """Raised when ``min_version`` is not reached within ``wait`` seconds."""

    status, code = 409, "version_not_reached"

    def __init__(self, message: str, *, version: str) -> None:
        super().__init__(message, version=version)
        self.headers = {"Retry-After": "1"}


class RequestTimeout(ApiError):
    """Answered when a request's head or body does not arrive within its time limit."""

    status, code = 408, "request_timeout"


class Gone(ApiError):
    """Raised when time travel needs log entries that retention has already trimmed."""

    status, code = 410, "gone"


class PoisonEntry(ApiError):
    """Raised when time travel reaches a log entry that cannot be decoded or folded (the
    live thread is held before it too, quarantined until an operator skips it)."""

    status, code = 409, "poison_entry"


class PayloadTooLarge(ApiError):
    """Raised when a body is over the configured limit."""

    status, code = 413, "payload_too_large"


class UnsupportedMediaType(ApiError):
    """Raised when a body is not sent as ``application/json``."""

    status, code = 415, "unsupported_media_type"


class Invalid(ApiError):
    """Raised when a well-formed request is not valid (the field says where)."""

    status, code = 422, "invalid"


class HeadTooLarge(ApiError):
    """Answered when a request has too many headers or its head is over the size limit."""

    status, code = 431, "request_header_fields_too_large"


class Unavailable(ApiError):
    """Raised when Redis or the broker cannot be reached; retrying later may succeed."""

    status, code = 503, "unavailable"
    retry_after = 1

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message, **extra)
        self.headers = {"Retry-After": str(self.retry_after)}


class RedisFull(Unavailable):
    """Raised when Redis is over ``maxmemory`` and refuses writes. Retrying later may
    succeed, once memory is freed or the limit raised: an operator's act, not a blip,
    so clients are asked to wait longer than after a lost connection."""

    code = "redis_full"
    retry_after = 5


_MSGSPEC_PATH = re.compile(r" - at `\$(.*)`$")
_FIELD_NAMED = re.compile(r"^Object (contains unknown|missing required) field `(.+)`$")


def from_msgspec(exc: msgspec.ValidationError) -> Invalid:
    """msgspec's ``Expected `int`, got `str` - at `$.deltas[0].thread_id``` as an Invalid
    whose field is the JSON path (``deltas[0].thread_id``)."""
    text = str(exc)
    match = _MSGSPEC_PATH.search(text)
    path = match[1].lstrip(".") if match else ""
    reason = _MSGSPEC_PATH.sub("", text)
    named = _FIELD_NAMED.match(reason)
    if named:
        field = path_text(path, [named[2]])
        what = "unknown field" if named[1].startswith("contains") else "required field is missing"
        return Invalid(f"{field}: {what}", field=field)
    reason = reason.replace("`", "'")
    reason = reason[0].lower() + reason[1:]
    if "[...]" in path:
        # msgspec writes a key of a free-form object, which it does not name, as [...]:
        # the field is then the nearest value it does name.
        path = path[: path.index("[...]")]
        reason = f"{reason} (in a value nested in it)"
    return Invalid(f"{path}: {reason}" if path else reason, field=path or None)
