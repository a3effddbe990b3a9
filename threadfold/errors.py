"""The clients' exceptions: one tree for the direct and the HTTP clients alike.

::

    ThreadfoldError              root of every error threadfold raises on purpose (core's)
    ├── ClientClosed             a call on a closed client
    └── RequestError             a call refused or not answered: the API's error JSON
        ├── InvalidInput         400 / 413 / 415 / 422 / 431: the field and pointer at fault
        ├── Unauthorized         401 / 403
        ├── NotFound             404: a thread never written (or deleted)
        ├── Conflict             409
        │   ├── VersionNotReached   min_version not reached in time (also a TimeoutError)
        │   └── PoisonEntry      time travel reaches an entry that cannot be folded
        ├── Gone                 410: time travel past what retention kept
        ├── Unavailable          502 / 503 / 504, or the service unreachable: retry later
        └── ServerError          500 and any other 5xx

A direct client raises the very exception (status, code, field, pointer) the HTTP API
answers for the same call, so code written against one kind runs against the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import EllipsisType
from typing import Any

from threadfold.core.depth import pointer as field_pointer
from threadfold.core.errors import ThreadfoldError

__all__ = [
    "ClientClosed",
    "Conflict",
    "Gone",
    "InvalidInput",
    "NotFound",
    "PoisonEntry",
    "RequestError",
    "ServerError",
    "ThreadfoldError",
    "Unauthorized",
    "Unavailable",
    "VersionNotReached",
    "from_answer",
]


class ClientClosed(ThreadfoldError, RuntimeError):
    """Raised by a call on a client that was closed."""


class RequestError(ThreadfoldError):
    """A call the service refused or could not answer.

    ``status`` is the HTTP status the API answers for it (None when no answer came),
    ``code`` its error code, ``field`` the argument or body field at fault
    (``messages[0].tool_call_id``) and ``pointer`` the same as a JSON pointer
    (``/messages/0/tool_call_id``); ``details`` holds any further keys of the error.
    """

    default_status: int | None = None
    default_code = "error"

    def __init__(  # noqa: PLR0913  # an error's fields, by name, as the API's JSON error has them
        self,
        message: str,
        *,
        status: int | EllipsisType | None = ...,
        code: str | None = None,
        field: str | None = None,
        pointer: str | None = None,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = self.default_status if status is ... else status
        self.code = code or self.default_code
        self.field = field
        if pointer is None and field is not None:
            pointer = field_pointer(field)
        self.pointer = pointer
        self.retry_after = retry_after
        self.details = dict(details or {})

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status={self.status}, field={self.field!r})"
        )


class InvalidInput(RequestError, ValueError):
    """A malformed or invalid argument or message (400, 413, 415, 422)."""

    default_status, default_code = 422, "invalid"


class Unauthorized(RequestError, PermissionError):
    """No, or an unknown, API key (401), or not allowed (403)."""

    default_status, default_code = 401, "unauthorized"


class NotFound(RequestError, LookupError):
    """The thread was never written, or was deleted (404)."""

    default_status, default_code = 404, "not_found"


class Conflict(RequestError):
    """The request conflicts with the thread's state (409)."""

    default_status, default_code = 409, "conflict"


class VersionNotReached(Conflict, TimeoutError):
    """``min_version`` (or :meth:`wait_for`'s version) was not reached in time;
    ``version`` is where the thread stands."""

    default_code = "version_not_reached"

    @property
    def version(self) -> str | None:
        found = self.details.get("version")
        return found if isinstance(found, str) else None


class PoisonEntry(Conflict):
    """Time travel reaches a log entry that cannot be decoded or folded (409); ``entry``
    names it (the live thread is held before it until an operator skips it)."""

    default_code = "poison_entry"

    @property
    def entry(self) -> str | None:
        found = self.details.get("entry")
        return found if isinstance(found, str) else None


class Gone(RequestError, LookupError):
    """Time travel needs history that retention has dropped (410); ``oldest`` is the
    oldest version still served, when the service says."""

    default_status, default_code = 410, "gone"

    @property
    def oldest(self) -> str | None:
        found = self.details.get("oldest_version")
        return found if isinstance(found, str) else None


class Unavailable(RequestError):
    """The service or its Redis or broker is unreachable (502, 503, 504, or no answer);
    retrying later may succeed (``retry_after`` seconds, when the service says)."""

    default_status, default_code = 503, "unavailable"


class ServerError(RequestError):
    """The service failed (500 or another 5xx)."""

    default_status, default_code = 500, "internal_error"


def _kind(status: int, code: str) -> type[RequestError]:
    if status in (400, 413, 415, 422, 431):
        return InvalidInput
    if status in (401, 403):
        return Unauthorized
    if status == 409:
        conflicts = {"version_not_reached": VersionNotReached, "poison_entry": PoisonEntry}
        return conflicts.get(code, Conflict)
    if status in (502, 503, 504):
        return Unavailable
    by_status: dict[int, type[RequestError]] = {404: NotFound, 410: Gone}
    if status in by_status:
        return by_status[status]
    return ServerError if status >= 500 else RequestError


_KNOWN = frozenset({"status", "code", "message", "field", "pointer"})


def from_answer(
    status: int, body: object, retry_after: str | None = None, text: str = ""
) -> RequestError:
    """The exception for an HTTP error answer: ``body`` is its decoded JSON (the API's
    ``{"error": {...}}``), anything else (a proxy's page) is described by ``text``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {}
    code = error.get("code")
    code = code if isinstance(code, str) else f"http_{status}"
    message = error.get("message")
    if not isinstance(message, str):
        message = f"HTTP {status}: {text[:200]}" if text else f"HTTP {status}"
    field, where = error.get("field"), error.get("pointer")
    details = {k: v for k, v in error.items() if k not in _KNOWN}
    return _kind(status, code)(
        message,
        status=status,
        code=code,
        field=field if isinstance(field, str) else None,
        pointer=where if isinstance(where, str) else None,
        retry_after=_seconds(retry_after),
        details=details,
    )


def _seconds(header: str | None) -> float | None:
    """A ``Retry-After`` of seconds (the API's form); an HTTP date is not used."""
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        return None
    return value if 0 <= value < 3600 else None
