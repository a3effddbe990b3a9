"""The clients' exceptions: the thread service's one error tree
(:mod:`threadfold.core.errors`), for the direct and the HTTP clients alike.

::

    ThreadfoldError              root of every error threadfold raises on purpose (core's)
    ├── ClientClosed             a call on a closed client
    └── RequestError             a call refused or not answered: the API's error JSON
        ├── InvalidInput         422: the field and pointer at fault
        │   ├── BadRequest       400: a malformed argument or body
        │   └── PayloadTooLarge, UnsupportedMediaType, HeadTooLarge   413 / 415 / 431
        ├── Unauthorized         401 / 403
        ├── NotFound             404: a thread never written (or deleted)
        ├── MethodNotAllowed, RequestTimeout                          405 / 408
        ├── Conflict             409
        │   ├── VersionNotReached   min_version not reached in time (also a TimeoutError)
        │   └── PoisonEntry      time travel reaches an entry that cannot be folded
        ├── Gone                 410: time travel past what retention kept
        ├── RateLimited          429: the tenant is over its share of appends
        ├── Unavailable          502 / 503 / 504, or the service unreachable: retry later
        │   └── RedisFull, NotReplicated, TooManySubscribers          503
        └── ServerError          500 and any other 5xx

A direct client raises the very exception (class, status, code, field, pointer) the
HTTP API answers for the same call, because both come from the same object; an HTTP
client finds the class again from the answer's code (:func:`from_answer`).
"""

from __future__ import annotations

from threadfold.core.errors import (
    BadRequest,
    ClientClosed,
    Conflict,
    Gone,
    HeadTooLarge,
    InvalidInput,
    MethodNotAllowed,
    NotFound,
    NotReplicated,
    PayloadTooLarge,
    PoisonEntry,
    RateLimited,
    RedisFull,
    RequestError,
    RequestTimeout,
    ServerError,
    ThreadfoldError,
    TooManySubscribers,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
    VersionNotReached,
    kind_of,
)

__all__ = [
    "BadRequest",
    "ClientClosed",
    "Conflict",
    "Gone",
    "HeadTooLarge",
    "InvalidInput",
    "MethodNotAllowed",
    "NotFound",
    "NotReplicated",
    "PayloadTooLarge",
    "PoisonEntry",
    "RateLimited",
    "RedisFull",
    "RequestError",
    "RequestTimeout",
    "ServerError",
    "ThreadfoldError",
    "TooManySubscribers",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "VersionNotReached",
    "from_answer",
]

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
    return kind_of(status, code)(
        message,
        status=status,
        code=code,
        field=field if isinstance(field, str) else None,
        pointer=where if isinstance(where, str) else None,
        retry_after=_seconds(retry_after),
        details={k: v for k, v in error.items() if k not in _KNOWN},
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
