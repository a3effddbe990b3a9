"""The one error tree: every error threadfold raises on purpose, with one root.

::

    ThreadfoldError                 root of every error threadfold raises on purpose
    ├── InvalidMessage (ValueError) a message-like that LangChain would not accept
    ├── ReducerError (ValueError)   a reducer refused its inputs (add_messages' own errors)
    ├── ChunkMergeError (ValueError) two chunks LangChain cannot add together
    ├── ClientClosed                a call on a closed client
    └── RequestError                a call refused or not answered: status, code, field
        ├── InvalidInput            422 invalid: a well-formed request that is not valid
        │   ├── BadRequest          400 bad_request: unreadable JSON, a malformed argument
        │   ├── PayloadTooLarge     413 (transport): a body over the limit
        │   ├── UnsupportedMediaType 415 (transport): not application/json
        │   └── HeadTooLarge        431 (transport): too many headers, or a head too big
        ├── Unauthorized            401: no or an unknown API key
        ├── NotFound                404: a thread never written (or deleted), no route
        ├── MethodNotAllowed        405 (transport): a route that takes other methods
        ├── RequestTimeout          408 (transport): a head or body that did not arrive
        ├── Conflict                409
        │   ├── VersionNotReached   min_version not reached in time (also a TimeoutError)
        │   └── PoisonEntry         time travel reaches an entry that cannot be folded
        ├── Gone                    410: time travel past what retention kept
        ├── RateLimited             429: the tenant is over its share of appends: retry later
        ├── Unavailable             503: Redis or the broker unreachable: retry
        │   ├── RedisFull           503: Redis over maxmemory refuses writes: retry later
        │   ├── NotReplicated       503: a write no replica confirmed in time: in doubt
        │   └── TooManySubscribers  503: this API process serves its cap of event streams
        └── ServerError             500 and any other 5xx

The first three carry enough for a user-facing message: which item, which field, what
was expected; ``lc_error`` names the exception class LangChain raises for the same
input, so the differential tests can check that threadfold refuses exactly where
LangChain does.

A :class:`RequestError` carries its HTTP ``status`` and its ``code``: a refusal is
raised once, where the rule is (the thread service, the API's body decoding, the
server's guard, Redis I/O for a full Redis), and becomes the API's JSON error
(:meth:`RequestError.body`) or, unchanged, a direct client's exception; the HTTP
clients find the class again from an answer's code (:func:`kind_of`). Adding a refusal
is adding a class here: nothing maps it elsewhere. The tree is data, no I/O, so every
layer can raise it and the HTTP clients import it without Redis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import EllipsisType
from typing import Any, ClassVar, Final


class ThreadfoldError(Exception):
    """Root of every error threadfold raises on purpose."""


class InvalidMessage(ThreadfoldError, ValueError):
    """Raised when a message-like cannot become a message.

    ``path`` locates the offending value (``messages[3].tool_call_id``), ``reason``
    says what was expected. ``str(err)`` is ``"<path>: <reason>"`` and is meant to be
    shown to users as is.
    """

    def __init__(self, path: str, reason: str, lc_error: str = "ValueError") -> None:
        self.path = path
        self.reason = reason
        self.lc_error = lc_error
        super().__init__(f"{path}: {reason}" if path else reason)

    def under(self, prefix: str) -> InvalidMessage:
        """The same error, located under ``prefix`` (e.g. ``deltas[2].``)."""
        path = f"{prefix}{self.path}" if self.path else prefix.rstrip(".")
        return InvalidMessage(path, self.reason, self.lc_error)


class ReducerError(ThreadfoldError, ValueError):
    """Raised by ``add_messages`` where LangGraph raises ``ValueError``.

    The message text is LangGraph's, word for word, so callers matching on it keep working.
    """


class ChunkMergeError(ThreadfoldError, ValueError):
    """Raised when two chunks cannot be added, where LangChain's ``+`` raises.

    ``lc_error`` names LangChain's exception class for the same pair.
    """

    def __init__(self, reason: str, lc_error: str = "ValueError") -> None:
        self.reason = reason
        self.lc_error = lc_error
        super().__init__(reason)


__all__ = [
    "FULL",
    "BadRequest",
    "ChunkMergeError",
    "InvalidMessage",
    "ReducerError",
    "ThreadfoldError",
    "ClientClosed",
    "Conflict",
    "Gone",
    "HeadTooLarge",
    "InvalidInput",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PoisonEntry",
    "RedisFull",
    "RequestError",
    "RequestTimeout",
    "ServerError",
    "TooManySubscribers",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "VersionNotReached",
    "classes",
    "kind_of",
    "never_written",
]


class ClientClosed(ThreadfoldError, RuntimeError):
    """Raised by a call on a client that was closed."""


class RequestError(ThreadfoldError):
    """A call the service refused or could not answer.

    ``status`` is the HTTP status the API answers for it (an HTTP client's exception
    holds the status it received: a proxy's 502 is an :class:`Unavailable` too), ``code``
    its error code, ``field`` the argument or body field at fault
    (``messages[0].tool_call_id``) and ``pointer`` the same as a JSON pointer
    (``/messages/0/tool_call_id``); ``details`` holds the error's further keys (the API
    writes them beside the others); ``retry_after`` is the seconds to wait before a
    retry, when one may succeed (the API's ``Retry-After``).
    """

    status_code: ClassVar[int | None] = None
    error_code: ClassVar[str] = "error"
    #: Seconds before a retry may succeed, for the errors a retry can cure.
    retry_seconds: ClassVar[float | None] = None
    #: Headers the API answers this error with, besides Retry-After.
    extra_headers: ClassVar[Mapping[str, str]] = {}
    #: The further keys this error's body may carry (``details``), each with what it
    #: says: the API's OpenAPI document is built from them.
    detail_keys: ClassVar[Mapping[str, str]] = {}

    def __init__(  # noqa: PLR0913  # an error's fields, by name, as the API's JSON error has them
        self,
        message: str,
        *,
        field: str | None = None,
        details: Mapping[str, Any] | None = None,
        status: int | EllipsisType | None = ...,
        code: str | None = None,
        pointer: str | None = None,
        retry_after: float | EllipsisType | None = ...,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = self.status_code if status is ... else status
        self.code = code or self.error_code
        self.field = field
        if pointer is None and field is not None:
            # Here, not at the top: core.depth raises this module's InvalidMessage.
            from threadfold.core.depth import pointer as field_pointer  # noqa: PLC0415

            pointer = field_pointer(field)
        self.pointer = pointer
        self.retry_after = self.retry_seconds if retry_after is ... else retry_after
        self.details = dict(details or {})

    def body(self) -> dict[str, Any]:
        """The API's JSON error: ``{"error": {status, code, message, field, pointer, ...}}``."""
        error: dict[str, Any] = {"status": self.status, "code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
            error["pointer"] = self.pointer
        error.update(self.details)
        return {"error": error}

    def headers(self) -> dict[str, str]:
        """The headers the API answers with: Retry-After (whole seconds) and the class's."""
        found = dict(self.extra_headers)
        if self.retry_after is not None:
            found["Retry-After"] = str(max(1, math.ceil(self.retry_after)))  # whole, never 0
        return found

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status={self.status}, field={self.field!r})"
        )


class InvalidInput(RequestError, ValueError):
    """A well-formed request that is not valid: a message LangChain would not accept, an
    id that is not one, a page anchor the thread does not hold (422)."""

    status_code, error_code = 422, "invalid"

    def under(self, prefix: str) -> InvalidInput:
        """The same refusal, located under ``prefix`` (``bulks[2].``): a fault of one
        bulk of a stream named as the stream's."""
        field = f"{prefix}{self.field}" if self.field else prefix.rstrip(".")
        text = f"{prefix}{self}" if self.field else f"{field}: {self}"
        return type(self)(text, field=field)


class BadRequest(InvalidInput):
    """A body that is not JSON, or a malformed argument or query parameter (400)."""

    status_code, error_code = 400, "bad_request"


class PayloadTooLarge(InvalidInput):
    """A body over the configured size (413; the HTTP API's alone)."""

    status_code, error_code = 413, "payload_too_large"


class UnsupportedMediaType(InvalidInput):
    """A body not sent as ``application/json`` (415; the HTTP API's alone)."""

    status_code, error_code = 415, "unsupported_media_type"


class HeadTooLarge(InvalidInput):
    """Too many headers, or a request head over the size limit (431; answered by the
    server's protocol before the application sees the request)."""

    status_code, error_code = 431, "request_header_fields_too_large"


class Unauthorized(RequestError, PermissionError):
    """No, or an unknown, API key (401)."""

    status_code, error_code = 401, "unauthorized"
    extra_headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": 'Bearer realm="threadfold"'}


class NotFound(RequestError, LookupError):
    """The thread was never written, or was deleted; or no such route (404). Time travel
    to before the thread's birth says where it begins (``first_version``)."""

    status_code, error_code = 404, "not_found"
    detail_keys: ClassVar[Mapping[str, str]] = {
        "first_version": "for an at_version before it: the thread's first version as it is"
    }

    @property
    def first_version(self) -> str | None:
        return _text(self.details.get("first_version"))


class MethodNotAllowed(RequestError):
    """A route asked with a method it does not take (405; the HTTP API's alone)."""

    status_code, error_code = 405, "method_not_allowed"


class RequestTimeout(RequestError):
    """A request's head or body did not arrive within its time limit (408; answered by
    the server's protocol)."""

    status_code, error_code = 408, "request_timeout"


class Conflict(RequestError):
    """The request conflicts with the thread's state (409)."""

    status_code, error_code = 409, "conflict"


class VersionNotReached(Conflict, TimeoutError):
    """``min_version`` (or ``wait_for``'s version) was not reached in time; ``version``
    is where the thread stands."""

    error_code = "version_not_reached"
    retry_seconds = 1.0
    detail_keys: ClassVar[Mapping[str, str]] = {"version": "the version the thread stands at"}

    @property
    def version(self) -> str | None:
        return _text(self.details.get("version"))


class PoisonEntry(Conflict):
    """Time travel reaches a log entry that cannot be decoded or folded; ``entry`` names
    it (the live thread is held before it too, until an operator skips it)."""

    error_code = "poison_entry"
    detail_keys: ClassVar[Mapping[str, str]] = {
        "entry": "the log entry that cannot be decoded or folded"
    }

    @property
    def entry(self) -> str | None:
        return _text(self.details.get("entry"))


class Gone(RequestError, LookupError):
    """Time travel needs history that retention has dropped (410); ``oldest`` is the
    oldest version still served."""

    status_code, error_code = 410, "gone"
    detail_keys: ClassVar[Mapping[str, str]] = {
        "oldest_version": "the oldest version time travel serves (the live state's)"
    }

    @property
    def oldest(self) -> str | None:
        return _text(self.details.get("oldest_version"))


class RateLimited(RequestError):
    """The tenant is over its share of a process's appends (``THREADFOLD_TENANT_RATE``):
    nothing of the call was written; retry after ``retry_after`` seconds (429)."""

    status_code, error_code = 429, "rate_limited"


class Unavailable(RequestError):
    """Redis or the broker cannot be reached, or a read kept meeting a racing trim:
    retrying later may succeed (503)."""

    status_code, error_code = 503, "unavailable"
    retry_seconds = 1.0
    detail_keys: ClassVar[Mapping[str, str]] = {
        "reasons": "GET /readyz: the codes of what is not ready"
    }


#: What a refused write says, to a client and in a log alike.
FULL: Final = (
    "Redis is full (over maxmemory) and refuses writes until memory is freed or maxmemory "
    "is raised; retry later with the same delta_id"
)


class RedisFull(Unavailable):
    """Redis is over ``maxmemory`` and refuses writes. Retrying later may succeed, once
    memory is freed or the limit raised: an operator's act, not a blip, so callers are
    asked to wait longer than after a lost connection."""

    error_code = "redis_full"
    retry_seconds = 5.0

    def __init__(self, message: str = FULL, **given: Any) -> None:
        super().__init__(message, **given)


class NotReplicated(Unavailable):
    """A write made on the primary that too few replicas confirmed in time (durability
    'replica'): in doubt across a failover; a retry with its ``delta_id`` is safe."""

    error_code = "not_replicated"
    detail_keys: ClassVar[Mapping[str, str]] = {
        "replicas": "replicas that confirmed the write", "wanted": "replicas waited for"}


class TooManySubscribers(Unavailable):
    """This API process already serves its cap of event streams (503)."""

    error_code = "too_many_subscribers"
    retry_seconds = 5.0


class ServerError(RequestError):
    """The service failed (500 or another 5xx); the API logs the cause, never sends it."""

    status_code, error_code = 500, "internal_error"


def never_written(thread_id: str) -> NotFound:
    """The refusal of any operation on a thread that does not exist, worded once."""
    return NotFound(f"thread {thread_id!r} has never been written", field="thread_id")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def classes(root: type[RequestError] | None = None) -> list[type[RequestError]]:
    """Every class of the tree under ``root`` (all of them by default), depth first."""
    return _classes(root or RequestError)


def _classes(root: type[RequestError]) -> list[type[RequestError]]:
    found = [root]
    for sub in root.__subclasses__():
        found += _classes(sub)
    return found


def kind_of(status: int, code: str) -> type[RequestError]:
    """The class of an error answered with ``status`` and ``code``: the class of that
    code (the tree is the only table); for an answer not ours (a proxy's page, a status
    we never send), the nearest by status."""
    classes = _classes(RequestError)
    for cls in classes:
        if cls.error_code == code and cls.status_code == status:
            return cls
    for cls in classes:  # depth first: the first of a status is the root of its branch
        if cls.status_code == status:
            return cls
    if status == 403:
        return Unauthorized
    if status in (502, 504):
        return Unavailable
    return ServerError if status >= 500 else RequestError
